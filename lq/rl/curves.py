"""The episodes behind RL's training curves: the last ``size`` episodes to *start*, once every one of them has ended.

The last episodes to *end* would favour the short ones. Early in training the first episodes to end are those that
reached their goal within a few turns, so a curve of them starts near 1.0 whatever the agent does, and falls as the
long, failed episodes come in. An environment numbers its episodes in the order it starts them
(``Slot.serial``); every episode numbered below the oldest one still in play has ended, so the episodes numbered
from there down are a sample of starts, whatever their length or outcome."""

from __future__ import annotations

from collections.abc import Iterable

KEPT = ("act_goal", "speech_goal", "return", "instance", "left_start")  # what the curves read of an episode's summary


class StartedEpisodes:
    def __init__(self, size: int):
        self.size = size
        self.ended: dict[int, dict] = {}  # serial -> the summary's KEPT fields, for the episodes that may still count

    def add(self, episodes: Iterable[dict]) -> None:
        """Ended episodes' summaries (:meth:`lq.envs.quest_env.QuestEnv.episode_summary`)."""
        for episode in episodes:
            self.ended[episode["serial"]] = {key: episode[key] for key in KEPT}

    def window(self, playing: Iterable[int]) -> list[dict]:
        """The last ``size`` episodes to start before the oldest of those in play (``playing``: their serials), oldest
        first; empty until the first one in play has ended. Forgets the episodes older than the window."""
        horizon = min(playing)
        start = max(0, horizon - self.size)
        for serial in [s for s in self.ended if s < start]:
            del self.ended[serial]
        return [self.ended[s] for s in range(start, horizon)]

    def figures(self, playing: Iterable[int], unsolvable: set[int]) -> dict[str, tuple[float, int]]:
        """The training curves over :meth:`window` (``playing``: the serials in play), each with the episodes it
        averages: act and speech goals, return, the share of episodes in which a character left the starting room
        (episodes saved before lq kept it left out) and of those on ``unsolvable`` quest instances (whose goal is not
        in the action space: priority sampling must not let them take over). Empty until an episode counts."""
        window = self.window(playing)
        if not window:
            return {}
        m = len(window)
        out = {name: (sum(e[key] for e in window) / m, m) for name, key in
               (("act_goal_rate", "act_goal"), ("speech_goal_rate", "speech_goal"), ("return", "return"))}  # fmt: skip
        if left := [e["left_start"] for e in window if "left_start" in e]:
            out["left_start_share"] = (sum(left) / len(left), len(left))
        out["unsolvable_share"] = (sum(e["instance"] in unsolvable for e in window) / m, m)
        return out
