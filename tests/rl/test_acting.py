import torch

from lq.rl.acting import Actor
from lq.rl.losses import masked
from lq.rl.switch import HardcodedSwitch


def test_sampling_follows_the_softmax_and_never_picks_a_masked_candidate():
    actor = Actor("random", None, ["a", "b", "c", "d"], ["x"], HardcodedSwitch(3), temperature=0.5)
    logits = torch.tensor([[0.0, 1.0, 2.0, 9.0], [3.0, 0.0, 0.0, 0.0]])
    logits = masked(logits, torch.tensor([[True, True, True, False], [True, True, True, True]]))
    torch.manual_seed(0)
    draws = torch.stack([actor._choose(logits, greedy=False) for _ in range(20_000)])
    want = (logits / 0.5).softmax(-1)
    for row in range(2):
        freq = torch.bincount(draws[:, row], minlength=4).float() / len(draws)
        assert torch.allclose(freq, want[row], atol=0.01), (freq, want[row])
    assert not (draws[:, 0] == 3).any()  # masked: probability exactly 0
    assert actor._choose(logits, greedy=True).tolist() == [2, 0]
