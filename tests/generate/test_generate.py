"""The embedded default: generated in the real formats, deterministic, consistent under the engine."""

import filecmp
import json

import pytest

from lq.cli import main
from lq.data import load_demos, load_quests
from lq.data.atomic_light import load_atomic_light
from lq.data.stats import dataset_stats
from lq.data.tfidf_retrieval import next_utterance_hits_at_1
from lq.generate import generate_dataset
from lq.world import ActGoal, World, step, valid_actions


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "tiny"
    generate_dataset(out, scale="tiny", seed=7, log=lambda _: None)
    return out


def _same_tree(a, b) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    match, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


def test_layout_and_counts(tiny):
    manifest = json.loads((tiny / "manifest.json").read_text())
    assert manifest["counts"]["quests"] == {"train": 48, "valid": 8, "test": 8}
    assert load_quests(tiny / "quests").counts() == manifest["counts"]["quests"]
    assert load_demos(tiny / "demos").counts() == {"train": 24, "valid": 6, "test": 6}
    assert len(load_demos(tiny / "episodes").all()) == 36
    assert len(load_atomic_light(tiny / "atomic_light").train) > 50
    assert all(json.loads(line)["dialogue"] for line in (tiny / "chitchat" / "train.jsonl").read_text().splitlines())
    stats = dataset_stats(tiny)
    assert stats["quests/total"] == 64 and stats["demos/total"] == 36


def test_same_seed_same_dataset_other_seed_other(tiny, tmp_path):
    generate_dataset(tmp_path / "again", scale="tiny", seed=7, log=lambda _: None)
    assert _same_tree(tiny, tmp_path / "again")
    generate_dataset(tmp_path / "other", scale="tiny", seed=8, log=lambda _: None)
    assert not _same_tree(tiny, tmp_path / "other")


def test_quest_timelines_are_coherent_under_the_engine(tiny):
    for quest in load_quests(tiny / "quests").all():
        world = World(quest.graph)
        me = world[quest.extra["self_id"]]
        assert len(quest.full_timeline) == 7 and quest.full_timeline[3].action == quest.goal
        goal = ActGoal.parse(world, quest.goal, me.id, quest.extra["partner_id"])
        assert not goal.satisfied(world)
        for action in quest.timeline_actions[3:]:  # the goal and the three future steps, in order
            assert action in valid_actions(world, me), (quest.quest_id, action)
            step(world, me, action)
        assert quest.short_motivation and quest.mid_motivation and quest.long_motivation


def test_every_demonstration_replays_through_the_engine(tiny):
    quests = {q.quest_id: q for q in load_quests(tiny / "quests").all()}
    completions = []
    for demo in load_demos(tiny / "demos").all():
        extra = demo.conv_extra
        quest = quests[extra["quest_id"]]
        world = World(quest.graph)
        me, partner = world[extra["self_id"]], world[extra["partner_id"]]
        goal = ActGoal.parse(world, quest.goal, me.id, partner.id)
        assert not goal.satisfied(world), extra["quest_id"]  # the generator never writes a goal that already holds
        reached = None
        for turn, act in enumerate(demo.acts):
            actor = partner if turn % 2 == 0 else me
            valid = valid_actions(world, actor)
            assert act.actions == list(valid)  # the recorded valid actions are the engine's
            if act.type == "action":
                assert act.text in valid, (extra["quest_id"], turn, act.text)
                held = goal.satisfied(world)
                result = step(world, actor, act.text)
                reached = reached or goal.reached_by(world, actor, result.action, held)
        assert reached == extra["completion"], extra["quest_id"]
        completions.append(reached)
    assert {"self", "partner"} <= set(completions)


def test_goal_free_episodes_replay(tiny):
    for episode in load_demos(tiny / "episodes").all():
        world = World.from_json(episode.conv_extra["graph"])
        actors = [world[episode.conv_extra["partner_id"]], world[episode.conv_extra["self_id"]]]
        assert episode.self_character.motivation == ""
        for turn, act in enumerate(episode.acts):
            if act.type == "action":
                assert step(world, actors[turn % 2], act.text).success


def test_dialogue_is_not_trivially_retrievable(tmp_path):
    generate_dataset(tmp_path / "d", scale="default", seed=0, log=lambda _: None)
    hits = next_utterance_hits_at_1(load_demos(tmp_path / "d" / "demos").test)
    assert 0.0 < hits < 0.6, hits


def test_cli_generate_and_refuse_to_clobber(tmp_path, capsys):
    assert main(["data", "generate", str(tmp_path / "x"), "--scale", "tiny"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert main(["data", "generate", str(tmp_path / "x"), "--scale", "tiny"]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["data", "generate", str(tmp_path / "y"), "--light-db", str(tmp_path / "nope")]) == 1
    assert not (tmp_path / "y").exists()


def test_generated_worlds_obey_the_size_rules(tiny):
    for quest in load_quests(tiny / "quests").all():
        world = World(quest.graph)
        for node in world.nodes.values():
            raw = quest.graph.nodes[node.id].raw
            assert "size" in raw and "contain_size" in raw, (quest.quest_id, node.id)
            assert node.contain_size >= 0, (quest.quest_id, node.id)
            if node.kind == "object" and node.is_container and node.gettable:
                assert node.size == 4 and node.contain_size + sum(c.size for c in node.contents.values()) == 3
            if node.kind == "agent":
                assert node.size == 20 and node.contain_size == 20 - sum(c.size for c in node.contents.values())


def test_generated_quests_have_rooms_to_walk_to_but_no_demonstration_walks(tiny):
    """What docs/deviations.md ("The agents never leave the starting room") says of generated data: every quest's
    self character can go somewhere, yet no demonstration turn is a ``go``, so the spaces built from them hold none."""
    from lq.data.dataset import load_dataset
    from lq.data.demos import demonstration_spaces

    for quest in load_quests(tiny / "quests").all():
        world = World(quest.graph)
        [me] = [n for n in world.nodes.values() if n.kind == "agent" and n.name == quest.character]
        assert any(a.verb == "go" for a in valid_actions(world, me).values()), quest.quest_id
    actions, _ = demonstration_spaces(load_dataset(str(tiny)).demos.all())
    assert actions and not [a for a in actions if a.split()[0] == "go"]
