"""``lq play --agent``: a person plays against a trained agent in its quest environment (the released code's
``switch/interactive.py``). By default the person is the partner, the agent pursues its motivation, and the Dungeon
Master ranks utterances live; ``--as self`` turns it around (the person has the motivation, the environment's trained
partner answers). The setting, both personas, what each carries and the motivation are on screen first; ``actions``
lists the person's valid actions, ``suggest`` the DM's top utterances for them; a line that reads like an action the
engine refuses now is refused, as engine play refuses it (``say`` says it); goals are announced when reached; the
transcript is saved as text and HTML (laid out as the paper's appendix, each side credited to who played it) however
the game ends, Ctrl-C included."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from lq.data.io import atomic_open
from lq.envs.episode import PLAYERS, goal_line, outcome_line, scene
from lq.envs.partner import Turn
from lq.envs.quest_env import QuestEnv
from lq.eval import transcripts_html
from lq.lit.agent import AgentModule
from lq.world.actions import VERBS, parse, split_verb
from lq.world.play import complete_names

HELP = """Type what your character says, or an action (get / give / steal / hug / go ...); a thing, a character or a
place may be named by any of its words ("give rope to shepherd", "go hut"). A line that reads like an action the
engine does not allow now is refused, with why. Also:
  say TEXT   say it, even if it reads like an action
  actions    your valid actions now          suggest   the Dungeon Master's best lines for you now
  rank       the DM's ranking of each line you say, on or off (its top k earn the speech reward)
  look       where you are now, who is here   quest     the quest card as it opened
  quit       stop (the transcript is saved)"""


class Quit(Exception):
    """The person left the game (``quit`` or the end of input; Ctrl-C stops it too: :func:`play_episode`)."""


# how the screen names who reached the act goal: "you" on the person's side (the saved transcript says "a person")
YOU = {"self": "you, the self character", "partner": "you, the partner"}
THEM = {"self": "the agent's character", "partner": "the partner"}


class Person:
    """A side of the game taken by a person at a terminal: reads a turn, answers the game's own commands first."""

    def __init__(self, env: QuestEnv, side: str, read: Callable[[str], str], write: Callable[[str], None]):
        self.env, self.side, self.read, self.write = env, side, read, write
        self.shown = 0  # transcript lines of the slot already on screen
        self.announced: set[str] = set()
        self.ranking = False  # show the DM's rank of each line the person says (``rank``)

    def show_new(self) -> None:
        """The turns played since the last call, then each goal newly reached (the transcript's own goal line, which
        credits "a person", is left to the announcement, which says "you")."""
        slot = self.env.slots[0]
        by = slot.act_goal
        names = {"self": slot.me.name, "partner": slot.partner.name}
        saved = goal_line(slot.goal.text, names[by], by, slot.players) if by else None
        for line in slot.transcript[self.shown :]:
            if line != saved:
                self.write(line)
        self.shown = len(slot.transcript)
        if by and "act" not in self.announced:
            who = f"{names[by]} ({YOU[by] if by == self.side else THEM[by]})"
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
            except EOFError:  # Ctrl-D; Ctrl-C goes on up to play_episode, which stops the game wherever it is
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
                turn, why = self.read_line(line, valid)
                if turn is not None:
                    return turn
                self.write(why)

    def read_line(self, line: str, valid: Sequence[str]) -> tuple[Turn | None, str]:
        """A typed line as engine play reads it (:func:`lq.world.play.play`): an action, with names completed from
        any of their words; a line that does not start with a verb, said; one that does but that the engine refuses
        now, no turn and why (a person who meant an action is not made to say it: ``say`` says it)."""
        slot = self.env.slots[0]
        me = slot.partner if self.side == "partner" else slot.me
        completed, ambiguous = complete_names(slot.world, me, line)
        if completed in valid:  # a thing, character or place named by some of its words
            return ("action", completed), ""
        if split_verb(line.lower().split())[0] is None:
            return self.said(line), ""
        action, why = parse(slot.world, me, completed)
        if action is not None and not ambiguous:  # a synonym ("pick up"): the engine's own text for it
            return ("action", action.text), ""
        return None, f"{ambiguous or why} (`actions` lists what you can do now; `say {line}` says it)"

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
    transcript: str | Path | Callable[[str], str | Path] | None = None,
    read: Callable[[str], str] = input,
    write: Callable[[str], None] = print,
    split: str = "test",
    greedy: bool | None = None,
) -> dict:
    """One episode of ``quest`` (an id of the agent's data, or its first quest of ``split``) with a person as
    ``side``; returns the episode summary and, if asked, saves the transcript (``.txt`` and ``.html``) however the
    game ends (the goals, ``quit``, the end of input, Ctrl-C). ``transcript``: where, or a function of the quest id
    giving where (the quest played is known only here when none is named)."""
    if side not in ("partner", "self"):
        raise ValueError(f"--as {side}: a person plays the partner or the self character")
    env = module.eval_env(split)
    quest = quest or env.instances[0].quest.quest_id
    env.only([quest], f"a {split} quest of {module.data_dir}")
    path = transcript(quest) if callable(transcript) else transcript
    env.players = {**PLAYERS, side: "a person"}  # the transcripts credit the person with the side played
    person = Person(env, side, read, write)
    if side == "partner":
        env.partner = person
    write(HELP + "\n")
    summary = play_episode(env, person, module, greedy)
    write(
        f"Episode over after {summary['steps']} agent turns: act goal {summary['act_goal_by'] or 'not reached'}, "
        f"speech goal {'reached' if summary['speech_goal'] else 'not reached'}."
    )
    if path is not None:
        save_transcript(summary, Path(path), write)
    return summary


def play_episode(env: QuestEnv, person: Person, module: AgentModule, greedy: bool | None) -> dict:
    """The episode, until the protocol ends it or the person leaves (``quit``, the end of input, Ctrl-C: even while
    the agent or the partner is thinking): its summary as it stands then."""
    actor = module.make_actor()
    actor.cache_candidates()
    greedy = module.protocol.greedy if greedy is None else greedy
    try:
        obs, infos = env.reset([0])
        state = actor.start(1)
        while True:
            if person.side == "partner":
                commands, _ = actor.step(env, obs, infos, state, greedy=greedy)
            else:
                commands = [person.turn(infos[0]["valid_actions"])]
            obs, _, dones, infos = env.step(commands)
            person.show_new()
            if dones[0]:
                return infos[0]["episode"]
    except (Quit, KeyboardInterrupt) as stop:
        if isinstance(stop, KeyboardInterrupt):
            person.write("\n(interrupted: the game stops here)")
        return env.episode_summary(env.slots[0])
    finally:
        actor.cache_candidates(False)


def save_transcript(summary: dict, path: Path, write: Callable[[str], None]) -> None:
    """The episode's transcript as ``path``.txt (the goal line where it was reached, then the outcome) and
    ``path``.html (:func:`lq.eval.transcripts_html`), each side credited to who played it; says where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path.with_suffix(".txt")) as f:
        f.write(f"{summary['transcript']}\n\n{outcome_line(summary)}\n")
    with atomic_open(path.with_suffix(".html")) as f:
        f.write(transcripts_html([summary], f"lq play: {summary['quest_id']}"))
    write(f"transcript: {path.with_suffix('.txt')} and {path.with_suffix('.html')}")
