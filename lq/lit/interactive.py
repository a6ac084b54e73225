"""``lq play --agent``: a person plays against a trained agent in its quest environment (the released code's
``switch/interactive.py``). By default the person is the partner, the agent pursues its motivation, and the Dungeon
Master ranks utterances live; ``--as self`` turns it around (the person has the motivation, the environment's trained
partner answers). The setting, both personas, what each carries and the motivation are on screen first; ``actions``
lists the person's valid actions, ``suggest`` the DM's top utterances for them; goals are announced when reached;
the transcript is saved as text and HTML (laid out as the paper's appendix)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from lq.data.io import atomic_open
from lq.envs.episode import scene
from lq.envs.partner import Turn
from lq.envs.quest_env import QuestEnv
from lq.eval import transcripts_html
from lq.lit.agent import AgentModule
from lq.world.actions import VERBS
from lq.world.play import complete_names

HELP = """Type what your character says, or an action (get / give / steal / hug / ...); a thing or a character may be
named by any of its words ("give rope to shepherd"). Also:
  say TEXT   say it, even if it reads like an action
  actions    your valid actions now          suggest   the Dungeon Master's best lines for you now
  rank       the DM's ranking of each line you say, on or off (its top k earn the speech reward)
  look       where you are now, who is here   quest     the quest card as it opened
  quit       stop (the transcript is saved)"""


class Quit(Exception):
    """The person left the game (``quit`` or the end of input)."""


class Person:
    """A side of the game taken by a person at a terminal: reads a turn, answers the game's own commands first."""

    def __init__(self, env: QuestEnv, side: str, read: Callable[[str], str], write: Callable[[str], None]):
        self.env, self.side, self.read, self.write = env, side, read, write
        self.shown = 0  # transcript lines of the slot already on screen
        self.announced: set[str] = set()
        self.ranking = False  # show the DM's rank of each line the person says (``rank``)

    def show_new(self) -> None:
        """The turns played since the last call, then each goal newly reached."""
        slot = self.env.slots[0]
        for line in slot.transcript[self.shown :]:
            self.write(line)
        self.shown = len(slot.transcript)
        if slot.act_goal and "act" not in self.announced:
            # credited to whoever plays the side: the person ("you") or the agent and the environment's partner
            you = {"self": "you, the self character", "partner": "you, the partner"}
            them = {"self": "the agent's character", "partner": "the partner"}
            names = {"self": slot.me.name, "partner": slot.partner.name}
            by = slot.act_goal
            who = f"{names[by]} ({you[by] if by == self.side else them[by]})"
            self.write(f"*** Act goal reached: {slot.goal.text}, by {who} ***")
            self.announced.add("act")
        if self.env.speech_goal(slot) and "speech" not in self.announced:
            self.write(f"*** Speech goal reached: {slot.me.name} said a line of the quest's demonstration ***")
            self.announced.add("speech")

    def turn(self, valid: Sequence[str]) -> Turn:
        slot = self.env.slots[0]
        self.show_new()
        while True:
            try:
                line = self.read(f"{(slot.partner if self.side == 'partner' else slot.me).name} > ").strip()
            except EOFError:
                raise Quit from None
            command = line.lower()
            if command in ("q", "quit", "exit"):
                raise Quit
            if command in ("h", "help", "?"):
                self.write(HELP)
            elif command in ("a", "actions"):
                self.write("\n".join(f"  {a}" for a in valid) or "  (none)")
            elif command in ("s", "suggest"):
                ranked = self.env.dm.rank([self.env.context(slot, self.side)])[0].tolist()
                self.write("\n".join(f"  {self.env.utterance_space[i]}" for i in ranked[: self.env.dm.top_k]))
            elif command in ("l", "look"):
                self.write("\n".join(scene(slot, self.side)))
            elif command in ("quest", "card"):
                self.write("\n".join(slot.transcript[: slot.transcript.index("") + 1]))
            elif command in ("r", "rank"):
                self.ranking = not self.ranking
                self.write(f"the Dungeon Master's ranking of your lines: {'on' if self.ranking else 'off'}")
            elif command.startswith("say ") and line[4:].strip():
                return self.said(line[4:].strip())
            elif command in VERBS:  # a bare verb is an unfinished action, not a line to say
                self.write(f"{command} what? `actions` lists what you can do now; `say {command}` says it")
            elif line in valid:
                return ("action", line)
            elif line:
                me = slot.partner if self.side == "partner" else slot.me
                completed, _ = complete_names(slot.world, me, line)
                if completed in valid:  # a thing or character named by some of its words
                    return ("action", completed)
                if command.split()[0] in VERBS:  # it reads like an action the engine does not allow now: said aloud
                    self.write("(not one of your actions now, so it is said; `actions` lists them)")
                return self.said(line)

    def said(self, text: str) -> Turn:
        """The person's line, with the Dungeon Master's rank of it shown first when asked for (``rank``)."""
        if self.ranking:
            dm, slot = self.env.dm, self.env.slots[0]
            place = dm.place(self.env.context(slot, self.side), text)
            top = "within its top" if place <= dm.top_k else "outside its top"
            self.write(f"(the Dungeon Master ranks your line {place} of {len(dm.utterances.texts)}: {top} {dm.top_k})")
        return ("speech", text)

    def act(self, contexts: Sequence[str], valid_actions: Sequence[Sequence[str]]) -> list[Turn]:
        """The :class:`lq.envs.partner.Partner` interface: the person answers for the partner."""
        return [self.turn(valid_actions[0])]


def play_against(
    module: AgentModule,
    quest: str | None = None,
    side: str = "partner",
    transcript: str | Path | None = None,
    read: Callable[[str], str] = input,
    write: Callable[[str], None] = print,
    split: str = "test",
    greedy: bool | None = None,
) -> dict:
    """One episode of ``quest`` (an id of the agent's data, or its first quest of ``split``) with a person as
    ``side``; returns the episode summary (and writes the transcript, ``.txt`` and ``.html``, if asked)."""
    if side not in ("partner", "self"):
        raise ValueError(f"--as {side}: a person plays the partner or the self character")
    env = module.eval_env(split)
    env.only([quest or env.instances[0].quest.quest_id], f"a {split} quest of {module.data_dir}")
    person = Person(env, side, read, write)
    if side == "partner":
        env.partner = person
    actor = module.make_actor()
    actor.cache_candidates()
    greedy = module.protocol.greedy if greedy is None else greedy
    write(HELP + "\n")
    summary: dict | None = None
    try:
        obs, infos = env.reset([0])
        state = actor.start(1)
        while summary is None:
            if side == "partner":
                commands, _ = actor.step(env, obs, infos, state, greedy=greedy)
            else:
                commands = [person.turn(infos[0]["valid_actions"])]
            obs, _, dones, infos = env.step(commands)
            person.show_new()
            if dones[0]:
                summary = infos[0]["episode"]
    except Quit:
        summary = env.episode_summary(env.slots[0])
    finally:
        actor.cache_candidates(False)
    write(
        f"Episode over after {summary['steps']} agent turns: act goal {summary['act_goal_by'] or 'not reached'}, "
        f"speech goal {'reached' if summary['speech_goal'] else 'not reached'}."
    )
    if transcript is not None:
        path = Path(transcript)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path.with_suffix(".txt")) as f:
            f.write(summary["transcript"] + "\n")
        with atomic_open(path.with_suffix(".html")) as f:
            f.write(transcripts_html([summary], f"lq play: {summary['quest_id']}"))
        write(f"transcript: {path.with_suffix('.txt')} and {path.with_suffix('.html')}")
    return summary
