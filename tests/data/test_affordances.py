import pytest

from lq.cli import main
from lq.data import load_world_graph
from lq.data.affordances import evaluate, head_and_rest, infer


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("rusty sword", {"wieldable"}),
        ("cloak of midnight blue", {"wearable"}),
        ("bottle of wine", {"container", "drink"}),
        ("basket of apples", {"container", "food"}),
        ("loaf of bread", {"food"}),
        ("towering pine trees", set()),
    ],
)
def test_infer(name, expected):
    got = infer(name).as_dict()
    assert {a for a, v in got.items() if v and a != "gettable"} == expected
    assert got["gettable"] == (name != "towering pine trees")


def test_base_forms_count():
    assert infer("Long skinny trees", ["Long skinny tree", "tree"]).gettable is False
    assert infer("Shiny thing", ["helmet"]).wearable


def test_head_noun():
    assert head_and_rest("mug of mead") == ("mug", ["mead"])
    assert head_and_rest("large wooden stage") == ("stage", [])


def test_against_the_labelled_worlds(light_worlds, capsys):
    scores = evaluate(load_world_graph(p) for p in light_worlds)
    # Regression floor on crowd labels (noisy: "apple tree" is labelled food, drink and container).
    assert scores["wearable"].precision > 0.9 and scores["wearable"].recall > 0.7
    assert scores["wieldable"].recall > 0.8 and scores["gettable"].precision > 0.95
    assert main(["data", "affordances", str(light_worlds[0].parent)]) == 0
    out = capsys.readouterr().out
    assert "precision" in out and "container" in out
