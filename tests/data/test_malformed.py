"""Property tests: malformed input to every loader raises DataFormatError and nothing else."""

import copy
import csv
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lq.data import (
    DataFormatError,
    load_atomic_csv,
    load_demo_file,
    load_light_db,
    load_quest,
    load_world_graph,
    write_atomic_csv,
)
from lq.data.atomic import RELATIONS, AtomicEvent
from tests.samples import demo_json, quest_json, tiny_graph

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)

ROOMS = [{"category": "Cave", "name": "The lair", "description": "Dark.", "id": 1}]
CHARACTERS = [
    {
        "char_type": "person",
        "name": "knight",
        "persona": ["I am a knight."],
        "id": 2,
        "description": "A knight.",
        "emojis": [],
    }
]
OBJECTS = [{"base_form": ["egg"], "name": "golden egg", "descripton": ["It shines."], "id": 3, "emojis": []}]


def _write_db(root: Path, rooms, characters, objects) -> Path:
    for name, value in (("rooms.json", rooms), ("characters.json", characters), ("objects.json", objects)):
        (root / name).write_text(json.dumps(value))
    return root


def _load_db_with(which: str) -> Callable[[Path, object], object]:
    def load(root: Path, value: object) -> object:
        files = {"rooms": ROOMS, "characters": CHARACTERS, "objects": OBJECTS}
        files[which] = value
        return load_light_db(_write_db(root, files["rooms"], files["characters"], files["objects"]))

    return load


def _load_file(loader: Callable[[Path], object], name: str) -> Callable[[Path, object], object]:
    def load(root: Path, value: object) -> object:
        (root / name).write_text(json.dumps(value))
        return loader(root / name)

    return load


# (name, valid record, loader taking a folder and the JSON value to write)
CASES = [
    ("rooms", ROOMS, _load_db_with("rooms")),
    ("characters", CHARACTERS, _load_db_with("characters")),
    ("objects", OBJECTS, _load_db_with("objects")),
    ("world_graph", tiny_graph(), _load_file(load_world_graph, "world.json")),
    ("quest", quest_json(), _load_file(load_quest, "quest.json")),
    ("demonstrations", [demo_json(6)], _load_file(load_demo_file, "wild.json")),
]


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _set(value, path, new):
    if not path:
        return new
    out = copy.deepcopy(value)
    target = out
    for key in path[:-1]:
        target = target[key]
    if new is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = new
    return out


_DELETE = object()


def _check(load, value) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            load(Path(tmp), value)
        except DataFormatError as err:
            assert err.path and err.path in str(err)


@pytest.mark.parametrize(("name", "valid", "load"), CASES, ids=[c[0] for c in CASES])
def test_valid_sample_loads(name, valid, load):
    with tempfile.TemporaryDirectory() as tmp:
        load(Path(tmp), valid)


@pytest.mark.parametrize(("name", "valid", "load"), CASES, ids=[c[0] for c in CASES])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_value_anywhere_raises_only_data_format_error(name, valid, load, data):
    paths = list(_paths(valid))
    path = data.draw(st.sampled_from(paths), label="path")
    new = data.draw(json_values | st.just(_DELETE) if path else json_values, label="new value")
    _check(load, _set(valid, path, new))


@pytest.mark.parametrize(("name", "valid", "load"), CASES, ids=[c[0] for c in CASES])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_removing_a_required_field_is_reported_by_name(name, valid, load, data):
    required = {
        "rooms": [(0, "id"), (0, "name"), (0, "category"), (0, "description")],
        "characters": [(0, "id"), (0, "name"), (0, "persona"), (0, "char_type"), (0, "description")],
        "objects": [(0, "id"), (0, "name"), (0, "base_form"), (0, "descripton")],
        "world_graph": [
            ("nodes",),
            ("nodes", "egg_3", "node_id"),
            ("nodes", "egg_3", "container_node"),
            ("nodes", "lair_0", "name"),
        ],
        "quest": [
            ("data", k)
            for k in (
                "character",
                "goal",
                "timeline",
                "short_motivation",
                "mid_motivation",
                "long_motivation",
                "persona",
                "description",
            )
        ],
        "demonstrations": [
            (0, "conv_info"),
            (0, "conv_info", "acts"),
            (0, "conv_info", "characters"),
            (0, "conv_info", "room"),
            (0, "conv_info", "acts", 2, "type"),
        ],
    }[name]
    path = data.draw(st.sampled_from(required))
    with tempfile.TemporaryDirectory() as tmp, pytest.raises(DataFormatError) as info:
        load(Path(tmp), _set(valid, path, _DELETE))
    assert str(path[-1]) in str(info.value) and "missing" in str(info.value)


@pytest.mark.parametrize(("name", "valid", "load"), CASES, ids=[c[0] for c in CASES])
@settings(max_examples=40, deadline=None)
@given(cut=st.integers(min_value=1, max_value=10_000))
def test_truncated_json_raises_data_format_error(name, valid, load, cut):
    text = json.dumps(valid)
    cut = cut % (len(text) - 1) + 1
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "broken.json"
        target.write_text(text[:cut])
        loader = {"quest": load_quest, "world_graph": load_world_graph, "demonstrations": load_demo_file}.get(name)
        if loader is None:  # the DB loaders read a folder
            _write_db(Path(tmp), ROOMS, CHARACTERS, OBJECTS)
            (Path(tmp) / f"{name}.json").write_text(text[:cut])
            with pytest.raises(DataFormatError, match="invalid JSON"):
                load_light_db(Path(tmp))
        else:
            with pytest.raises(DataFormatError, match="invalid JSON"):
                loader(target)


@settings(max_examples=150, deadline=None)
@given(
    row=st.integers(min_value=0, max_value=1), column=st.integers(min_value=0, max_value=11), cell=st.text(max_size=30)
)
def test_atomic_any_cell_raises_only_data_format_error(row, column, cell):
    events = [
        AtomicEvent("PersonX gets a sword", {r: ["none"] for r in RELATIONS}, ["gets"], "trn"),
        AtomicEvent("PersonX hits PersonY", {r: ["to fight"] for r in RELATIONS}, ["hits"], "dev"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v4_atomic_trn.csv"
        write_atomic_csv(events, path)
        lines = path.read_text().splitlines()
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
        rows[row + 1][column] = cell
        buffer = io.StringIO()
        csv.writer(buffer).writerows(rows)
        path.write_text(buffer.getvalue())
        try:
            load_atomic_csv(path)
        except DataFormatError as err:
            assert str(path) in str(err)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=200))
def test_atomic_arbitrary_text_raises_only_data_format_error(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v4.csv"
        path.write_text(text)
        try:
            load_atomic_csv(path)
        except DataFormatError:
            pass
