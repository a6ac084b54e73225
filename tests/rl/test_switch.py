"""The switches between acting and speaking (:mod:`lq.rl.switch`): every k-th turn, and k from the demonstrations'
utterances per action."""

import pytest
import torch

from lq.data import Demonstration
from lq.rl.switch import HardcodedSwitch, RatioSwitch, utterance_action_ratio
from tests.samples import demo_json


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
