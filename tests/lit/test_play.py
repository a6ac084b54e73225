"""Playing against a trained agent (``lq play --agent``) through standard input, and ``make play`` itself."""

import io
import os
import re
import subprocess
from pathlib import Path

import pytest

from lq.cli import main
from tests.samples import env_spec, tiny_agent_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_person_as_the_partner_gives_the_agent_its_goal(trained_agent, tmp_path, monkeypatch, capsys):
    bundle = tmp_path / "bundle"
    assert main(["export", str(trained_agent), str(bundle), "--no-eval"]) == 0
    # test_00006 of the tiny data: the young jester's goal is to steal the rusty ale the old sailor (the partner) holds
    # `rank` shows where the DM puts each line said; "ale" and "jester" name the rusty ale and the young jester
    lines = ["actions", "suggest", "get", "rank", "say Good day to you, jester.", "give ale to jester", "quit"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    transcript = tmp_path / "played" / "t"
    assert main(["play", "test_00006", "--agent", str(bundle), "--transcript", str(transcript)]) == 0
    out = capsys.readouterr().out
    card = out[out.index("Quest test_00006") :]
    assert "Partner:    old sailor." in card and "Self:       young jester." in card and "Motivation" in card
    assert "  give rusty ale to young jester" in out  # `actions` listed it
    assert "get what? `actions` lists what you can do now; `say get` says it" in out  # a bare verb is not said
    assert "the Dungeon Master's ranking of your lines: on" in out
    assert re.search(r"\(the Dungeon Master ranks your line \d+ of \d+: (within|outside) its top 10\)", out)
    assert "*** Act goal reached: steal rusty ale from old sailor, by old sailor (you, the partner) ***" in out
    assert "Episode over after 1 agent turns: act goal partner" in out
    text = transcript.with_suffix(".txt").read_text()
    assert "old sailor: Good day to you, jester." in text and "old sailor > give rusty ale to young jester" in text
    page = transcript.with_suffix(".html").read_text()
    assert "<div class='turn partner action goal'>" in page and "<div class='turn self " in page


@pytest.mark.slow
def test_playing_the_self_character_against_the_trained_partner(trained_agent, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("look\nsteal rusty ale from old sailor\n"))
    assert (
        main(["play", "test_00006", "--agent", str(trained_agent), "--as", "self", "--transcript", str(tmp_path / "t")])
        == 0
    )
    out = capsys.readouterr().out
    assert "by young jester (you, the self character)" in out  # the person reached it as the self character
    assert main(["play", "test_00006", "--agent", str(trained_agent), "--as", "dragon"]) == 2
    assert main(["play", "no-such-quest", "--agent", str(trained_agent)]) == 1
    assert "is not a test quest" in capsys.readouterr().err


def test_make_play_works_without_shared_data_and_makes_its_default_quest(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    done = subprocess.run(
        ["make", "-s", "play", f"DATA={tmp_path / 'data'}", f"PLAY_TRANSCRIPT={tmp_path / 'game'}"],
        cwd=ROOT,
        input="look\nactions\nquit\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "generating the default dataset" in done.stdout and "Your goal:" in done.stdout
    assert (tmp_path / "data" / "quests" / "test" / "test_00000.json").exists()
    assert "> look\n" in (tmp_path / "game.txt").read_text()  # its transcript where asked, not in the checkout


def test_one_argument_names_what_to_play_a_quest_id_or_a_file_whatever_the_mode(tmp_path, monkeypatch, capsys):
    """Without an agent a quest id of --data plays that quest's file (as with --agent); with an agent a quest file
    plays its quest id; anything else is refused with what it takes. Each game's transcript has its own name."""
    from lq.commands.agents import _quest_id, quest_file
    from lq.generate import generate_dataset

    data = tmp_path / "data"
    generate_dataset(data, scale="tiny", seed=0, log=lambda _: None)
    assert quest_file(Path("test_00006"), data) == data / "quests" / "test" / "test_00006.json"
    assert quest_file(data / "quests" / "test" / "test_00006.json", data).name == "test_00006.json"
    assert _quest_id(data / "quests" / "test" / "test_00006.json") == "test_00006"
    assert _quest_id(Path("test_00006")) == "test_00006"
    monkeypatch.setattr("sys.stdin", io.StringIO("look\nquit\n"))
    monkeypatch.chdir(tmp_path)
    assert main(["play", "test_00006", "--data", str(data)]) == 0
    assert "Your goal:" in capsys.readouterr().out
    (played,) = (tmp_path / "outputs" / "play").glob("test_00006-*.txt")  # named by the quest and the time
    assert "> look\n" in played.read_text()
    assert main(["play", "test_99999", "--data", str(data)]) == 2
    assert "neither a world or quest file nor a quest id of" in capsys.readouterr().err


def _untrained_agent(root):
    """A tiny agent that never trained, over the setup's data, partner and DM: play needs its environment, not skill."""
    from lq.lit.bc import BCModule

    return BCModule(
        env=env_spec(root), lr=1e-4, context_length=64, candidate_dim=16, agent=tiny_agent_config(), eval_max_steps=6,
        eval_batch_size=1,
    )  # fmt: skip


def _typed(lines):
    """``read`` for :func:`play_against`: each line in turn, echoed as a terminal shows it (an exception in ``lines``
    is raised there: ``KeyboardInterrupt()`` is Ctrl-C)."""
    shown: list[str] = []
    queue = iter(lines)

    def read(prompt):
        line = next(queue)
        if isinstance(line, BaseException):
            raise line
        shown.append(prompt + line)
        return line

    return read, shown


def test_a_person_as_self_is_credited_with_the_goal_and_ctrl_c_keeps_the_transcript(setup_dir, tmp_path):
    """test_00006 of the tiny data: the young jester (the person, as self) steals the rusty ale from the old sailor.
    An action the engine refuses is refused, not said; a place is named by one word of it; Ctrl-C saves the game."""
    from lq.lit.interactive import play_against

    read, shown = _typed(["get key", "steal ale from sailor", "go hunters", KeyboardInterrupt()])
    summary = play_against(_untrained_agent(setup_dir), "test_00006", "self", tmp_path / "t", read, shown.append)
    screen = "\n".join(shown)
    assert "You don't see 'key' here. (`actions` lists what you can do now; `say get key` says it)" in screen
    assert "young jester: get key" not in screen and summary["steps"] == 2  # refused: no turn, nothing said
    reached = "*** Act goal reached: steal rusty ale from old sailor, by young jester"
    assert f"{reached} (you, the self character) ***" in screen
    assert "young jester > go hunters' camp    [You go to hunters' camp.]" in summary["transcript"]  # "hunters' camp"
    assert "(interrupted: the game stops here)" in screen and f"transcript: {tmp_path / 't.txt'} and " in screen
    person = "young jester (the self character, played by a person)"
    text = (tmp_path / "t.txt").read_text()
    assert f"{reached} (the self character, played by a person) ***" in text
    assert text.rstrip().endswith(f"Outcome: act goal reached by {person}; speech goal not reached; 2 agent turns")
    page = (tmp_path / "t.html").read_text()
    assert "Self (played by a person)" in page and "Partner (played by the environment&#x27;s partner)" in page
    assert f"Outcome: act goal reached by {person}" in page and "the agent" not in page


def test_lq_play_agent_names_the_transcript_by_its_quest_and_say_speaks_an_action_like_line(
    setup_dir, tmp_path, monkeypatch, capsys
):
    """With no quest named the agent's first test quest is played, and its transcript is QUEST-TIME (as documented);
    `say get key` says the line an action would be refused for."""
    module = _untrained_agent(setup_dir)
    monkeypatch.setattr("lq.lit.checkpoints.load_agent", lambda _: module)
    monkeypatch.setattr("sys.stdin", io.StringIO("say get key\nquit\n"))
    monkeypatch.chdir(tmp_path)
    assert main(["play", "--agent", "any-bundle"]) == 0
    (played,) = (tmp_path / "outputs" / "play").glob("*.txt")
    text = played.read_text()
    quest = text.split()[1]  # "Quest test_000NN (goal: ...)"
    assert re.fullmatch(rf"{quest}-\d{{8}}-\d{{6}}\.txt", played.name) and played.with_suffix(".html").is_file()
    assert re.search(r"^\S.*: get key$", text, re.MULTILINE)  # the partner (the person) said it
    assert "Outcome: act goal not reached" in text and "transcript: outputs/play/" in capsys.readouterr().out
