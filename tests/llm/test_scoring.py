"""An LLM head's candidate scores (:func:`lq.llm.scoring.score_candidates`): the prompt's cache shared by batched
candidates gives each candidate the log-likelihood of scoring ``prompt + candidate`` alone."""

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from lq.llm.scoring import PromptCache, score_candidates


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)  # fmt: skip
    return LlamaForCausalLM(config).eval()


def _alone(model, prompt, candidate) -> float:
    """The candidate's log-likelihood from one forward pass over the prompt and it, nothing shared."""
    ids = torch.tensor([prompt + candidate])
    with torch.no_grad():
        log_p = model(input_ids=ids).logits[0].float().log_softmax(-1)
    return sum(log_p[len(prompt) - 1 + j, t].item() for j, t in enumerate(candidate))


def test_shared_prefix_scores_equal_each_candidate_scored_alone(model):
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(1, 64, (11,), generator=gen).tolist()
    candidates = [torch.randint(1, 64, (n,), generator=gen).tolist() for n in (1, 4, 2, 7, 3, 1, 5)]
    expected = torch.tensor([_alone(model, prompt, c) for c in candidates])
    for batch_size in (1, 3, 32):  # batches of one, ragged, all at once: padding changes nothing
        scores = score_candidates(model, prompt, candidates, batch_size=batch_size)
        assert torch.allclose(scores.total, expected, atol=1e-5), (batch_size, scores.total, expected)
        assert scores.tokens.tolist() == [1, 4, 2, 7, 3, 1, 5]
    assert torch.allclose(scores.mean, expected / torch.tensor([1.0, 4, 2, 7, 3, 1, 5]), atol=1e-6)


def test_empty_prompts_and_candidates_are_refused(model):
    with pytest.raises(ValueError, match="the prompt has no token"):
        score_candidates(model, [], [[1]])
    with pytest.raises(ValueError, match=r"candidates \[1\] have no token"):
        score_candidates(model, [1, 2], [[3], []])


def test_prompts_run_from_where_they_part_from_a_kept_one_score_as_if_run_whole(model):
    gen = torch.Generator().manual_seed(2)
    scene, other = (torch.randint(1, 64, (n,), generator=gen).tolist() for n in (9, 6))
    turn = torch.randint(1, 64, (4,), generator=gen).tolist()
    candidates = [torch.randint(1, 64, (n,), generator=gen).tolist() for n in (2, 5, 1)]
    prompts = PromptCache(size=2)
    # a first prompt, one that goes on from it, one that parts from it early, the first again, then the second
    # after the third pushed the first out (size 2): each scores as if run whole
    for prompt in (scene, scene + turn, scene[:3] + other, scene, scene + turn + turn):
        expected = torch.tensor([_alone(model, prompt, c) for c in candidates])
        scores = score_candidates(model, prompt, candidates, batch_size=2, prompts=prompts)
        assert torch.allclose(scores.total, expected, atol=1e-5), (prompt, scores.total, expected)
    # reused: 9 of scene + turn, 3 of the parted one, 8 of scene again (from scene + turn: its last token is run,
    # whose logits are the first candidate token's), then 9 of scene + turn + turn (scene + turn was pushed out)
    assert prompts.reused == 9 + 3 + 8 + 9
