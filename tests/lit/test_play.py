"""Playing against a trained agent (``lq play --agent``) through standard input, and ``make play`` itself."""

import io
import os
import re
import subprocess
from pathlib import Path

import pytest

from lq.cli import main

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
        ["make", "-s", "play", f"DATA={tmp_path / 'data'}"],
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


def test_one_argument_names_what_to_play_a_quest_id_or_a_file_whatever_the_mode(tmp_path, monkeypatch, capsys):
    """Without an agent a quest id of --data plays that quest's file (as with --agent); with an agent a quest file
    plays its quest id; anything else is refused with what it takes. Each game's transcript has its own name."""
    from lq.cli import _quest_id, quest_file
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
