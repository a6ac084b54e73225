"""`lq play` driven as a person would: in a real terminal under tmux, typing commands."""

import json
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from lq.world import ActGoal, World
from lq.world.play import complete_names, examine, load_game, main, play, say
from tests.samples import quest_json, tiny_graph


def _screen(session: str) -> str:
    return subprocess.run(
        ["tmux", "capture-pane", "-p", "-J", "-S", "-200", "-t", session], capture_output=True, text=True, check=True
    ).stdout


def _wait_for(session: str, text: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = _screen(session)
        if text in screen:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"'{text}' never appeared on screen:\n{_screen(session)}")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
def test_play_in_a_terminal_under_tmux(tmp_path):
    world_file = tmp_path / "lair.json"
    world_file.write_text(json.dumps(tiny_graph()))
    session = f"lq-play-{uuid.uuid4().hex[:8]}"
    command = (
        f"{sys.executable} -m lq play {world_file} --as knight --partner dragon "
        f"--goal 'give golden dragon egg to dragon'; sleep 30"
    )
    tmux = ["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", "-c", str(tmp_path)]
    subprocess.run([*tmux, command], check=True)  # in tmp_path: its transcript (outputs/play/) is written there
    try:
        screen = _wait_for(session, "> ")
        assert "Your goal: give golden dragon egg to dragon" in screen
        for keys, expect in [
            ("look", "A dragon is here."),
            ("drop the Golden Dragon Egg", "You drop the golden dragon egg."),
            ("actions", "get golden dragon egg"),
            ("pick up golden dragon egg", "You get the golden dragon egg."),
            ("give golden dragon egg to the dragon", "*** Goal reached: give golden dragon egg to dragon ***"),
            ("x egg", "A golden dragon egg."),  # a thing named by one of its words
            ("dance with me", 'You say to the dragon: "dance with me"'),  # not an action: said
            ("say give it back", 'You say to the dragon: "give it back"'),
        ]:
            subprocess.run(["tmux", "send-keys", "-t", session, keys, "Enter"], check=True)
            _wait_for(session, expect)
        subprocess.run(["tmux", "send-keys", "-t", session, "quit", "Enter"], check=True)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_play_loop_reads_a_quest_stem(tmp_path):
    (tmp_path / "quest.json").write_text(json.dumps(quest_json()))
    world, character, goal = load_game(tmp_path / "quest.json")
    assert (character, goal) == ("dragon", "hit knight")
    dragon = world.find_agent(character)
    lines = iter(["hit the knight", "quit"])
    out: list[str] = []
    reached = play(world, dragon, ActGoal.parse(world, goal, dragon.id), None, lambda _: next(lines), out.append)
    assert reached and "*** Goal reached: hit knight ***" in out


def test_play_ends_cleanly_at_end_of_input():
    world = World.from_json(tiny_graph())

    def eof(_):
        raise EOFError

    assert play(world, world["dragon_1"], read=eof, write=lambda _: None) is False


def _two_keepers() -> World:
    """The tiny lair with a second character whose name shares a word with the knight's, and a chest holding a coin."""
    graph = tiny_graph()
    nodes = graph["nodes"]
    nodes["keeper_4"] = {**nodes["knight_2"], "node_id": "keeper_4", "name": "old gate keeper", "contained_nodes": {}}
    nodes["keeper_5"] = {**nodes["knight_2"], "node_id": "keeper_5", "name": "young gate keeper", "contained_nodes": {}}
    nodes["chest_6"] = {
        **nodes["egg_3"],
        "node_id": "chest_6",
        "name": "oak chest",
        "name_prefix": "an",
        "surface_type": "in",
        "container": True,
        "gettable": False,
        "container_node": {"target_id": "lair_0"},
        "contained_nodes": {"coin_7": {"target_id": "coin_7"}},
    }
    nodes["coin_7"] = {
        **nodes["egg_3"],
        "node_id": "coin_7",
        "name": "copper coin",
        "desc": "A worn coin.",
        "container_node": {"target_id": "chest_6"},
    }
    for node in ("keeper_4", "keeper_5", "chest_6"):
        nodes["lair_0"]["contained_nodes"][node] = {"target_id": node}
    graph["agents"] += ["keeper_4", "keeper_5"]
    graph["objects"] += ["chest_6", "coin_7"]
    return World.from_json(graph)


def test_names_by_any_of_their_words_complete_only_when_one_name_in_sight_holds_them():
    world = World.from_json(tiny_graph())
    knight = world["knight_2"]
    assert complete_names(world, knight, "give egg to dragon") == ("give golden dragon egg to dragon", "")
    assert complete_names(world, knight, "give the Egg to the dragon") == ("give golden dragon egg to the dragon", "")
    world = _two_keepers()
    dragon = world["dragon_1"]
    assert complete_names(world, dragon, "hug keeper") == (
        "hug keeper",
        "Which do you mean: the old gate keeper or the young gate keeper?",
    )
    assert complete_names(world, dragon, "hug old keeper") == ("hug old gate keeper", "")
    assert complete_names(world, dragon, "get coin from chest") == ("get copper coin from oak chest", "")
    assert complete_names(world, dragon, "dance wildly") == ("dance wildly", "")  # not an action: left alone
    lines = iter(["get coin from chest", "hug keeper", "hug young keeper", "quit"])
    out: list[str] = []
    play(world, dragon, read=lambda _: next(lines), write=out.append)
    assert "You get the copper coin from the oak chest." in out
    assert "Which do you mean: the old gate keeper or the young gate keeper?" in out
    assert "You hug the young gate keeper." in out


def test_examine_look_in_and_say_answer_as_a_player_expects():
    world = _two_keepers()
    dragon = world["dragon_1"]
    assert examine(world, dragon, "chest") == "An oak chest.\nIn it: a copper coin."
    assert examine(world, dragon, "knight").splitlines() == [
        "A knight.",
        "I am a knight.",
        "The knight carries a golden dragon egg.",
    ]
    assert examine(world, dragon, "coin") == "A copper coin.\nA worn coin."  # inside a container in sight
    assert examine(world, dragon, "unicorn") == "You don't see 'unicorn' here."
    assert examine(world, dragon, "me").startswith("I am a dragon living in the mountains.\nYou are carrying")
    assert say(world, dragon, "hello", partner=world["knight_2"]) == 'You say to the knight: "hello"'
    assert (
        say(world, dragon, "hello") == 'You say to the knight, the old gate keeper and the young gate keeper: "hello"'
    )
    lines = iter(["look in the oak chest", "look at knight", "'hail", "sing a song", "quit"])
    out: list[str] = []
    play(world, dragon, read=lambda _: next(lines), write=out.append)
    assert (
        "An oak chest.\nIn it: a copper coin." in out
        and out.count("A knight.\nI am a knight.\nThe knight carries a golden dragon egg.") == 1
    )
    assert 'You say to the knight, the old gate keeper and the young gate keeper: "hail"' in out
    assert 'You say to the knight, the old gate keeper and the young gate keeper: "sing a song"' in out


def test_a_game_is_saved_as_it_was_on_screen_in_its_own_transcript(tmp_path):
    (tmp_path / "quest.json").write_text(json.dumps(quest_json()))
    lines = iter(["say I will have that egg", "hit knight"])

    def read(_):
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    main(str(tmp_path / "quest.json"), transcript=tmp_path / "games" / "q-1", read=read, write=lambda _: None)
    text = (tmp_path / "games" / "q-1.txt").read_text()
    assert '> say I will have that egg\nYou say to the knight: "I will have that egg"' in text
    assert "> hit knight\n" in text and "*** Goal reached: hit knight ***" in text
    assert (tmp_path / "games" / "q-1.txt").stat().st_mode & 0o044  # readable by others, as a shared file


def _with_hut() -> dict:
    """The tiny lair with a way out along a muddy track to the witch's hut."""
    graph = tiny_graph()
    nodes = graph["nodes"]
    nodes["hut_8"] = {
        **nodes["lair_0"],
        "node_id": "hut_8",
        "name": "witch's hut",
        "desc": "A hut of bones.",
        "contained_nodes": {},
        "neighbors": {"lair_0": {"label": "a muddy track to the lair", "target_id": "lair_0"}},
    }
    nodes["lair_0"]["neighbors"] = {"hut_8": {"label": "a muddy track to the hut", "target_id": "hut_8"}}
    graph["rooms"].append("hut_8")
    return graph


def test_a_place_is_named_by_any_word_of_its_name_or_of_the_path_to_it():
    world = World.from_json(_with_hut())
    dragon = world["dragon_1"]
    for typed in ("go witch", "go hut", "go witch's", "go muddy track"):
        assert complete_names(world, dragon, typed) == ("go witch's hut", ""), typed
    assert complete_names(world, dragon, "go to witch") == ("go to witch's hut", "")  # the engine reads "go to"
    assert complete_names(world, dragon, "go cave") == ("go cave", "")  # no such place: left for the engine to refuse
    assert examine(world, dragon, "witch") == "A witch's hut lies that way: go witch's hut to enter it."


def test_ctrl_c_leaves_the_game_as_quit_does_and_keeps_its_transcript(tmp_path):
    (tmp_path / "lair.json").write_text(json.dumps(_with_hut()))
    lines = iter(["go witch", KeyboardInterrupt()])

    def read(_):
        line = next(lines)
        if isinstance(line, BaseException):
            raise line
        return line

    out: list[str] = []
    assert main(str(tmp_path / "lair.json"), "dragon", transcript=tmp_path / "t", read=read, write=out.append) == 0
    text = (tmp_path / "t.txt").read_text()
    assert "> go witch\nYou go to witch's hut.\n" in text  # named by one word of it
    assert out[-1] == f"transcript: {tmp_path / 't.txt'}"


def test_a_partial_name_refused_gets_the_reason_its_whole_name_gets():
    """``steal iron helm from veteran``: the veteran wears the helm, which the whole name's refusal says."""
    graph = tiny_graph()
    nodes = graph["nodes"]
    nodes["knight_2"]["name"] = "Goblin King\u2019s War veteran"
    nodes["egg_3"].update(name="iron helm", wearable=True, equipped="worn")
    world = World.from_json(graph)
    lines = iter(["steal iron helm from veteran", "get helm from king's veteran", "hug veteran", "quit"])
    out: list[str] = []
    play(world, world["dragon_1"], read=lambda _: next(lines), write=out.append)
    stolen = "The Goblin King\u2019s War veteran wears the iron helm: a thing worn or wielded can't be stolen."
    assert stolen in out
    assert "The Goblin King\u2019s War veteran wears the iron helm: a thing worn or wielded can't be taken." in out
    assert "You hug the Goblin King\u2019s War veteran." in out


def test_a_line_that_is_no_command_is_said_and_why_is_told_once_a_game():
    world = World.from_json(tiny_graph())
    lines = iter(["jump over the knight", "dance", "quit"])
    out: list[str] = []
    play(world, world["dragon_1"], read=lambda _: next(lines), write=out.append)
    told = [line for line in out if "is not one of the verbs" in line]
    assert told == ["('jump' is not one of the verbs, so that was said aloud; 'help' lists them)"]
    assert 'You say to the knight: "dance"' in out
