import pytest

from lq.data import AtomicEvent, DataFormatError, load_atomic_csv, write_atomic_csv
from lq.data.atomic import COLUMNS, RELATIONS

HEADER = ",".join(COLUMNS)
ROW = (
    '"PersonX puts PersonX\'s trust in PersonY",'
    + ",".join(['"[""none""]"'] * 8)
    + ',"[""rely on PersonY""]","[""puts"", ""trust""]",trn'
)


def test_atomic_csv_round_trip(tmp_path):
    events = [
        AtomicEvent(
            "PersonX gets a sword", {r: ["none"] for r in RELATIONS} | {"xWant": ["to fight"]}, ["gets", "sword"], "trn"
        ),
        AtomicEvent("PersonX hugs PersonY, warmly", {r: [] for r in RELATIONS}, [], "tst"),
    ]
    write_atomic_csv(events, tmp_path / "v4_atomic_trn.csv")
    assert load_atomic_csv(tmp_path / "v4_atomic_trn.csv") == events


def test_reads_the_release_layout(tmp_path):
    (tmp_path / "a.csv").write_text(HEADER + "\n" + ROW + "\n")
    [event] = load_atomic_csv(tmp_path / "a.csv")
    assert event.relations["xWant"] == ["rely on PersonY"] and event.prefix == ["puts", "trust"]


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("event,xWant\n", "oEffect", "header lacks"),
        (HEADER + "\n" + ROW.replace(",trn", ",train") + "\n", "split", "unknown split 'train'"),
        (HEADER + "\n" + ROW.replace('"[""rely on PersonY""]"', "rely") + "\n", "xWant", "JSON list"),
        (HEADER + "\n" + ROW.replace('"[""rely on PersonY""]"', '"[1]"') + "\n", "xWant", "JSON list"),
        (HEADER + "\nonly,three,cells\n", None, "has 3 cells"),
    ],
)
def test_bad_atomic_rows(tmp_path, text, field, message):
    (tmp_path / "v4.csv").write_text(text)
    with pytest.raises(DataFormatError) as info:
        load_atomic_csv(tmp_path / "v4.csv")
    assert info.value.field == field and message in str(info.value) and "v4.csv" in str(info.value)
