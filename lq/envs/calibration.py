"""How the partner chooses between acting and speaking, learned from the training demonstrations.

The poly-encoder partner scores its best utterance (among thousands) against its best valid action (among a
handful): with no bias it almost never acts, and never gives the agent what it was persuaded to give. Its action bias
is the one at which it acts on as many of the training demonstrations' partner turns as their partners did, each turn
as the partner saw it (:func:`lq.envs.partner.bias_for_share`).

The fit also replays the training demonstrations' self turns through the environment with the calibrated partner and
reports how many goals it completes beside the demonstrations' own partners (the demonstrations replayed with their
partner's turns, through the same engine). Fitting the bias to those completions instead was tried on the default data:
the partner then acts on most of its turns (a share of 0.7 to 0.99 of them), giving things away unasked; see
``docs/deviations.md``.

The result is kept beside the partner's checkpoint (``candidates/partner-calibration.pt``) while the partner's
weights and spaces, the DM's, and the training demonstrations are the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import torch

from lq.data.io import atomic_open
from lq.envs.dungeon_master import DungeonMaster
from lq.envs.episode import QuestInstance
from lq.envs.partner import PolyEncoderPartner, bias_for_share
from lq.envs.protocol import PROTOCOLS
from lq.envs.quest_env import QuestEnv
from lq.envs.replay import by_whom, demonstration_turns, replay_demonstrations
from lq.models.poly_encoder import stores_beside


def fit_action_bias(
    partner: PolyEncoderPartner,
    dm: DungeonMaster,
    train: Sequence[QuestInstance],
    actions: Sequence[str],
    batch_size: int = 64,
) -> tuple[float, dict[str, float]]:
    """The partner's action bias fit on the training instances' demonstrations; returns it and what the fit saw: the
    demonstrations' partner action share and partner completions, the partner's completions at the bias."""
    turns = [t for inst in train for t in demonstration_turns(inst, side="partner") if t.valid_actions]
    share = sum(t.kind == "action" for t in turns) / max(len(turns), 1)
    partner.action_bias = bias_for_share(partner.action_gaps(turns), share)
    env = QuestEnv(list(train), partner, dm, list(actions), batch_size, auto_reset=False, protocol=PROTOCOLS["paper"])
    fit = {
        "demonstration_action_share": share,
        "demonstration_partner_completions": by_whom(replay_demonstrations(env, "scripted"), "partner"),
        "partner_completions": by_whom(replay_demonstrations(env, "model"), "partner"),
        "action_bias": partner.action_bias,
    }
    return partner.action_bias, fit


def calibrate_partner(
    partner: PolyEncoderPartner,
    dm: DungeonMaster,
    train: Sequence[QuestInstance],
    actions: Sequence[str],
    checkpoint: str | Path,
) -> dict[str, float]:
    """Set the partner's action bias (:func:`fit_action_bias`), read from beside its checkpoint when the partner, the
    DM and the training demonstrations are those it was fit for; returns what the fit saw."""
    digest = hashlib.sha256(f"context length {partner.batcher.context_length}\n".encode())
    for cache in (partner.utterances, partner.actions, dm.utterances):
        digest.update(cache.key().encode())
    for inst in train:
        digest.update(f"{inst.quest.quest_id}\t{inst.self_id}\t{inst.partner_id}\t{inst.demo.to_json()}\n".encode())
    key = digest.hexdigest()
    store = stores_beside(checkpoint) / "partner-calibration.pt"
    if store.exists():
        saved = torch.load(store, map_location="cpu", weights_only=True)
        if saved.get("key") == key:
            partner.action_bias = float(saved["fit"]["action_bias"])
            return saved["fit"]
    _, fit = fit_action_bias(partner, dm, train, actions)
    store.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(store, "wb") as f:
        torch.save({"key": key, "fit": fit}, f)
    return fit
