"""The evaluation protocol: what an agent chooses among, when an episode ends, what reaches the speech goal, and how
the agent decodes. Agents train under the protocol they are evaluated at; every run logs its protocol and every table
names it.

``paper`` (the default) is the paper's, read with the authors' released code where the paper is silent: choice over
the whole spaces, the speech goal on a demonstration utterance said, episodes of up to 30 turns that a self act
completion does not end, sampled decoding. ``restricted`` is lq's earlier, easier protocol, kept for comparison.
Each choice and its source (docs/deviations.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

CHOICES = ("whole", "valid")
SPEECH_GOALS = ("demonstration", "score")
DECODINGS = ("sampled", "greedy")
# the goal rates every evaluation under a protocol reports, as (MLflow metric name, EvalResult attribute, title): the
# one list that the results (lq.eval.episodes), the reports' tables, the experiments' columns, the model cards and the
# saved MLflow views read
GOAL_RATES = (
    ("act_goal_rate", "act_goal_rate", "Act goals"),
    ("speech_goal_rate", "speech_goal_rate", "Speech goals"),
    ("act_and_speech_goal_rate", "act_and_speech_rate", "Act & Speech"),
)
# what agents are ranked by (the best agent of a table, the MLflow views' order), before the others in GOAL_RATES' order
HEADLINE_RATE = "act_and_speech_goal_rate"
RANKED_RATES = (HEADLINE_RATE, *(name for name, *_ in GOAL_RATES if name != HEADLINE_RATE))


@dataclass(frozen=True)
class Protocol:
    name: str = "paper"
    choice: str = "whole"  # "whole": the policies choose among the whole spaces; "valid": among the valid sets only
    speech_goal: str = "demonstration"  # "demonstration": a demonstration self utterance said; "score": the threshold
    speech_goal_threshold: float = 0.5  # the speech score (at most 1) that reaches the speech goal, for "score"
    end_at_act_goal: bool = False  # a self act completion ends the episode
    max_turns: int | None = 30  # agent turns per episode; None: as many as the demonstration's self turns
    decoding: str = "sampled"  # the decoding of the protocol's own rows ("sampled" or "greedy"); the other is beside
    demonstration_targets: bool = True  # the valid-output losses' targets hold the demonstration's utterances and goal
    speech_targets: int | None = 10  # the valid-speech loss's targets: the DM's first N valid utterances (None: all M)

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("choice", self.choice, CHOICES),
            ("speech_goal", self.speech_goal, SPEECH_GOALS),
            ("decoding", self.decoding, DECODINGS),
        ):
            if value not in allowed:
                raise ValueError(f"protocol {self.name!r}: unknown {name} {value!r}: choose from {', '.join(allowed)}")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError(f"protocol {self.name!r}: max_turns must be at least 1 (or null: the demonstration's)")

    @property
    def restrict(self) -> bool:
        """The policies choose among the valid candidates only."""
        return self.choice == "valid"

    @property
    def greedy(self) -> bool:
        return self.decoding == "greedy"

    def describe(self) -> str:
        """One line for a table's title: the protocol's name and what it fixes."""
        turns = "demonstration-length" if self.max_turns is None else f"{self.max_turns}-turn"
        goal = (
            "a demonstration utterance said"
            if self.speech_goal == "demonstration"
            else (f"speech score {self.speech_goal_threshold:g}")
        )
        ends = "end at the act goal" if self.end_at_act_goal else "go on after a self act completion"
        return (
            f"protocol {self.name}: choice among the {'valid candidates' if self.restrict else 'whole spaces'}, "
            f"{turns} episodes that {ends}, speech goal: {goal}, {self.decoding} decoding"
        )

    def as_dict(self) -> dict:
        return asdict(self)


PROTOCOLS = {
    "paper": Protocol(),
    "restricted": Protocol(
        name="restricted",
        choice="valid",
        speech_goal="score",
        end_at_act_goal=True,
        max_turns=None,
        decoding="greedy",
        demonstration_targets=False,
        speech_targets=None,
    ),
}


def protocol_of(value: Protocol | dict | str | None) -> Protocol:
    """A :class:`Protocol` from itself, its name (``PROTOCOLS``), or its dict (as a checkpoint's hyperparameters keep
    it; a checkpoint from before protocols existed, ``None``, played ``restricted``)."""
    if isinstance(value, Protocol):
        return value
    if value is None:
        return PROTOCOLS["restricted"]
    if isinstance(value, str):
        if value not in PROTOCOLS:
            raise ValueError(f"unknown protocol {value!r}: choose from {', '.join(PROTOCOLS)}")
        return PROTOCOLS[value]
    known = {f.name for f in fields(Protocol)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(f"unknown protocol field {', '.join(unknown)}: the fields are {', '.join(sorted(known))}")
    return Protocol(**value)
