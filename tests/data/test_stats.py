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
