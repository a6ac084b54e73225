"""The baselines' registry, in one place: every row a baselines table shows beside the agents (the rules an actor plays
in place of an agent's policies, the ceiling, the demonstrations replayed), by key (in metric names) and title. Plain
data, without torch: the experiments' specs read it to build their tables, :mod:`lq.rl.baseline_policies` plays the
rules and :mod:`lq.eval.baseline_results` runs every row."""

from __future__ import annotations

# each rule and how it decodes whatever the agent's protocol says: random samples (its scores are all equal: greedy
# would always take the first), overlap takes its best
RULE_DECODING = {"random": "sampled", "overlap": "greedy"}
RULES = tuple(RULE_DECODING)
# key (in metric names), row title, rule, choose among the valid candidates only
BASELINES = (
    ("random_all", "Random (whole spaces)", "random", False),
    ("random_valid", "Random (valid candidates)", "random", True),
    ("overlap_all", "Word overlap (whole spaces)", "overlap", False),
    ("overlap_valid", "Word overlap (valid candidates)", "overlap", True),
)
CEILING = ("ceiling", "Ceiling (goal in the action space)")
REPLAY = ("replay", "Demonstrations replayed")
REPLAY_WITH_PARTNER = ("replay_partner", "Demonstrations' self turns with the environment's partner")
# every row the runner gives, by key: the title tables show it under
TITLES = {key: title for key, title, *_ in (*BASELINES, CEILING, REPLAY, REPLAY_WITH_PARTNER)}
