"""How the partner chooses between acting and speaking, learned from the demonstrations.

The poly-encoder partner scores its best utterance (among thousands) against its best valid action (among a
handful): with no bias it almost never acts, and never gives the agent what it was persuaded to give. Its action bias
makes it act on a share of the training demonstrations' partner turns (each turn as the partner saw it,
:func:`lq.envs.partner.bias_for_share`). Which share: with held-out demonstrations (the validation split), the one
whose partner completes as many of their goals as their own partners did, the self turns replayed through the
environment (:func:`lq.envs.replay.replay_demonstrations`); the shares tried start at the demonstrations' own share of
acting turns and go up by :data:`SHARE_STEPS`, and of equally close ones the smallest wins. Without held-out
demonstrations it is the demonstrations' own share. A partner that acts on the demonstrations' share of its turns
but at the wrong ones completes fewer goals than they did (the demonstrations' partners acted when asked); matching
the completions on demonstrations it was not trained on asks for a partner whose acts follow what it heard, not for
one that acts more on any turn (see ``docs/results.md``; why lq's partner needs a bias: docs/deviations.md).

Before the bias, how much the partner listens (:class:`lq.envs.partner.PolyEncoderPartner`'s ``listen_weight``: a
valid action's bonus per content word it shares with what the agent said last) is fit on the same turns: of
:data:`LISTEN_STEPS` (multiples of the spread of its scores of one turn's valid actions), the weight at which its
best valid action is the demonstrated one at the most of their partners' action turns, the smallest of equally good
ones.

The fit also replays the training demonstrations' self turns with the calibrated partner and reports how many goals
it completes beside the demonstrations' own partners.

The result is kept beside the partner's checkpoint (``candidates/partner-calibration.pt``) while the partner's
weights and spaces, the DM's, and the demonstrations are the same.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path

import torch

from lq.data.io import atomic_open
from lq.envs.dungeon_master import DungeonMaster
from lq.envs.episode import QuestInstance
from lq.envs.partner import PolyEncoderPartner, bias_for_share
from lq.envs.protocol import PROTOCOLS
from lq.envs.quest_env import QuestEnv
from lq.envs.replay import DemoTurn, by_whom, demonstration_turns, replay_demonstrations
from lq.models.poly_encoder import stores_beside

PAPER = PROTOCOLS["paper"]  # replays run as long as their demonstrations: the protocol only decides when they stop


CALIBRATIONS = ("share", "completions")  # without held-out demonstrations, and with them (see the module)
SHARE_STEPS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0)  # multiples of the demonstrations' share of acting partner turns
LISTEN_STEPS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # multiples of the spread of the partner's valid action scores


def fit_listening(partner: PolyEncoderPartner, turns: Sequence[DemoTurn]) -> dict[str, float]:
    """Set ``partner.listen_weight`` from the demonstrations' partner turns (see the module); returns the share of
    their action turns at which the partner's best valid action is the demonstrated one, without and with it."""
    partner.listen_weight = 0.0
    acted = [t for t in turns if t.kind == "action"]
    if not acted:
        return {"listen_weight": 0.0}
    scale = partner.action_spread(acted)
    hits = {}
    for k in LISTEN_STEPS:
        partner.listen_weight = k * scale
        best = partner.choices_at(acted)[1]
        hits[k] = sum(b is not None and b[1] == t.text for b, t in zip(best, acted, strict=True)) / len(acted)
    chosen = max(LISTEN_STEPS, key=lambda k: (hits[k], -k))
    partner.listen_weight = chosen * scale
    return {"listen_weight": partner.listen_weight, "action_hits": hits[0.0], "action_hits_listening": hits[chosen]}


def completions(env: QuestEnv, partner: str) -> float:
    """The share of ``env``'s demonstrations whose goal the partner completes, the self turns replayed, with their
    own partners' turns (``"scripted"``) or with the environment's partner (``"model"``)."""
    return by_whom(replay_demonstrations(env, partner), "partner")


def fit_action_bias(
    partner: PolyEncoderPartner,
    dm: DungeonMaster,
    train: Sequence[QuestInstance],
    actions: Sequence[str],
    held_out: Sequence[QuestInstance] = (),
    batch_size: int = 64,
) -> tuple[float, dict[str, float]]:
    """The partner's action bias fit on the demonstrations (see the module); returns it and what the fit saw: the
    training demonstrations' partner action share, the share chosen, and the partner completions of the demonstrations
    and of the partner at the bias (on the held-out ones, and on the training ones)."""
    turns = [t for inst in train for t in demonstration_turns(inst, side="partner") if t.valid_actions]
    share = sum(t.kind == "action" for t in turns) / max(len(turns), 1)
    listening = fit_listening(partner, turns)
    gaps = partner.choices_at(turns)[0]

    def env_of(instances: Sequence[QuestInstance]) -> QuestEnv:
        return QuestEnv(list(instances), partner, dm, list(actions), batch_size, auto_reset=False, protocol=PAPER)

    chosen, fit = share, {"demonstration_action_share": share, **listening}
    if held_out:
        env = env_of(held_out)
        target = completions(env, "scripted")
        best = None
        for k in SHARE_STEPS:
            tried = min(share * k, 0.95)
            partner.action_bias = bias_for_share(gaps, tried)
            got = completions(env, "model")
            fit[f"held_out_partner_completions_at_{tried:.3f}"] = got
            error = abs(math.log((got + 1e-3) / (target + 1e-3)))
            if best is None or error < best - 1e-9:
                best, chosen = error, tried
        fit["held_out_demonstration_partner_completions"] = target
    partner.action_bias = bias_for_share(gaps, chosen)
    env = env_of(train)
    fit |= {
        "action_share": chosen,
        "demonstration_partner_completions": completions(env, "scripted"),
        "partner_completions": completions(env, "model"),
        "action_bias": partner.action_bias,
    }
    return partner.action_bias, fit


def calibrate_partner(
    partner: PolyEncoderPartner,
    dm: DungeonMaster,
    train: Sequence[QuestInstance],
    actions: Sequence[str],
    checkpoint: str | Path,
    held_out: Sequence[QuestInstance] = (),
) -> dict[str, float]:
    """Set the partner's listening and action bias (:func:`fit_action_bias`), read from beside its checkpoint when the
    partner, the DM and the demonstrations are those it was fit for; returns what the fit saw."""
    digest = hashlib.sha256(f"context length {partner.batcher.context_length}, listening {LISTEN_STEPS}\n".encode())
    for cache in (partner.utterances, partner.actions, dm.utterances):
        digest.update(cache.key().encode())
    for inst in train:
        digest.update(f"{inst.quest.quest_id}\t{inst.self_id}\t{inst.partner_id}\t{inst.demo.to_json()}\n".encode())
    if held_out:
        digest.update(f"held out, shares {SHARE_STEPS}\n".encode())
        for inst in held_out:
            digest.update(f"{inst.quest.quest_id}\t{inst.self_id}\t{inst.partner_id}\t{inst.demo.to_json()}\n".encode())
    key = digest.hexdigest()
    store = stores_beside(checkpoint) / ("partner-calibration-completions.pt" if held_out else "partner-calibration.pt")
    if store.exists():
        saved = torch.load(store, map_location="cpu", weights_only=True)
        if saved.get("key") == key:
            partner.action_bias = float(saved["fit"]["action_bias"])
            partner.listen_weight = float(saved["fit"]["listen_weight"])
            return saved["fit"]
    _, fit = fit_action_bias(partner, dm, train, actions, held_out)
    store.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(store, "wb") as f:
        torch.save({"key": key, "fit": fit}, f)
    return fit
