import subprocess
import sys

import pytest

from lq.cli import main
from lq.data import Demonstration, Quest, Splits, write_demos, write_quests
from lq.data.stats import compute_stats, dataset_stats, find_dataset
from tests.samples import demo_json, quest_json


def _dataset(root):
    q = [Quest.from_json(quest_json(), quest_id=f"q{i}") for i in range(7)]
    write_quests(Splits(q[:4], q[4:5], q[5:]), root / "quests")
    demos = [Demonstration.from_json(demo_json(n, str(i))) for i, n in enumerate([6, 13, 13, 8])]
    write_demos(Splits(demos[:2], demos[2:3], demos[3:]), root / "demos")
    return root


def test_stats_by_hand(tmp_path):
    stats = dataset_stats(_dataset(tmp_path))
    assert (stats["quests/train"], stats["quests/valid"], stats["quests/test"], stats["quests/total"]) == (4, 1, 2, 7)
    assert (stats["demos/train"], stats["demos/valid"], stats["demos/test"]) == (2, 1, 1)
    assert stats["mean turns per demo"] == pytest.approx((6 + 13 + 13 + 8) / 4)
    assert stats["mean actions per demo"] == 1.0  # one action (turn 3) in every sample demo
    assert stats["mean utterances per demo"] == pytest.approx((5 + 12 + 12 + 7) / 4)
    assert stats["distinct actions"] == 1
    # "utterance 3" never occurs (turn 3 is the action); tags make demos distinct except where they repeat
    assert stats["distinct utterances"] == 5 + 12 + 12 + 7
    assert stats["share of utterances distinct"] == 1.0


def test_repeated_utterances_lower_the_distinct_share():
    d = Demonstration.from_json(demo_json(6, "same"))
    stats = compute_stats(None, Splits([d, d], [], []))
    assert stats["distinct utterances"] == 5 and stats["share of utterances distinct"] == 0.5


def test_finds_each_layout(tmp_path):
    root = _dataset(tmp_path)
    assert find_dataset(root).quests == root / "quests"
    assert find_dataset(root / "quests").quests == root / "quests"
    assert find_dataset(root / "demos").demos == root / "demos"
    assert find_dataset(root / "demos" / "train.json").demos == root / "demos" / "train.json"


def test_cli_prints_figures_beside_the_paper(tmp_path, capsys):
    assert main(["data", "stats", str(_dataset(tmp_path))]) == 0
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if row.startswith("mean turns per demo"))
    assert line.split()[-2:] == ["10.00", "12.92"]
    assert "quests/total" in out and "7486" in out
    assert main(["data", "stats", str(tmp_path / "missing")]) == 1
    assert "not found" in capsys.readouterr().err


def test_python_dash_m_entry_point(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "lq", "data", "stats", str(_dataset(tmp_path))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "demos/total" in out


def test_stats_reports_a_demonstration_whose_own_goal_is_not_its_quests_and_a_goal_naming_nothing(tmp_path, capsys):
    """``lq data stats`` on a generated dataset with one test demonstration's ``conv_info.goal`` changed and one test
    quest's goal naming an absent object: each is reported once, with what to do."""
    import json

    from lq.generate import generate_dataset

    root = tmp_path / "data"
    generate_dataset(root, scale="tiny", seed=3, log=lambda _: None)
    demos = json.loads((root / "demos" / "test.json").read_text())
    first, second = demos[0]["conv_info"], demos[1]["conv_info"]
    first["goal"] = "hug nobody at all"
    (root / "demos" / "test.json").write_text(json.dumps(demos))
    quest_file = root / "quests" / "test" / f"{second['quest_id']}.json"
    quest = json.loads(quest_file.read_text())
    quest["data"]["goal"] = second["goal"] = "get silver unicorn horn"
    quest_file.write_text(json.dumps(quest))
    (root / "demos" / "test.json").write_text(json.dumps(demos))
    assert main(["data", "stats", str(root)]) == 0
    out = capsys.readouterr().out
    assert (
        "unlinked: 1 (its conv_info.goal is not its quest's goal: link it to the quest it plays, or fix the goal; "
        f"first: test.json record 0: 'hug nobody at all', its quest {first['quest_id']}" in out
    )
    problem = next(line for line in out.splitlines() if "cannot play" in line)
    assert problem.count("goal 'get silver unicorn horn'") == 1  # said once, not twice
    assert "no object 'silver unicorn horn' in this world; name one of its objects (" in problem
    assert "or add it to the quest's graph" in problem
