"""How the partner chooses between acting and speaking, learned from the demonstrations.

The poly-encoder partner scores its best utterance (among thousands) against its best valid action (among a
handful): with no bias it almost never acts, and never gives the agent what it was persuaded to give. Two things are
fit on the demonstrations: how much it listens (:class:`lq.envs.partner.PolyEncoderPartner`'s ``listen_weight``, a
valid action's bonus per content word it shares with what the agent said last, in multiples :data:`LISTEN_STEPS` of
the spread of its scores of one turn's valid actions), and its action bias, which makes it act on a share of the
training demonstrations' partner turns (each turn as the partner saw it, :func:`lq.envs.partner.bias_for_share`).

Without held-out demonstrations (``share``): the listening at which its best valid action is the demonstrated one at
the most of the training demonstrations' partner action turns (the smallest of equally good ones), and the
demonstrations' own share of acting turns.

With held-out demonstrations (``completions``, the validation split): the listening and the share at which the
partner is closest to the demonstrations' own partners in the two things they show: how many goals they completed, the
self turns replayed through the environment (:func:`lq.envs.replay.replay_demonstrations`), and on what share of
their turns they acted (:func:`fit_error`: the sum of the two log ratios). Goals are counted on the training and
held-out demonstrations together. The shares tried start at the demonstrations' own and go up by
:data:`SHARE_STEPS`; of equally close pairs the least acting, then the least listening, wins. Counting the training
demonstrations too is for the sake of numbers: the 60 validation demonstrations of the default data hold 6 partner
completions, and a partner's count there moved by one between most shares, so that the choice was a coin toss
(docs/results/archive/); the 460 together hold 47. The partner was trained on the training demonstrations' turns but
completes fewer of their goals than their partners did, so their count is no memorised figure.

Why the share is fit too: matched on goals alone, the partner acted on four times the demonstrations' share (58 %
against 14.5 %) at any listening, and over an episode of 30 turns such a partner completes goals whatever it hears:
a speaker of random utterances led it to 0.129 of the test goals, one that names the goal 0.138. Acting on the
demonstrations' share and listening (the most of :data:`LISTEN_STEPS`) it completes 27 of the 47 goals (within the
factor of 2 the environment is held to), and what is said decides: 0.050 against 0.125 (3 seeds, docs/results/archive/).
A partner that acts on the demonstrations' share of turns but at the wrong ones completes fewer goals than they did
(the demonstrations' partners acted when asked); listening buys completions at that share (why lq's partner needs a
bias: docs/deviations.md).

The fit also replays the training (and held-out) demonstrations' self turns with the calibrated partner and reports
how many goals it completes beside the demonstrations' own partners.

The result is kept beside the partner's checkpoint, one file per key (``candidates/partner-calibration-<key>.pt``,
:func:`calibration_key`): the partner's and DM's weights and spaces, the context length they read, and the
demonstrations. It depends on nothing of the agent: an experiment fits it once, as a preparation step, and every
agent stage, table and bundle reads it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path

import torch

from lq.data.io import atomic_open
from lq.data.progress import Progress
from lq.envs.dungeon_master import DungeonMaster
from lq.envs.episode import DemoTurn, QuestInstance
from lq.envs.partner import PolyEncoderPartner, bias_for_share
from lq.envs.protocol import PROTOCOLS
from lq.envs.quest_env import QuestEnv
from lq.envs.replay import by_whom, demonstration_turns, replay_demonstrations
from lq.models.poly_encoder import keyed, stores_beside, writable

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
    return {
        "listen_weight": partner.listen_weight,
        "listen_scale": scale,
        "action_hits": hits[0.0],
        "action_hits_listening": hits[chosen],
    }


def fit_error(completions: float, target: float, share: float, demonstration_share: float) -> float:
    """How far a partner is from the demonstrations' partners: the log ratio of the goals it completes to theirs,
    plus the log ratio of its share of acting turns to theirs. A partner that acts on more turns than they did
    completes goals whatever it is told; the second term makes acting more cost what it buys (see the module)."""
    by_goals = abs(math.log((completions + 1e-3) / (target + 1e-3)))
    return round(by_goals + abs(math.log((share + 1e-3) / (demonstration_share + 1e-3))), 9)


def completions(env: QuestEnv, partner: str) -> float:
    """The share of ``env``'s demonstrations whose goal the partner completes, the self turns replayed, with their
    own partners' turns (``"scripted"``) or with the environment's partner (``"model"``)."""
    return by_whom(replay_demonstrations(env, partner), "partner")


def partner_turns(instances: Sequence[QuestInstance]) -> list[DemoTurn]:
    """The demonstrations' partner turns that had a valid action, each as the partner saw it: what the fit reads."""
    return [t for inst in instances for t in demonstration_turns(inst, side="partner") if t.valid_actions]


def acting_share(turns: Sequence[DemoTurn]) -> float:
    """The share of ``turns`` that were actions."""
    return sum(t.kind == "action" for t in turns) / max(len(turns), 1)


def fit_action_bias(
    partner: PolyEncoderPartner,
    dm: DungeonMaster,
    train: Sequence[QuestInstance],
    actions: Sequence[str],
    held_out: Sequence[QuestInstance] = (),
    batch_size: int = 64,
    quiet: bool = False,
) -> tuple[float, dict[str, float]]:
    """The partner's listening and action bias fit on the demonstrations (see the module); returns the bias and what
    the fit saw: the training demonstrations' partner action share, the share and listening chosen, and the partner
    completions of the demonstrations and of the partner (on the training ones, and with ``held_out`` on those).
    Prints its progress (each setting tried replays every demonstration: minutes) unless ``quiet``."""
    turns = partner_turns(train)
    share = acting_share(turns)
    fit: dict[str, float] = {"demonstration_action_share": share, **fit_listening(partner, turns)}

    def env_of(instances: Sequence[QuestInstance]) -> QuestEnv:
        # the fit reads act goals alone, which the DM's ranking does not touch under PAPER's speech goal
        return QuestEnv(
            list(instances),
            partner,
            dm,
            list(actions),
            batch_size,
            auto_reset=False,
            protocol=PAPER,
            rank_utterances=False,
        )

    parts = [train, held_out] if held_out else [train]
    envs = [env_of(part) for part in parts]

    def pooled(partner_side: str) -> list[float]:
        """The partner completions of the training and held-out demonstrations, and of both together."""
        got = [completions(env, partner_side) for env in envs]
        return got + [sum(g * len(part) for g, part in zip(got, parts, strict=True)) / sum(map(len, parts))]

    target = pooled("scripted")
    if held_out:
        fit |= {"held_out_demonstration_partner_completions": target[1], "pooled_demonstration_completions": target[2]}
        scale, tried = fit.get("listen_scale", 0.0), {}
        what = f"the partner's calibration ({sum(map(len, parts))} demonstrations replayed per setting)"
        with Progress(len(LISTEN_STEPS) * len(SHARE_STEPS), what, "setting", quiet) as progress:
            for k in LISTEN_STEPS:
                partner.listen_weight = k * scale
                gaps = partner.choices_at(turns)[0]
                for step in SHARE_STEPS:
                    s = min(share * step, 0.95)
                    partner.action_bias = bias_for_share(gaps, s)
                    got = pooled("model")
                    fit[f"completions_at_listening_{k:g}_share_{s:.3f}"] = got[2]
                    tried[(s, k)] = (fit_error(got[2], target[2], s, share), k * scale, partner.action_bias, got)
                    progress.update(note=f"listening {k:g}, share {s:.3f}: {got[2]:.3f} of the goals")
        # the closest; of equals, the least acting and listening (the partner is left as that pair set it)
        chosen = min(tried, key=lambda sk: (tried[sk][0], sk))
        _, partner.listen_weight, partner.action_bias, got = tried[chosen]
        fit["listen_weight"], chosen = partner.listen_weight, chosen[0]
    else:
        chosen = share
        partner.action_bias = bias_for_share(partner.choices_at(turns)[0], chosen)
        got = pooled("model")
    fit |= {"action_share": chosen, "action_bias": partner.action_bias}
    fit |= {"demonstration_partner_completions": target[0], "partner_completions": got[0]}
    if held_out:
        fit["held_out_partner_completions"] = got[1]
    return partner.action_bias, fit


def calibration_key(
    context_length: int,
    candidate_keys: Sequence[str],
    train: Sequence[QuestInstance],
    held_out: Sequence[QuestInstance],
) -> str:
    """What a calibration is kept for: the context length the partner reads, the keys of the partner's utterances and
    actions and of the DM's utterances (:func:`lq.models.poly_encoder.candidates_key`: their weights' bytes and
    texts), the demonstrations, and what is fit. A hash of bytes: the same in every process."""
    digest = hashlib.sha256(f"context length {context_length}, listening {LISTEN_STEPS}\n".encode())
    for key in candidate_keys:
        digest.update(key.encode())

    def demonstrations(instances: Sequence[QuestInstance]) -> None:
        for inst in instances:
            line = f"{inst.quest.quest_id}\t{inst.self_id}\t{inst.partner_id}\t{inst.demo.to_json()}\n"
            digest.update(line.encode())

    demonstrations(train)
    if held_out:
        digest.update(
            f"held out, shares {SHARE_STEPS} by listening, counted with the training ones, goals and share\n".encode()
        )
        demonstrations(held_out)
    return digest.hexdigest()


def calibration_store(checkpoint: str | Path, held_out: bool, key: str) -> Path:
    """Where the calibration of ``key`` of the partner of ``checkpoint`` is kept (``completions``, with held-out
    demonstrations, or ``share``): one file per key beside the partner's candidates."""
    name = "partner-calibration-completions.pt" if held_out else "partner-calibration.pt"
    return keyed(stores_beside(checkpoint) / name, key)


def calibrate_partner(
    partner: PolyEncoderPartner,
    dm: DungeonMaster,
    train: Sequence[QuestInstance],
    actions: Sequence[str],
    checkpoint: str | Path,
    held_out: Sequence[QuestInstance] = (),
    quiet: bool = False,
) -> dict[str, float]:
    """Set the partner's listening and action bias (:func:`fit_action_bias`), read from beside its checkpoint when the
    partner, the DM and the demonstrations are those it was fit for (:func:`calibration_key`); returns what the fit
    saw. A calibration that has to be computed is written there, unless that folder is a bundle's."""
    caches = (partner.utterances, partner.actions, dm.utterances)
    key = calibration_key(partner.batcher.context_length, [c.key() for c in caches], train, held_out)
    store = calibration_store(checkpoint, bool(held_out), key)
    if store.exists():
        saved = torch.load(store, map_location="cpu", weights_only=True)
        if saved.get("key") == key:
            partner.action_bias = float(saved["fit"]["action_bias"])
            partner.listen_weight = float(saved["fit"]["listen_weight"])
            return saved["fit"]
    with partner.remembering():  # the settings replay the same demonstrations: their turns are scored once
        _, fit = fit_action_bias(partner, dm, train, actions, held_out, quiet=quiet)
    if writable(store):
        with atomic_open(store, "wb") as f:
            torch.save({"key": key, "fit": fit}, f)
    return fit
