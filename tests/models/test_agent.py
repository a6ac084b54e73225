import pytest
import torch

from lq.models.agent import SwitchAgent
from lq.models.poly_encoder import PolyEncoder, TextBatcher
from lq.models.pretrained import load_tokenizer
from lq.rl.a2c import TermInputs, objective
from tests.samples import a2c_settings, one_env_rollout, tiny_agent_config, tiny_encoder_spec

TINY = tiny_encoder_spec()
CONFIG = tiny_agent_config()
ACTIONS = ["get sword", "hug knight", "hit knight"]
UTTERANCES = ["Hello there.", "Give me the egg.", "Farewell.", "I am a dragon."]


@pytest.fixture(scope="module")
def batcher():
    return TextBatcher(load_tokenizer(), 64, 16)


@pytest.mark.parametrize("pretrained", [False, True])
def test_forward_shapes_and_what_trains(batcher, pretrained):
    torch.manual_seed(0)
    poly = PolyEncoder.from_spec(TINY, n_codes=2).eval() if pretrained else None
    agent = SwitchAgent.build(ACTIONS, UTTERANCES, batcher, poly, CONFIG, dim=8).eval()  # no dropout
    ids, mask = batcher.contexts(["You are in a lair.", "A knight is here. _partner_say Hello."])
    out = agent(ids, mask, agent.initial_state(2))
    a, u, v, hidden = out.action_logits, out.speech_logits, out.value, out.hidden
    assert a.shape == (2, 3) and u.shape == (2, 4) and v.shape == (2,) and hidden[0].shape == (2, 16)
    assert torch.allclose(agent.value(ids, mask), v)
    acted = torch.tensor([True, False])  # each head scores only its own rows
    split = agent(ids, mask, agent.initial_state(2), acted)
    assert torch.allclose(split.action_logits[0], a[0], atol=1e-5) and not split.action_logits[1].any()
    assert torch.allclose(split.speech_logits[1], u[1], atol=1e-5) and not split.speech_logits[0].any()
    base_trains = any(p.requires_grad for p in agent.encoder.base.parameters())
    assert base_trains is (not pretrained)  # pretrained: frozen with appended layers; scratch: all trains
    if pretrained:
        assert agent.encoder.appended is not None and all(p.requires_grad for p in agent.encoder.appended.parameters())


def test_a_narrower_appended_width_projects_the_frozen_states_first(batcher):
    """``appended_width`` (the tiny profile's 128 for MiniLM's 384): the frozen states pass a trained projection, and
    the appended layers and everything after them are that wide; the base stays frozen and reads its lines once."""
    from dataclasses import replace

    torch.manual_seed(0)
    poly = PolyEncoder.from_spec(TINY, n_codes=2).eval()  # 32 wide
    agent = SwitchAgent.build(ACTIONS, UTTERANCES, batcher, poly, replace(CONFIG, appended_width=16), dim=8)
    encoder = agent.encoder
    assert (
        encoder.hidden_size == 16 and encoder.project.weight.shape == (16, 32) and encoder.project.weight.requires_grad
    )
    assert encoder.appended.layers[0].linear1.in_features == 16
    assert not any(p.requires_grad for p in encoder.base.parameters())
    ids, mask = batcher.contexts(["You are in a lair.", "A knight is here. _partner_say Hello."])
    out = agent(ids, mask, agent.initial_state(2))
    out.speech_logits.sum().backward()
    assert encoder.project.weight.grad is not None and encoder.project.weight.grad.abs().sum() > 0
    same = SwitchAgent.build(ACTIONS, UTTERANCES, batcher, poly, replace(CONFIG, appended_width=32), dim=8)
    assert same.encoder.project is None  # the encoder's own width: no projection (the paper's)


def test_the_switch_masks_the_other_heads_gradient(batcher):
    torch.manual_seed(0)
    agent = SwitchAgent.build(ACTIONS, UTTERANCES, batcher, None, CONFIG, dim=8)
    ids, mask = batcher.contexts(["one context", "another context", "a third one"])
    out = agent(ids, mask, agent.initial_state(3))
    a, u, v = out.action_logits, out.speech_logits, out.value
    spoke_only = torch.tensor([False, False, False])
    rollout = one_env_rollout(
        action_logits=a,
        speech_logits=u,
        action_log_probs=a.log_softmax(-1)[:, 0],
        speech_log_probs=u.log_softmax(-1)[:, 1],
        acted=spoke_only,
        valid_actions=torch.ones(3, 3),
        valid_utterances=torch.zeros(3, 4),
        values=v,
    )
    out = objective(TermInputs(rollout, torch.ones(3), a2c_settings()))
    (out.total - 0.5 * out.value).backward()  # every policy term; the critic's own term aside
    action_grads = [
        p.grad
        for p in [
            *agent.action_head.parameters(),
            *agent.action_gru.parameters(),
            *agent.actions.project.parameters(),
            *agent.action_scorer.parameters(),
        ]
    ]
    assert all(g is None or g.abs().sum() == 0 for g in action_grads)
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in agent.speech_head.parameters())


def test_exact_match_marks_a_candidates_content_words_in_the_context(batcher):
    from lq.models.agent import ExactMatch, content_piece_ids

    tok = batcher.tokenizer
    pieces = content_piece_ids(["put the sword in the chest", "hug knight"], tok)
    sword, chest, the = (tok.convert_tokens_to_ids(w) for w in ("sword", "chest", "the"))
    assert set(pieces[0].tolist()) - {-1} == {tok.convert_tokens_to_ids("put"), sword, chest}  # no function words
    ids, _ = batcher.contexts(["_short_motivation the sword belongs in the chest"])
    match = ExactMatch(pieces)(ids)  # [candidates, contexts, tokens]
    tokens = ids[0].tolist()
    assert match.shape == (2, 1, len(tokens))
    assert match[0, 0, tokens.index(sword)] == 1 and match[0, 0, tokens.index(chest)] == 1
    assert match[0, 0, tokens.index(the)] == 0 and match[1, 0].sum() == 0  # "the" is no match; nothing of "hug knight"
    assert match.sum() == 2
    # ids beyond every candidate's pieces (the end of the vocabulary) match nothing
    assert ExactMatch(pieces)(torch.tensor([[len(tok) - 1, sword]])).tolist() == [[[0.0, 1.0]], [[0.0, 0.0]]]


def test_match_counts_pool_a_candidates_words_found_in_the_context_by_their_weight(batcher):
    from lq.models.agent import MatchCounts, content_piece_ids

    tok = batcher.tokenizer
    pieces = content_piece_ids(["Give me the golden egg.", "Hello there.", "the"], tok)
    ids, mask = batcher.contexts(["_short_motivation I want the golden egg back"])
    tokens = ids[0].tolist()
    golden, egg = tokens.index(tok.convert_tokens_to_ids("golden")), tokens.index(tok.convert_tokens_to_ids("egg"))
    weights = torch.zeros(ids.shape, dtype=torch.float)
    weights[0, golden], weights[0, egg] = 1.0, 0.5
    counts = MatchCounts(pieces)(ids, weights)  # [contexts, candidates]
    # "give golden egg": 1 + 0.5 of its 3 content pieces (over sqrt 3); nothing of "hello there"; "the" has none
    assert counts.shape == (1, 3) and counts[0].tolist() == pytest.approx([1.5 / 3**0.5, 0.0, 0.0])
    assert MatchCounts(pieces)(ids, torch.ones_like(weights) * mask)[0, 0] == pytest.approx(2 / 3**0.5)


@pytest.mark.parametrize("codes", [0, 3])
def test_candidate_scorer_computes_its_documented_score(codes):
    """score_bn = sum_t a_bnt (c_n.v_bt + g(s_bt)) + c_n.q_b, a_bnt = softmax_t(c_n.k_bt / sqrt(d) + w m_bnt) over
    unpadded tokens (over the codes' summaries of them with codes), written out per context and candidate."""
    from lq.models.agent import CandidateScorer

    torch.manual_seed(0)
    scorer = CandidateScorer(hidden=6, dim=4, codes=codes)
    states, query, candidates = torch.randn(2, 5, 6), torch.randn(2, 4), torch.randn(3, 4)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    match = (torch.rand(3, 2, 5) > 0.5).float()
    got = scorer(states, mask, query, candidates, match)
    for b in range(2):
        tokens = states[b, : int(mask[b].sum())]
        if codes:
            tokens = (scorer.codes @ tokens.T).softmax(-1) @ tokens
        for n in range(3):
            logits = scorer.keys(tokens) @ candidates[n] / 2.0
            if not codes:
                logits = logits + scorer.match_weight * match[n, b, : len(tokens)]
            a = logits.softmax(-1)
            want = (a * (scorer.values(tokens) @ candidates[n] + scorer.worth(tokens).squeeze(-1))).sum() + candidates[
                n
            ] @ query[b]
            assert torch.allclose(got[b, n], want, atol=1e-5)


def test_a_frozen_encoder_reads_each_line_once(batcher):
    """The frozen base encodes [CLS] line [SEP] per line (kept: the next step's lines cost nothing); the appended layers
    read the lines together. Without lines a context is one line: its tokens read together."""
    from lq.models.encoder import token_states

    torch.manual_seed(0)
    poly = PolyEncoder.from_spec(TINY, n_codes=2).eval()
    agent = SwitchAgent.build(ACTIONS, UTTERANCES, batcher, poly, CONFIG, dim=8).eval()
    encoder, tok = agent.encoder, batcher.tokenizer
    texts = ["_self_name dragon\n_short_motivation Get the egg.\n_partner_say Hello.", "_self_name knight"]
    ids, mask, lines = batcher.contexts_with_lines(texts)
    calls = []
    encoder.base.register_forward_hook(lambda module, args, kwargs_out: calls.append(1))
    states = encoder.frozen_states(ids, mask, lines)
    assert len(calls) == 1  # every line of the batch in one pass
    for row, row_lines in enumerate(lines):
        at = 1
        for line in row_lines:
            alone = torch.tensor([[tok.cls_token_id, *line, tok.sep_token_id]])
            want = token_states(encoder.base, alone, torch.ones_like(alone))[0, 1:-1]
            assert torch.allclose(states[row, at : at + len(line)], want, atol=1e-5)
            at += len(line)
        assert at + 1 == int(mask[row].sum()) and not states[row, at + 1 :].any()  # [SEP], then padding
    calls.clear()  # (the references above ran the base too)
    again = encoder.frozen_states(ids[1:], mask[1:], lines[1:])
    assert not calls and torch.equal(again[0, : int(mask[1].sum())], states[1, : int(mask[1].sum())])
    whole = encoder.frozen_states(ids[:1], mask[:1], None)
    n = int(mask[0].sum())  # its tokens read together (the marks are the rows' shared [CLS] and [SEP] states)
    assert torch.allclose(whole[0, 1 : n - 1], token_states(encoder.base, ids[:1], mask[:1])[0, 1 : n - 1], atol=1e-5)
    calls.clear()
    agent.load_state_dict(agent.state_dict())  # new weights: the kept lines are forgotten
    encoder.frozen_states(ids, mask, lines)
    assert len(calls) == 1


def test_a_pretrained_agent_reads_its_spaces_vectors_from_the_store(batcher, tmp_path):
    torch.manual_seed(0)
    poly = PolyEncoder.from_spec(TINY, n_codes=2).eval()
    first = SwitchAgent.build(ACTIONS, UTTERANCES, batcher, poly, CONFIG, dim=8, store_dir=tmp_path)
    for space, texts in (("actions", ACTIONS), ("utterances", UTTERANCES)):
        [store] = tmp_path.glob(f"agent-{space}-*.pt")  # one file per key
        saved = torch.load(store)
        assert saved["embeddings"].shape[0] == len(texts)
        torch.save({"key": saved["key"], "embeddings": torch.zeros_like(saved["embeddings"])}, store)
    again = SwitchAgent.build(ACTIONS, UTTERANCES, batcher, poly, CONFIG, dim=8, store_dir=tmp_path)
    assert first.actions.frozen.any() and not again.actions.frozen.any()  # read back, not encoded again
    assert not again.utterances.frozen.any()
    scratch_dir = tmp_path / "scratch"
    SwitchAgent.build(ACTIONS, UTTERANCES, batcher, None, CONFIG, dim=8, store_dir=scratch_dir)
    assert not scratch_dir.exists()  # a scratch agent's candidates train with it: nothing to keep


def test_a_full_line_cache_lets_go_of_the_least_recently_read_lines(batcher):
    """Past ``max_cached_tokens`` the lines read longest ago go first, not those kept first: a line read again stays,
    and so do the lines just read."""
    torch.manual_seed(0)
    poly = PolyEncoder.from_spec(TINY, n_codes=2).eval()
    encoder = SwitchAgent.build(ACTIONS, UTTERANCES, batcher, poly, CONFIG, dim=8).eval().encoder
    read, key = {}, {}
    for name, text in (("first", "the first line"), ("second", "a second line"), ("third", "the third line")):
        read[name] = batcher.contexts_with_lines([text])
        [[line]] = read[name][2]
        key[name] = tuple(line)
    assert len(key["first"]) == len(key["second"]) == len(key["third"])
    encoder.max_cached_tokens = 2 + 2 * len(key["first"])  # the empty line's two marks and two lines
    for name in ("first", "second", "first"):
        encoder.frozen_states(*read[name])
    assert set(encoder._line_states) == {(), key["first"], key["second"]}
    encoder.frozen_states(*read["third"])  # a line too many: the second goes (the first was read since)
    assert set(encoder._line_states) == {(), key["first"], key["third"]}
    assert encoder._cached_tokens == 2 + len(key["first"]) + len(key["third"])
    encoder.max_cached_tokens = 1  # a batch larger than the whole cache keeps its own lines until the next one
    encoder.frozen_states(*read["second"])
    assert set(encoder._line_states) == {(), key["second"]} and encoder._cached_tokens == 2 + len(key["second"])
