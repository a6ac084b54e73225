import json

import pytest

from lq.data import DataFormatError, LightDB, load_light_db, write_light_db
from lq.data.light_db import Character, LightObject, Room


def test_real_light_db_loads_into_typed_records(light_env):
    db = load_light_db(light_env)
    assert (len(db.rooms), len(db.characters), len(db.objects)) == (661, 1755, 3462)
    assert all(isinstance(r, Room) and r.name for r in db.rooms)
    assert all(isinstance(c, Character) and isinstance(c.persona, list) for c in db.characters)
    assert all(isinstance(o, LightObject) and isinstance(o.base_form, list) for o in db.objects)
    assert {r.category for r in db.rooms} >= {"Inside Church"}


def test_real_light_db_writes_back_unchanged(light_env, tmp_path):
    db = load_light_db(light_env)
    write_light_db(db, tmp_path)
    for name in ("rooms.json", "characters.json", "objects.json"):
        assert json.loads((tmp_path / name).read_text()) == json.loads((light_env / name).read_text())
    assert load_light_db(tmp_path) == db


def test_small_db_round_trip(tmp_path):
    db = LightDB(
        rooms=[Room(1, "The rectory", "Inside Church", "Small and cramped.")],
        characters=[Character(2, "priest", "person", ["I pray."], "A priest.", ["x"], {"is_plural": 0})],
        objects=[LightObject(3, "candle", ["candle"], ["It flickers."])],
    )
    write_light_db(db, tmp_path)
    assert load_light_db(tmp_path) == db
    assert "descripton" in json.loads((tmp_path / "objects.json").read_text())[0]


@pytest.mark.parametrize(
    ("file", "content", "field"),
    [
        ("rooms.json", [{"name": "r", "category": "c", "description": "d"}], "id"),
        ("rooms.json", [{"id": "1", "name": "r", "category": "c", "description": "d"}], "id"),
        (
            "characters.json",
            [{"id": 1, "name": "x", "char_type": "person", "persona": "not a list", "description": "d"}],
            "persona",
        ),
        ("objects.json", [{"id": 1, "name": "x", "base_form": ["x"], "descripton": [3]}], "descripton[0]"),
    ],
)
def test_bad_record_names_file_record_and_field(tmp_path, file, content, field):
    write_light_db(LightDB([Room(0, "r", "c", "d")], [], []), tmp_path)
    (tmp_path / file).write_text(json.dumps(content))
    with pytest.raises(DataFormatError) as info:
        load_light_db(tmp_path)
    err = info.value
    assert err.path.endswith(file) and err.record == 0 and err.field == field
    assert file in str(err) and field in str(err) and "Fix:" in str(err)


def test_duplicate_ids_rejected(tmp_path):
    write_light_db(LightDB([Room(0, "a", "c", "d"), Room(0, "b", "c", "d")], [], []), tmp_path)
    with pytest.raises(DataFormatError, match="duplicate id 0"):
        load_light_db(tmp_path)


def test_missing_directory(tmp_path):
    with pytest.raises(DataFormatError, match="not found"):
        load_light_db(tmp_path / "nope")
