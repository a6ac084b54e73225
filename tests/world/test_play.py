"""`lq play` driven as a person would: in a real terminal under tmux, typing commands."""

import json
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from lq.world import ActGoal, World
from lq.world.play import load_game, play
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
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", command], check=True)
    try:
        screen = _wait_for(session, "> ")
        assert "Your goal: give golden dragon egg to dragon" in screen
        for keys, expect in [
            ("look", "A dragon is here."),
            ("drop the Golden Dragon Egg", "You drop the golden dragon egg."),
            ("actions", "get golden dragon egg"),
            ("pick up golden dragon egg", "You get the golden dragon egg."),
            ("give golden dragon egg to the dragon", "*** Goal reached: give golden dragon egg to dragon ***"),
            ("dance", "Unknown verb 'dance'"),
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
