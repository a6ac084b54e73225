"""The public LIGHT-Quests release in LIGHT's layout: raw game logs and processed demonstrations, linked to stems."""

import json
import shutil

import pytest

from lq.cli import main
from lq.data import DataFormatError
from lq.data.dataset import check_dataset, dataset_id, link_dataset, load_dataset
from lq.data.release import (
    FILTERED_SCORE,
    PROCESSED,
    RAW_LOGS,
    STEMS,
    load_raw_logs,
    write_raw_logs,
)
from lq.envs.episode import instances_from_data, playable_instances
from lq.generate import generate_dataset
from tests.release import write_release


@pytest.fixture(scope="module")
def release_src(tmp_path_factory):
    root = tmp_path_factory.mktemp("release")
    generate_dataset(root / "lq", scale="tiny", seed=3, log=lambda _: None)
    write_release(root / "lq", root / "light")
    return root


@pytest.fixture
def release(release_src, tmp_path):
    shutil.copytree(release_src / "light", tmp_path / "light")
    return tmp_path / "light"


def _logs(root):
    return json.loads((root / RAW_LOGS).read_text())


def test_raw_game_logs_round_trip_with_their_unknown_fields(release, tmp_path):
    raw = _logs(release)
    raw[0]["hit_id"], raw[0]["dialogue"][1]["duration"], raw[0]["location"]["room_id"] = "h1", 3, 9
    (release / RAW_LOGS).write_text(json.dumps(raw))
    write_raw_logs(load_raw_logs(release / RAW_LOGS), tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == raw


def test_raw_logs_are_filtered_split_and_linked_as_the_preprocess_does(release):
    raw = _logs(release)
    dataset = load_dataset(release)
    report = dataset.report
    assert dataset.layout == "release" and report.source.endswith("perfect2.json")
    assert report.filtered[FILTERED_SCORE] == 1  # the one log scored 3
    assert report.total == len(raw) == report.linked + sum(report.filtered.values()) + sum(report.unlinked.values())
    kept = report.linked + report.filtered["beyond the ten tenths of the split"]
    assert report.split == {"train": kept // 10 * 8, "valid": kept // 10, "test": kept // 10}
    demos = dataset.demos.all()
    # who spoke comes from the turn's id: in log 0 the human (the self character) speaks first
    first = next(d for d in demos if d.conv_extra["quest_file"] == raw[0]["location"]["quest_file"])
    assert first.speaker(0) == "self" and first.acts[0].text == raw[0]["dialogue"][1]["text"]
    assert all(a.type != "choice" for d in demos for a in d.acts)
    stems = dataset.quests_by_id()
    for d in demos:
        graph = stems[d.conv_extra["quest_id"]].graph
        assert graph.nodes[d.conv_extra["self_id"]].kind == "agent"
        assert d.conv_extra["goal"] == stems[d.conv_extra["quest_id"]].goal
    instances = instances_from_data(dataset.quests.all(), demos)
    assert len(instances) == len(demos)


def test_processed_demonstrations_link_by_goal_and_motivation(release):
    processed = json.loads((release / PROCESSED).read_text())
    processed[0]["conv_info"]["characters"][1][1]["goal"] = "juggle three moons"
    (release / PROCESSED).write_text(json.dumps(processed))
    stem_of_1 = release / STEMS / _logs(release)[1]["location"]["quest_file"]  # the files list the same games
    shutil.copy(stem_of_1, stem_of_1.with_name("copy_" + stem_of_1.name))  # two stems now match demonstration 1
    dataset = load_dataset(release, "processed")
    report = dataset.report
    assert report.unlinked["no stem has its goal and motivation"] == 1
    assert report.unlinked["ambiguous: several stems have its goal, motivation and name"] >= 1
    assert "juggle three moons" in report.examples["no stem has its goal and motivation"]
    assert report.linked == len(processed) - sum(report.unlinked.values())
    d = dataset.demos.train[0]
    assert d.self_character.key_name == d.self_character.name and d.conv_extra["quest_id"] in dataset.quests_by_id()


def test_a_log_without_quest_file_names_the_field(release):
    raw = _logs(release)
    del raw[4]["location"]["quest_file"]
    (release / RAW_LOGS).write_text(json.dumps(raw))
    with pytest.raises(DataFormatError, match=r"perfect2.json, record 4, field 'location.quest_file': missing"):
        load_dataset(release)


def test_stems_without_a_graph_or_a_playable_goal_are_counted_not_played(release, tmp_path):
    raw = _logs(release)
    stems = release / STEMS
    no_graph, bad_goal = (stems / raw[i]["location"]["quest_file"] for i in (0, 3))
    for path, edit in ((no_graph, lambda d: d.pop("graph")), (bad_goal, lambda d: d.update(goal="get unicorn horn"))):
        stem = json.loads(path.read_text())
        edit(stem["data"])
        path.write_text(json.dumps(stem))
    (release / RAW_LOGS).write_text(json.dumps(raw))
    dataset = load_dataset(release)
    assert dataset.report.unlinked["its quest has no graph"] >= 1
    _, problems = playable_instances(dataset.quests.all(), dataset.demos.all())
    assert problems and bad_goal.name in problems[0] and "get unicorn horn" in problems[0]
    with pytest.warns(UserWarning, match="cannot be played; first: .*get unicorn horn"):
        instances_from_data(dataset.quests.all(), dataset.demos.all())


def test_stats_print_what_became_of_every_demonstration(release, capsys):
    assert main(["data", "stats", str(release)]) == 0
    out = capsys.readouterr().out
    dataset = load_dataset(release)
    train = next(line for line in out.splitlines() if line.startswith("demos/train"))
    assert train.split()[1:] == [str(dataset.report.split["train"]), "1800"]
    assert f"{dataset.report.linked} linked to their quests" in out
    assert "filtered: 1 (score < 10" in out and "formatted_wild_completions.json" in out
    assert "cannot play: 0" in out


def test_link_writes_lq_layout_that_reads_back_the_same(release, tmp_path):
    assert main(["data", "link", str(release), str(tmp_path / "linked")]) == 0
    again = load_dataset(tmp_path / "linked")
    original = load_dataset(release)
    assert again.layout == "lq" and again.report.split == original.report.split
    assert [d.to_json() for d in again.demos.all()] == [d.to_json() for d in original.demos.all()]
    assert json.loads((tmp_path / "linked" / "link-report.json").read_text())["filtered"][FILTERED_SCORE] == 1
    # a malformed release writes nothing
    raw = _logs(release)
    raw[2]["dialogue"][1]["type"] = "dance"
    (release / RAW_LOGS).write_text(json.dumps(raw))
    with pytest.raises(DataFormatError, match=r"record 2, field 'dialogue\[1\].type': unknown turn type 'dance'"):
        link_dataset(release, tmp_path / "broken")
    assert not (tmp_path / "broken").exists() and not list(tmp_path.glob(".broken*"))


def test_a_checkpoint_is_refused_on_another_dataset(release_src, release):
    made_on = {"lq_dataset": dataset_id(release_src / "lq")}
    check_dataset(made_on, "partner.ckpt", release_src / "lq")
    with pytest.raises(ValueError, match="partner.ckpt was trained on dataset lq-.* never reused on another"):
        check_dataset(made_on, "partner.ckpt", release)
    check_dataset({}, "old.ckpt", release)  # from before checkpoints recorded their dataset
