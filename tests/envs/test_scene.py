"""Which characters and places a line names and whether they are in its scene (lq.envs.scene), and the opt-in filter
of the partner's and the Dungeon Master's utterances by it (issue 63)."""

import pytest
import torch

from lq.data import Demonstration, Quest
from lq.envs.dungeon_master import DungeonMaster
from lq.envs.episode import QuestInstance, new_slot, play_turn
from lq.envs.partner import PolyEncoderPartner
from lq.envs.scene import (
    SceneFilter,
    absent_names,
    context_names,
    in_scene,
    named,
    names_of,
    rooms_by_desc,
    scene_names,
)
from lq.models.poly_encoder import PolyEncoder, TextBatcher
from lq.models.pretrained import load_tokenizer
from tests.samples import demo_json, quest_json, tiny_encoder_spec

KNOWN = ["young cook", "cook", "old ranger", "ranger", "squire", "king", "toll bridge", "road", "ballroom",
         "king's road", "castle", "old cook"]  # fmt: skip
SCENE = ["young cook", "squire", "toll bridge", "road"]  # the young cook and the squire on the toll bridge (Road)


def _instance() -> QuestInstance:
    """The egg quest (dragon and knight in the dragon's lair, category Cave), with a crypt (Graveyard) beside it, a
    cat in the crypt, and an old wizard elsewhere."""
    graph = quest_json()["data"]["graph"]
    graph["nodes"]["lair_0"]["category"] = "Cave"
    graph["nodes"]["lair_0"]["neighbors"] = {"crypt_4": {"target_id": "crypt_4", "label": "a dark stair"}}
    room = {"room": True, "agent": False, "object": False, "classes": ["room"], "name_prefix": "the"}
    graph["nodes"]["crypt_4"] = {
        **room,
        "node_id": "crypt_4",
        "name": "crypt",
        "category": "Graveyard",
        "desc": "Cold stone and  old bones.",
        "container_node": {"target_id": "VOID"},
        "contained_nodes": {"cat_5": {"target_id": "cat_5"}, "wizard_6": {"target_id": "wizard_6"}},
        "neighbors": {"lair_0": {"target_id": "lair_0", "label": "a dark stair"}},
    }
    agent = {"room": False, "agent": True, "object": False, "classes": ["agent"], "contained_nodes": {}}
    graph["nodes"]["cat_5"] = {**agent, "node_id": "cat_5", "name": "cat", "persona": "Meow.",
                               "container_node": {"target_id": "crypt_4"}}  # fmt: skip
    graph["nodes"]["wizard_6"] = {**agent, "node_id": "wizard_6", "name": "Old  Wizard", "persona": "I cast.",
                                  "container_node": {"target_id": "crypt_4"}}  # fmt: skip
    graph["rooms"].append("crypt_4")
    graph["agents"] += ["cat_5", "wizard_6"]
    quest = Quest.from_json(quest_json(graph), quest_id="egg")
    return QuestInstance(quest, Demonstration.from_json(demo_json()), "dragon_1", "knight_2")


def test_the_names_are_the_worlds_characters_and_rooms_with_their_categories_but_no_short_word():
    instance = _instance()
    names = names_of([instance])
    assert names == sorted(["dragon", "knight", "old wizard", "dragon's lair", "cave", "crypt", "graveyard"])
    assert "cat" not in names and "golden dragon egg" not in names  # a three-letter name, an object
    assert names_of([instance.quest]) == names  # quests or instances
    assert rooms_by_desc([instance])["Cold stone and old bones."] == ("crypt", "graveyard")


def test_a_line_names_the_longest_names_it_holds_as_whole_words_in_any_case():
    assert named("By the gods, Old  Ranger!", KNOWN) == ["old ranger"]  # not also "ranger"
    assert named("The young cook cooks for the cook.", KNOWN) == ["young cook", "cook"]  # "cooks" is no name
    assert named("Take the king's road, then see the king's men.", KNOWN) == ["king's road", "king"]
    assert named("Kingdom of castles", KNOWN) == []
    assert named("anything", []) == []


def test_absent_names_are_those_not_in_the_scene_nor_part_of_a_name_there():
    assert absent_names("By the gods, old ranger!", SCENE, KNOWN) == ["old ranger"]
    assert absent_names("What brings you to ballroom?", SCENE, KNOWN) == ["ballroom"]
    assert absent_names("Hello, cook. Nice bridge, squire.", SCENE, KNOWN) == []  # the young cook; "bridge": no name
    assert absent_names("You are no old cook.", SCENE, KNOWN) == ["old cook"]  # another character
    assert absent_names("The king's road runs over the toll bridge.", SCENE, KNOWN) == []  # Road holds it
    assert absent_names("The King and the CASTLE.", SCENE, KNOWN) == ["king", "castle"]
    assert absent_names("The old ranger.", ["Ranger"], KNOWN) == []  # holds a name of the scene
    assert in_scene("cook", ["young cook"]) and not in_scene("cook", ["cookery"])


def test_the_scene_is_the_two_characters_and_the_speakers_room():
    slot = new_slot(_instance())
    category = slot.instance.demo.room_category.lower()  # the setting name the opening room's context reads
    assert scene_names(slot, "partner") == sorted({"dragon", "knight", "dragon's lair", "cave", category})
    with_objects = scene_names(slot, "self", objects=True)
    assert "golden dragon egg" in with_objects  # the knight carries it
    play_turn(slot, "self", "action", "go crypt")
    assert scene_names(slot, "self") == ["crypt", "dragon", "graveyard", "knight"]  # the dragon's own room
    assert "crypt" not in scene_names(slot, "partner")  # the knight stayed in the lair


def test_a_context_tells_its_scene_by_its_names_and_its_rooms_description():
    rooms = rooms_by_desc([_instance()])
    context = "_setting_name Graveyard\n_setting_desc Cold stone and old bones.\n_self_name knight\n_self_say Hi."
    assert context_names(context, rooms) == ["crypt", "graveyard", "knight"]
    context += "\n_partner_name dragon\n_self_carrying golden dragon egg, shield"
    assert context_names(context) == ["dragon", "graveyard", "knight"]
    assert context_names(context, objects=True)[-2:] == ["knight", "shield"]


CONTEXT = "_setting_name Road\n_setting_desc A narrow bridge.\n_self_name squire\n_partner_name young cook"
ROOMS = {"A narrow bridge.": ("road", "toll bridge")}
LINES = ["By the gods, old ranger!", "Hello there, cook.", "What brings you to ballroom?", "Good day.",
         "Is the toll bridge open?", "Hail, castle folk."]  # fmt: skip


def test_the_filter_ranks_the_lines_naming_someone_absent_below_the_others_in_their_order():
    scene_filter = SceneFilter(KNOWN, LINES, ROOMS)
    assert sorted(scene_filter.named) == [0, 1, 2, 4, 5]  # "Good day." names no one
    assert scene_filter.unfit([CONTEXT]).tolist() == [[True, False, True, False, False, True]]
    scores = torch.tensor([[6.0, 1.0, 5.0, 0.5, 0.0, 4.0]])
    demoted = scene_filter.demote(scores, [CONTEXT])
    assert demoted.argsort(descending=True)[0].tolist() == [1, 3, 4, 0, 2, 5]
    scene_filter.demote(scores, [CONTEXT, CONTEXT.replace("squire", "old ranger")])
    assert len(scene_filter._unfit) == 2  # computed once per scene
    fitting = SceneFilter(KNOWN, ["Good day.", "Hello, squire.", "Off the road!"], ROOMS)
    assert fitting.demote(scores[:, :3], [CONTEXT]) is not None
    assert fitting.demote(scores[:, :3], [CONTEXT]).equal(scores[:, :3])  # nothing to move


@pytest.fixture(scope="module")
def batcher():
    return TextBatcher(load_tokenizer(), 128, 24)


NAMES = ["wizard", "jester", "baker", "ranger", "miner", "bard", "healer", "knight", "dragon"]
HAILS = [f"Hail, {name}!" for name in NAMES] + ["Good day to you.", "Hm."]
FACE_TO_FACE = "_setting_name Cave\n_self_name knight\n_partner_name dragon\n_partner_say Who goes there?"


def test_with_the_filter_the_partner_says_its_best_line_naming_no_one_absent_and_acts_as_before(batcher):
    """Of seeds whose partner's best line hails someone absent, with the filter it says its best line that does not,
    acting or speaking as without it; without the filter it is the same partner as before the option existed."""
    scene_filter = SceneFilter(NAMES, HAILS)
    unfit = scene_filter.unfit([FACE_TO_FACE])[0]
    assert unfit.tolist() == [True] * 7 + [False] * 4  # the knight and the dragon are there
    tried = 0
    for seed in range(20):
        torch.manual_seed(seed)
        model = PolyEncoder.from_spec(tiny_encoder_spec(), n_codes=4).eval()
        plain = PolyEncoderPartner(model, batcher, HAILS, ["hug dragon", "hit dragon"])
        scores = plain.utterances.score(plain._encode([FACE_TO_FACE]))[0]
        if not unfit[int(scores.argmax())]:
            continue
        tried += 1
        filtered = PolyEncoderPartner(model, batcher, HAILS, ["hug dragon", "hit dragon"], scene_filter=scene_filter)
        fitting = int(scores.masked_fill(unfit, float("-inf")).argmax())
        assert plain.act([FACE_TO_FACE], [[]]) == [("speech", HAILS[int(scores.argmax())])]
        assert filtered.act([FACE_TO_FACE], [[]]) == [("speech", HAILS[fitting])]
        valid = [["hug dragon", "hit dragon"]]
        gaps, _, actions = plain.choices([FACE_TO_FACE], valid)
        assert filtered.choices([FACE_TO_FACE], valid)[0].equal(gaps)  # acting or speaking: decided as before
        assert filtered.choices([FACE_TO_FACE], valid)[2] == actions
        plain.scene_filter = SceneFilter(["unicorn"], HAILS)  # no line names anyone it knows: nothing changes
        assert plain.choices([FACE_TO_FACE], valid)[1][0] == ("speech", HAILS[int(scores.argmax())])
        if tried == 3:
            break
    assert tried == 3


def test_with_the_filter_the_dm_ranks_the_lines_naming_someone_absent_last(batcher):
    torch.manual_seed(0)
    model = PolyEncoder.from_spec(tiny_encoder_spec(), n_codes=4).eval()
    plain = DungeonMaster(model, batcher, HAILS, top_k=2, num_valid=len(HAILS))
    ranked = plain.rank([FACE_TO_FACE])[0].tolist()
    scene_filter = SceneFilter(NAMES, HAILS)
    filtered = DungeonMaster(model, batcher, HAILS, top_k=2, num_valid=len(HAILS), scene_filter=scene_filter)
    unfit = set(range(7))
    expected = [i for i in ranked if i not in unfit] + [i for i in ranked if i in unfit]
    assert filtered.rank([FACE_TO_FACE])[0].tolist() == expected
    assert plain.scene_filter is None


@pytest.mark.slow
def test_the_spec_builds_the_filter_only_when_asked(tmp_path):
    """``EnvSpec(scene_filter=True)`` gives the partner and the DM one filter over the utterance space, after the
    partner's calibration (the same calibration either way); the default builds none."""
    from lq.envs.spec import EnvSpec
    from lq.generate import generate_dataset
    from tests.envs.test_quest_env import _checkpoint

    generate_dataset(tmp_path / "data", scale="tiny", seed=7, log=lambda _: None)
    _checkpoint(tmp_path / "partner.ckpt", 5)
    _checkpoint(tmp_path / "dm.ckpt", 6)
    spec = EnvSpec(tmp_path / "data", tmp_path / "partner.ckpt", tmp_path / "dm.ckpt")
    assert spec.scene_filter is False and EnvSpec.of(spec.as_dict()) == spec
    plain = spec.build("test", batch_size=2, max_steps=3)
    assert plain.partner.scene_filter is None and plain.dm.scene_filter is None
    env = spec.replace(scene_filter=True).build("test", batch_size=2, max_steps=3)
    assert env.partner.scene_filter is env.dm.scene_filter and env.partner.scene_filter.size == len(env.utterance_space)
    calibration = (plain.partner.action_bias, plain.partner.listen_weight)
    assert (env.partner.action_bias, env.partner.listen_weight) == calibration
    env.reset()
    assert len(env.valid_utterances([0, 1])[0]) == env.dm.num_valid
