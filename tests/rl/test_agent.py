import pytest
import torch

from lq.data import Demonstration
from lq.models.agent import SwitchAgent
from lq.models.poly_encoder import PolyEncoder, TextBatcher
from lq.models.pretrained import load_tokenizer
from lq.rl.losses import switch_a2c_loss
from lq.rl.switch import HardcodedSwitch, RatioSwitch, utterance_action_ratio
from tests.samples import demo_json, tiny_agent_config, tiny_encoder_spec

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


def test_the_switch_masks_the_other_heads_gradient(batcher):
    torch.manual_seed(0)
    agent = SwitchAgent.build(ACTIONS, UTTERANCES, batcher, None, CONFIG, dim=8)
    ids, mask = batcher.contexts(["one context", "another context", "a third one"])
    out = agent(ids, mask, agent.initial_state(3))
    a, u, v = out.action_logits, out.speech_logits, out.value
    spoke_only = torch.tensor([False, False, False])
    out = switch_a2c_loss(
        a,
        u,
        a.log_softmax(-1)[:, 0],
        u.log_softmax(-1)[:, 1],
        spoke_only,
        torch.ones(3, 3),
        torch.zeros(3, 4),
        v,
        torch.ones(3),
    )
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


def test_switches():
    steps = torch.arange(7)
    assert HardcodedSwitch(3).acts(steps, torch.zeros(7)).tolist() == [False, False, True, False, False, True, False]
    demo = Demonstration.from_json(demo_json(6))  # self: 2 utterances and 1 action
    assert utterance_action_ratio(demo) == 2.0
    switch = RatioSwitch([demo, Demonstration.from_json(demo_json(10))])  # ratios 2 and 4 -> average 3
    assert switch.average_k == 3 and RatioSwitch.k_for(demo, 3) == 2
    since = torch.tensor([0, 1, 2, 3])
    assert switch.acts(steps[:4], since).tolist() == [False, False, False, True]
    assert switch.acts(steps[:4], since, torch.tensor([2, 2, 2, 2])).tolist() == [False, False, True, True]
    with pytest.raises(ValueError):
        HardcodedSwitch(0)


def test_exact_match_marks_a_candidates_content_words_in_the_context(batcher):
    from lq.models.agent import ExactMatch, content_piece_ids

    tok = batcher.tokenizer
    pieces = content_piece_ids(["put the sword in the chest", "hug knight"], tok)
    sword, chest, the = (tok.convert_tokens_to_ids(w) for w in ("sword", "chest", "the"))
    assert set(pieces[0].tolist()) - {-1} == {tok.convert_tokens_to_ids("put"), sword, chest}  # no function words
    ids, _ = batcher.contexts(["_short_motivation the sword belongs in the chest"])
    match = ExactMatch(pieces)(ids)
    tokens = ids[0].tolist()
    assert match.shape == (1, 2, len(tokens))
    assert match[0, 0, tokens.index(sword)] == 1 and match[0, 0, tokens.index(chest)] == 1
    assert match[0, 0, tokens.index(the)] == 0 and match[0, 1].sum() == 0  # "the" is no match; nothing of "hug knight"
    assert match.sum() == 2
    # ids beyond every candidate's pieces (the end of the vocabulary) match nothing
    assert ExactMatch(pieces)(torch.tensor([[len(tok) - 1, sword]])).tolist() == [[[0.0, 1.0], [0.0, 0.0]]]
