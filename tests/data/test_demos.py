import json

import pytest

from lq.data import DataFormatError, Demonstration, Splits, load_demo_file, load_demos, write_demo_file, write_demos
from tests.samples import demo_json


def test_demonstration_file_round_trips_unchanged(tmp_path):
    raw = [demo_json(6, "a"), demo_json(13, "b")]
    raw[0]["conv_info"]["acts"][0]["message_id"] = "m-0"
    raw[1]["conv_info"]["room"]["extra"] = 1
    (tmp_path / "demos.json").write_text(json.dumps(raw))
    demos = load_demo_file(tmp_path / "demos.json")
    write_demo_file(demos, tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == raw
    assert load_demo_file(tmp_path / "again.json") == demos


def test_turns_alternate_partner_then_self():
    d = Demonstration.from_json(demo_json(6))
    assert [d.speaker(i) for i in range(4)] == ["partner", "self", "partner", "self"]
    assert d.partner.name == "knight" and d.self_character.name == "dragon"
    assert [a.text for a in d.self_acts("action")] == ["get golden dragon egg"]
    assert d.count("speech") == 5 and d.acts[3].actions[0] == "get golden dragon egg"


def test_speaker_comes_from_the_act_id_where_the_file_gives_it():
    raw = demo_json(4)
    for act, who in zip(raw["conv_info"]["acts"], [4, 4, 17, 4], strict=True):  # the human (self, id 4) speaks first
        act["id"] = who
    d = Demonstration.from_json(raw)
    assert [d.speaker(i) for i in range(4)] == ["self", "self", "partner", "self"]
    assert [a.text for a in d.self_acts()] == ["utterance 0", "utterance 1", "get golden dragon egg"]


def test_release_characters_keyed_by_name_and_id_round_trip(tmp_path):
    raw = demo_json(4)
    chars = raw["conv_info"]["characters"]
    chars[0][0], chars[1][0] = ["knight", "17_agent"], ["dragon", "4_agent"]
    chars[1][1]["goal"], chars[1][1]["motivation_type"] = "get golden dragon egg", "short"
    raw["conv_info"]["acts"][1]["id"] = "4_agent"
    (tmp_path / "release.json").write_text(json.dumps([raw]))
    (d,) = load_demo_file(tmp_path / "release.json")
    assert (d.partner.id, d.self_character.id, d.self_character.goal) == (
        "17_agent",
        "4_agent",
        "get golden dragon egg",
    )
    assert d.speaker(1) == "self" and d.partner.goal == ""
    write_demo_file([d], tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == [raw]


def test_two_characters_with_one_id_are_refused_naming_the_file_the_demonstration_and_the_id(tmp_path):
    """Loaded before, every act was credited to the self character."""
    raw = [demo_json(4), demo_json(4)]
    raw[1]["conv_info"]["characters"][1][0] = raw[1]["conv_info"]["characters"][0][0]
    (tmp_path / "d.json").write_text(json.dumps(raw))
    with pytest.raises(DataFormatError, match=r"the self character's id .* is the partner's too") as info:
        load_demo_file(tmp_path / "d.json")
    assert "d.json" in str(info.value) and info.value.record == 1 and info.value.field == "characters[1][0]"


def test_an_act_by_neither_character_is_named_in_the_error(tmp_path):
    raw = demo_json(4)
    raw["conv_info"]["acts"][2]["id"] = "wizard"
    (tmp_path / "d.json").write_text(json.dumps([raw]))
    with pytest.raises(DataFormatError, match=r"acts\[2\]\.id.*'wizard', who is neither character"):
        load_demo_file(tmp_path / "d.json")


def test_release_file_splits_in_order_like_the_original_builder(tmp_path):
    write_demo_file([Demonstration.from_json(demo_json(4, str(i))) for i in range(2111)], tmp_path / "all.json")
    splits = load_demos(tmp_path / "all.json")
    assert splits.counts() == {"train": 1688, "valid": 211, "test": 212}
    assert splits.train[0].acts[0].text == "utterance 00"


def test_split_folder(tmp_path):
    demos = [Demonstration.from_json(demo_json(4, str(i))) for i in range(4)]
    write_demos(Splits(demos[:2], demos[2:3], demos[3:]), tmp_path / "demos")
    assert load_demos(tmp_path / "demos").counts() == {"train": 2, "valid": 1, "test": 1}
    (tmp_path / "demos" / "valid.json").unlink()
    with pytest.raises(DataFormatError, match="missing valid.json"):
        load_demos(tmp_path / "demos")


@pytest.mark.parametrize(
    ("mutate", "field", "text"),
    [
        (lambda d: d["conv_info"]["acts"][2].update(type="dance"), "acts[2].type", "unknown act type 'dance'"),
        (lambda d: d["conv_info"].update(acts=[]), "acts", "no turns"),
        (lambda d: d["conv_info"]["acts"][1].pop("text"), "acts[1].text", "missing"),
        (lambda d: d["conv_info"]["acts"][1]["task_data"].update(actions="hit"), "acts[1].actions", "expected a list"),
        (lambda d: d["conv_info"]["characters"].pop(), "characters", "expected 2"),
        (lambda d: d["conv_info"]["characters"][1][1].pop("name"), "characters[1].name", "missing"),
        (lambda d: d["conv_info"]["room"].pop("category"), "category", "missing"),
    ],
)
def test_bad_demonstration_names_record_and_field(tmp_path, mutate, field, text):
    raw = [demo_json(4), demo_json(6)]
    mutate(raw[1])
    (tmp_path / "wild.json").write_text(json.dumps(raw))
    with pytest.raises(DataFormatError) as info:
        load_demo_file(tmp_path / "wild.json")
    err = info.value
    assert err.record == 1 and err.field == field and text in str(err) and "wild.json" in str(err)
