import json

import pytest

from lq.data import DataFormatError, Quest, Splits, load_quest, load_quests, write_quest, write_quests
from tests.samples import quest_json


def _quest(quest_id="q0", **changes) -> Quest:
    q = Quest.from_json(quest_json(), quest_id=quest_id)
    for k, v in changes.items():
        setattr(q, k, v)
    return q


def test_quest_stem_round_trips_unchanged(tmp_path):
    raw = quest_json()
    raw["data"]["extra_field"] = {"kept": True}
    (tmp_path / "q.json").write_text(json.dumps(raw))
    q = load_quest(tmp_path / "q.json")
    write_quest(q, tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == raw
    again = load_quest(tmp_path / "again.json")
    again.quest_id = q.quest_id
    assert again == q


def test_quest_with_real_world_graph_round_trips(light_worlds, tmp_path):
    graph = json.loads(light_worlds[0].read_text())
    raw = quest_json(graph)
    (tmp_path / "q.json").write_text(json.dumps(raw))
    q = load_quest(tmp_path / "q.json")
    assert len(q.graph.nodes) == len(graph["nodes"])
    write_quest(q, tmp_path / "q.json")
    assert json.loads((tmp_path / "q.json").read_text()) == raw


def test_graph_embedded_as_string_stays_a_string(tmp_path):
    raw = quest_json()
    raw["data"]["graph"] = json.dumps(raw["data"]["graph"])
    q = Quest.from_json(raw, quest_id="s")
    assert q.graph_as_string and q.graph is not None
    out = q.to_json()["data"]["graph"]
    assert isinstance(out, str) and json.loads(out) == json.loads(raw["data"]["graph"])


def test_goal_is_inserted_at_index_three():
    q = _quest()
    assert len(q.timeline) == 6 and len(q.full_timeline) == 7
    assert q.full_timeline[3].action == "hit knight" and q.full_timeline[3].label == "now"
    assert q.timeline_actions[:3] == [s.action for s in q.timeline[:3]]
    assert q.timeline_actions[4:] == [s.action for s in q.timeline[3:]]


def test_split_folders_are_read_as_written(tmp_path):
    splits = Splits([_quest(f"t{i}") for i in range(5)], [_quest("v0")], [_quest("s0"), _quest("s1")])
    write_quests(splits, tmp_path / "quests")
    back = load_quests(tmp_path / "quests")
    assert back.counts() == {"train": 5, "valid": 1, "test": 2}
    assert sorted(q.quest_id for q in back.test) == ["s0", "s1"]
    with pytest.raises(FileExistsError):
        write_quests(splits, tmp_path / "quests")
    write_quests(Splits([_quest("only")], [], []), tmp_path / "quests", overwrite=True)
    assert load_quests(tmp_path / "quests").counts() == {"train": 1, "valid": 0, "test": 0}


def test_flat_release_folder_splits_like_the_original_builder(tmp_path):
    for i in range(25):
        write_quest(_quest(f"quest_{i:03d}"), tmp_path / "stems" / f"quest_{i:03d}.json")
    first = load_quests(tmp_path / "stems")
    assert first.counts() == {"train": 16, "valid": 2, "test": 7}  # x = int(0.1 * 25) = 2
    again = load_quests(tmp_path / "stems")
    assert [q.quest_id for q in first.all()] == [q.quest_id for q in again.all()]
    assert sorted(q.quest_id for q in first.all()) == [f"quest_{i:03d}" for i in range(25)]


def test_failed_write_leaves_nothing_behind(tmp_path):
    bad = _quest("")
    with pytest.raises(ValueError, match="quest_id"):
        write_quests(Splits([_quest("a"), bad], [], []), tmp_path / "quests")
    assert list(tmp_path.iterdir()) == []


def test_malformed_files_can_be_skipped_with_a_warning(tmp_path):
    write_quest(_quest("good"), tmp_path / "good.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DataFormatError, match="bad.json"):
        load_quests(tmp_path)
    with pytest.warns(UserWarning, match="skipped 1 malformed"):
        assert len(load_quests(tmp_path, skip_invalid=True).all()) == 1


@pytest.mark.parametrize(
    ("mutate", "field", "text"),
    [
        (lambda d: d["data"].update(timeline=[]), "timeline", "has 0 steps"),
        (lambda d: d["data"]["timeline"].pop(), "timeline", "has 5 steps"),
        (lambda d: d["data"].pop("goal"), "goal", "missing"),
        (lambda d: d["data"].update(goal=""), "goal", "empty"),
        (lambda d: d["data"]["timeline"][2].update(action=5), "timeline[2].action", "expected a string"),
        (lambda d: d["data"].update(long_motivation=["x"]), "long_motivation", "expected a string"),
        (lambda d: d.pop("data"), "data", "missing"),
    ],
)
def test_bad_quest_names_file_and_field(tmp_path, mutate, field, text):
    raw = quest_json()
    mutate(raw)
    (tmp_path / "quest_7.json").write_text(json.dumps(raw))
    with pytest.raises(DataFormatError) as info:
        load_quest(tmp_path / "quest_7.json")
    assert info.value.field == field and text in str(info.value) and "quest_7.json" in str(info.value)
