import random

import pytest
import torch

from lq.data import load_demos, load_quests
from lq.envs.dungeon_master import DungeonMaster
from lq.envs.episode import SELF_INDENT, QuestInstance, instances_from_data
from lq.envs.partner import PolyEncoderPartner, ScriptedPartner
from lq.envs.quest_env import QuestEnv
from lq.envs.replay import demonstration_turns
from lq.generate import generate_dataset
from lq.models.poly_encoder import PolyEncoder, TextBatcher
from lq.models.pretrained import load_tokenizer
from tests.samples import demo_json, quest_json, tiny_encoder_spec

TINY = tiny_encoder_spec()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("env") / "data"
    generate_dataset(out, scale="tiny", seed=7, log=lambda _: None)  # has all three completions
    quests, demos = load_quests(out / "quests"), load_demos(out / "demos")
    return quests, demos


@pytest.fixture(scope="module")
def batcher():
    return TextBatcher(load_tokenizer(), 128, 24)


def _model(seed=0):
    torch.manual_seed(seed)
    return PolyEncoder.from_spec(TINY, n_codes=4).eval()


def _spaces(demos):
    every = demos.all()
    utterances = sorted({a.text for d in every for a in d.acts if a.type == "speech"})
    actions = sorted({a.text for d in every for a in d.acts if a.type == "action"})
    return utterances, actions


def _replay(instance, dm, actions, batcher):
    """Play a demonstration's own turns: the partner scripted with its turns, the agent with the self's."""
    acts = instance.demo.acts
    partner = ScriptedPartner([[(a.type, a.text) for a in acts[0::2]]])
    env = QuestEnv([instance], partner, dm, actions, batch_size=1, max_steps=50, auto_reset=False)
    obs, infos = env.reset([0])
    n = len(instance.demo_utterances)
    expected_speech, total_act, total_speech, said = 0.0, 0.0, 0.0, set()
    for act in acts[1::2]:
        top_k = set(dm.rank(obs)[0, : dm.top_k].tolist())
        if act.type == "speech":
            expected_speech += (act.text not in said) / (2 * n) + (dm.utterances.index[act.text] in top_k) / (2 * n)
            said.add(act.text)
        obs, rewards, dones, infos = env.step([(act.type, act.text)])
        total_act += infos[0]["act_reward"]
        total_speech += infos[0]["speech_reward"]
        assert rewards[0] == pytest.approx(infos[0]["act_reward"] + infos[0]["speech_reward"])
        if dones[0]:
            return infos[0]["episode"], total_act, total_speech, expected_speech, said
    return env.episode_summary(env.slots[0]), total_act, total_speech, expected_speech, said


def test_replaying_demonstrations_earns_the_paper_rewards(data, batcher):
    quests, demos = data
    utterances, actions = _spaces(demos)
    dm = DungeonMaster(_model(1), batcher, utterances, top_k=10, num_valid=50)
    instances = instances_from_data(quests.all(), demos.all())
    assert len(instances) == len(demos.all())
    seen = set()
    for inst in instances:
        episode, act, speech, expected, said = _replay(inst, dm, actions, batcher)
        completion = inst.demo.conv_extra["completion"]
        assert episode["act_goal_by"] == completion  # the recorded goal, by the recorded role
        assert act == (1.0 if completion else 0.0)
        assert speech == pytest.approx(expected)
        if completion is None:  # the whole demonstration is played: every utterance of it is said once
            assert len(said) == len(inst.demo_utterances)
            assert speech >= 0.5 - 1e-9 and episode["speech_goal"]
        seen.add(completion)
    assert seen == {None, "self", "partner"}


@pytest.mark.parametrize("objects", [False, True])
def test_demonstration_turns_show_what_the_environment_shows(data, batcher, objects):
    """Behaviour cloning's examples: a replay's contexts and valid actions equal the environment's, turn by turn;
    with ``objects`` the context names every object a valid "get" or "steal" action takes, and the partner's side
    never sees the objects line (its models are trained without it)."""
    quests, demos = data
    utterances, actions = _spaces(demos)
    dm = DungeonMaster(_model(1), batcher, utterances, top_k=10, num_valid=50)
    takes = 0
    for inst in instances_from_data(quests.all(), demos.train)[:6]:
        turns = demonstration_turns(inst, objects=objects)
        acts = inst.demo.acts
        env = QuestEnv(
            [inst], ScriptedPartner([[(a.type, a.text) for a in acts[0::2]]]), dm, actions, 1, 50, objects=objects
        )
        obs, infos = env.reset([0])
        for turn in turns:
            assert turn.context == obs[0] and turn.valid_actions == infos[0]["valid_actions"]
            lines = dict(line.split(" ", 1) for line in turn.context.split("\n") if line.startswith("_"))
            for action in turn.valid_actions:
                verb, _, rest = action.partition(" ")
                if verb == "get" and " from " not in rest:
                    takes += 1
                    assert (rest in lines.get("_setting_objects", "").split(", ")) == objects
                elif verb == "steal":
                    thing = rest.split(" from ")[0]
                    assert (thing in lines.get("_partner_carrying", "").split(", ")) == objects
            assert "_setting_objects" not in env.context(env.slots[0], "partner")
            obs, _, dones, infos = env.step([(turn.kind, turn.text)])
        assert dones[0] == (inst.demo.conv_extra["completion"] is not None)
        assert [(t.kind, t.text) for t in turns] == [
            ("action" if a.type == "action" else "speech", a.text) for a in acts[1::2]
        ][: len(turns)]
    assert takes > 0  # some room object could be taken


def _repeat_env(batcher, **kwargs):
    from lq.data import Demonstration, Quest

    quest = Quest.from_json(quest_json(), quest_id="egg")
    inst = QuestInstance(quest, Demonstration.from_json(demo_json()), "dragon_1", "knight_2")
    line = inst.demo_utterances[0]
    dm = DungeonMaster(_model(), batcher, [line, "Hello."], top_k=2, num_valid=2)  # everything is in the top k
    env = QuestEnv([inst], ScriptedPartner([[("speech", "Hm.")] * 9]), dm, [], batch_size=1, max_steps=8, **kwargs)
    env.reset([0])
    return env, line, len(inst.demo_utterances)


def test_the_speech_reward_cannot_be_farmed_by_repeating_a_line(batcher):
    """Repeating a top-ranked demonstration utterance earns its demonstration and top-k terms once, then nothing."""
    env, line, n = _repeat_env(batcher)
    rewards = [env.step([("speech", line)])[1][0] for _ in range(4)]
    assert rewards == pytest.approx([1 / n, 0.0, 0.0, 0.0])
    assert env.step([("speech", "Hello.")])[1][0] == pytest.approx(1 / (2 * n))  # a new top-k line pays its bonus
    assert env.slots[0].speech_reward == pytest.approx(env.slots[0].speech_score) == pytest.approx(3 / (2 * n))


def test_the_literal_top_k_reading_pays_every_repeat_but_not_the_speech_score(batcher):
    env, line, n = _repeat_env(batcher, top_k_every_repeat=True)
    rewards = [env.step([("speech", line)])[1][0] for _ in range(3)]
    assert rewards == pytest.approx([1 / n, 1 / (2 * n), 1 / (2 * n)])  # demonstration + top k, then top k again
    assert env.slots[0].speech_score == pytest.approx(1 / n)


def test_the_dm_ranks_only_before_speech_turns(batcher):
    env, line, n = _repeat_env(batcher)
    calls = []
    rank = env.dm.rank
    env.dm.rank = lambda contexts: calls.append(len(contexts)) or rank(contexts)
    env.step([("action", "hug knight")])
    assert calls == []  # an action needs no ranking
    first = env.valid_utterances([0])
    assert sorted(first[0]) == [0, 1] and env.valid_utterances([0]) == first
    env.step([("speech", line)])  # ranked already for this context: not again
    assert calls == [1]
    env.step([("speech", "Hello.")])  # a new context, not asked for: the step ranks it
    assert calls == [1, 1]


def test_partner_act_completion_earns_the_act_reward(batcher):
    from lq.data import Quest

    quest = Quest.from_json(quest_json(), quest_id="egg")
    quest.goal = "steal golden dragon egg from knight"
    inst = QuestInstance(quest, None, "dragon_1", "knight_2")
    partner = ScriptedPartner([[("speech", "Who goes there?"), ("action", "give golden dragon egg to dragon")]])
    dm = DungeonMaster(_model(), batcher, ["Please, give me the egg.", "Hello."], top_k=1, num_valid=2)
    env = QuestEnv([inst], partner, dm, ["steal golden dragon egg from knight"], batch_size=1, auto_reset=False)
    obs, infos = env.reset([0])
    assert "steal golden dragon egg from knight" in infos[0]["valid_actions"]
    assert infos[0]["valid_action_ids"] == [0]
    obs, rewards, dones, infos = env.step([("speech", "Please, give me the egg.")])
    assert rewards == [1.0] and dones == [True]
    assert infos[0]["episode"]["act_goal_by"] == "partner" and infos[0]["act_reward"] == 1.0
    lines = infos[0]["episode"]["transcript"].splitlines()
    # the paper's appendix layout: setting, partner, self, motivation, then the partner's turns on the left and
    # the agent's to the right
    assert lines[0] == "Quest egg (goal: steal golden dragon egg from knight)"
    assert [line.split()[0] for line in lines[1:9]] == [
        "Setting",
        "Partner:",
        "Persona",
        "Carrying",
        "Self:",
        "Persona",
        "Carrying",
        "Motivation",
    ]
    assert lines[2] == "Partner:    knight." and lines[4] == "  Carrying  golden dragon egg"
    assert lines[5] == "Self:       dragon." and lines[8] == f"Motivation  {quest.short_motivation}"
    assert f"{SELF_INDENT}dragon: Please, give me the egg." in lines
    assert "knight: Who goes there?" in lines
    assert "knight > give golden dragon egg to dragon    [You give the golden dragon egg to the dragon.]" in lines


def test_random_agent_rarely_reaches_act_goals(data, batcher):
    quests, demos = data
    utterances, actions = _spaces(demos)
    test = instances_from_data(quests.all(), demos.test)
    partner = PolyEncoderPartner(_model(2), batcher, utterances, actions)
    dm = DungeonMaster(_model(3), batcher, utterances)
    env = QuestEnv(test, partner, dm, actions, batch_size=len(test), max_steps=20, auto_reset=False)
    env.reset(list(range(len(test))))
    rng = random.Random(0)
    finished: dict[int, dict] = {}
    for _ in range(20):
        commands = [
            ("speech", rng.choice(utterances)) if rng.random() < 0.5 else ("action", rng.choice(actions)) for _ in test
        ]
        _, _, dones, infos = env.step(commands)
        for i, (done, info) in enumerate(zip(dones, infos, strict=True)):
            if done and i not in finished:
                finished[i] = info["episode"]
    assert len(finished) == len(test)
    rate = sum(e["act_goal"] for e in finished.values()) / len(test)
    assert rate <= 0.34, rate


def test_auto_reset_starts_a_new_quest(data, batcher):
    quests, demos = data
    utterances, actions = _spaces(demos)
    instances = instances_from_data(quests.all(), demos.train)
    partner = PolyEncoderPartner(_model(2), batcher, utterances, actions)
    env = QuestEnv(
        instances, partner, DungeonMaster(_model(3), batcher, utterances), actions, batch_size=4, max_steps=2, seed=1
    )
    obs, infos = env.reset()
    assert len(obs) == 4 and all("_self_name" in o for o in obs)
    env.step(["hello"] * 4)
    obs, rewards, dones, infos = env.step(["hello"] * 4)
    assert dones == [True] * 4 and all("episode" in i and i["steps"] == 0 for i in infos)
    # episodes are numbered in the order they started: the first four, then the four that replaced them
    assert [i["episode"]["serial"] for i in infos] == [0, 1, 2, 3]
    assert [s.serial for s in env.slots] == [4, 5, 6, 7] and env.started == 8
    with pytest.raises(ValueError, match="3 commands for 4"):
        env.step(["hello"] * 3)


def _checkpoint(path, seed):
    from dataclasses import asdict

    from lq.models.encoder import EncoderConfig

    model = _model(seed)
    torch.save(
        {
            "state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
            "hyper_parameters": {"encoder": asdict(EncoderConfig("tiny", TINY)), "n_codes": 4},
        },
        path,
    )
    return model


def test_build_env_from_checkpoints(data, tmp_path, tmp_path_factory):
    from lq.envs.models import load_poly_encoder
    from lq.envs.spec import EnvSpec

    saved = _checkpoint(tmp_path / "partner.ckpt", 5)
    _checkpoint(tmp_path / "dm.ckpt", 6)
    loaded, spec = load_poly_encoder(tmp_path / "partner.ckpt")
    assert spec == TINY and all(
        torch.equal(a, b) for a, b in zip(saved.state_dict().values(), loaded.state_dict().values(), strict=True)
    )
    assert not any(p.requires_grad for p in loaded.parameters())
    data_dir = next(tmp_path_factory.getbasetemp().glob("env*/data"))
    spec = EnvSpec(data_dir, tmp_path / "partner.ckpt", tmp_path / "dm.ckpt", top_k=5, num_valid_utterances=7)
    env = spec.build("test", batch_size=2, max_steps=3)
    assert (env.batch_size, env.max_steps, env.dm.top_k, env.dm.num_valid) == (2, 3, 5, 7)
    env = spec.replace(top_k=10, num_valid_utterances=50).build("test", batch_size=2, max_steps=3)
    obs, infos = env.reset()
    assert len(obs) == 2 and [len(ids) for ids in env.valid_utterances([0, 1])] == [50, 50]
    assert [env.instances[info["instance"]].quest.quest_id for info in infos] == [i["quest_id"] for i in infos]
    with pytest.raises(FileNotFoundError, match="make partner"):
        load_poly_encoder(tmp_path / "missing.ckpt")


def _two_rooms_env(batcher, partner_turns):
    """The egg quest with a crypt beside the lair (category Graveyard); the partner's turns are scripted."""
    from lq.data import Demonstration, Quest

    graph = quest_json()["data"]["graph"]
    graph["nodes"]["lair_0"]["category"] = "Cave"
    graph["nodes"]["lair_0"]["neighbors"] = {"crypt_4": {"target_id": "crypt_4", "label": "a dark stair"}}
    graph["nodes"]["crypt_4"] = {
        "node_id": "crypt_4",
        "name": "crypt",
        "name_prefix": "the",
        "room": True,
        "agent": False,
        "object": False,
        "classes": ["room"],
        "category": "Graveyard",
        "desc": "Cold stone and old bones.",
        "container_node": {"target_id": "VOID"},
        "contained_nodes": {},
        "neighbors": {"lair_0": {"target_id": "lair_0", "label": "a dark stair"}},
    }
    graph["rooms"].append("crypt_4")
    quest = Quest.from_json(quest_json(graph), quest_id="egg")
    inst = QuestInstance(quest, Demonstration.from_json(demo_json()), "dragon_1", "knight_2")
    line = inst.demo_utterances[0]
    dm = DungeonMaster(_model(), batcher, [line, "Hello."], top_k=2, num_valid=2)
    env = QuestEnv([inst], ScriptedPartner([partner_turns]), dm, [], batch_size=1, max_steps=8, auto_reset=False)
    return env, inst, line


def test_the_context_follows_the_self_character_into_another_room(batcher):
    """After a move, the agent reads the room it is in (its category and description), no longer the partner, and
    no longer what the partner says from the other room; the partner no longer hears it."""
    env, inst, line = _two_rooms_env(batcher, [("speech", "Who goes there?"), ("speech", "Come back, beast!")] * 3)
    obs, infos = env.reset([0])
    assert f"_setting_name {inst.demo.room_category}" in obs[0] and "_partner_name knight" in obs[0]
    assert "go crypt" in infos[0]["valid_actions"]
    assert not env.slots[0].left_start  # the partner's turn, a line said where both stand, moves no one
    obs, rewards, dones, infos = env.step([("action", "go crypt")])
    assert env.slots[0].left_start
    assert "_setting_name Graveyard" in obs[0] and "_setting_desc Cold stone and old bones." in obs[0]
    assert "_partner_name" not in obs[0] and "_partner_persona" not in obs[0]
    assert "_partner_say Who goes there?" in obs[0]  # heard before leaving
    assert "Come back, beast!" not in obs[0]  # said in the lair after the dragon left
    partner_view = env.context(env.slots[0], "partner")
    assert "_setting_name Cave" in partner_view and "_partner_name" not in partner_view
    assert "_partner_act go crypt" in partner_view  # the knight saw the dragon leave
    obs, rewards, dones, infos = env.step([("speech", line)])  # a demonstration line said to no one
    assert rewards == [0.0] and not infos[0]["speech_goal"]
    assert line not in env.context(env.slots[0], "partner")
    assert f"_self_say {line}" in obs[0]  # the agent knows what it said
    assert "go dragon's lair" in infos[0]["valid_actions"]
    obs, rewards, dones, infos = env.step([("action", "go dragon's lair")])
    assert f"_setting_name {inst.demo.room_category}" in obs[0] and "_partner_name knight" in obs[0]
    assert "_partner_act go dragon's lair" in env.context(env.slots[0], "partner")  # seen arriving
    obs, rewards, dones, infos = env.step([("speech", line)])  # together again: heard and paid
    assert rewards[0] > 0 and infos[0]["speech_goal"]
    from lq.envs.episode import new_slot
    from lq.eval import EvalResult

    left, stayed = env.episode_summary(env.slots[0]), env.episode_summary(new_slot(inst))
    assert left["left_start"] and not stayed["left_start"]  # back in the lair, it still counts as one that left
    assert EvalResult.of([left, stayed, stayed, stayed]).metrics("test/")["test/left_start_rate"] == 0.25


def test_the_context_and_look_show_what_each_carries_now(batcher):
    """After the knight gives the egg away, neither the context nor a player's ``look`` lists it with the knight."""
    from lq.envs.episode import new_slot, scene

    env, inst, line = _two_rooms_env(batcher, [("action", "give golden dragon egg to dragon")] * 3)
    env.objects = True
    opening = new_slot(inst)
    before = env.context(opening)
    assert "_partner_carrying golden dragon egg" in before and "_self_carrying" not in before
    card = "\n".join(scene(opening, "self"))
    assert "Here:       knight, carrying golden dragon egg" in card
    obs, infos = env.reset([0])  # the knight gives the egg on its first turn
    assert "_self_carrying golden dragon egg" in obs[0] and "_partner_carrying" not in obs[0]
    look = scene(env.slots[0], "self")
    assert "You:        dragon, carrying golden dragon egg" in look
    assert "Here:       knight, carrying Nothing." in look
    env.step([("action", "go crypt")])
    assert "Not here:   knight (in dragon's lair)" in scene(env.slots[0], "self")


def test_a_goal_is_credited_on_the_turn_that_makes_it_true_and_quests_it_cannot_be_are_reported(batcher):
    """A self character that already carries the goal's object reached it with any action (`hug knight` credited
    "get golden dragon egg"), and a goal on a fixture loaded without a word; now the environment credits the turn
    that makes the goal true, and the loader reports both kinds of quest (lq data stats counts them)."""
    import copy

    from lq.data import Quest
    from lq.envs.episode import goal_problem, new_slot, play_turn
    from tests.samples import tiny_graph

    graph = copy.deepcopy(tiny_graph())  # the dragon carries the egg from the start
    graph["nodes"]["knight_2"]["contained_nodes"] = {}
    graph["nodes"]["dragon_1"]["contained_nodes"] = {"egg_3": {"target_id": "egg_3"}}
    graph["nodes"]["egg_3"]["container_node"] = {"target_id": "dragon_1"}
    quest = Quest.from_json(quest_json(graph), quest_id="held")
    quest.goal = "get golden dragon egg"
    held = QuestInstance(quest, None, "dragon_1", "knight_2")
    assert "holds before any turn" in goal_problem(held)
    slot = new_slot(held)
    assert play_turn(slot, "self", "action", "hug knight") == 0.0 and slot.act_goal is None
    play_turn(slot, "self", "action", "drop golden dragon egg")
    assert play_turn(slot, "self", "action", "get golden dragon egg") == 1.0 and slot.act_goal == "self"

    fixture = copy.deepcopy(tiny_graph())
    fixture["nodes"]["egg_3"]["gettable"] = False
    quest = Quest.from_json(quest_json(fixture), quest_id="fixture")
    quest.goal = "get golden dragon egg"
    fixed = QuestInstance(quest, None, "dragon_1", "knight_2")
    assert "'golden dragon egg' is not gettable in its graph" in goal_problem(fixed)


def test_what_a_side_sees_and_may_do_is_made_once_a_turn_and_anew_after_each(batcher):
    """The valid actions and the context of a side are kept between turns (an ended episode is observed every step
    until its batch ends) and made anew once any turn is played, speech included: never a stale listing."""
    from lq.envs.episode import new_slot, play_turn, slot_context, slot_valid_actions
    from lq.world import valid_actions

    _, inst, _ = _two_rooms_env(batcher, [("speech", "hello")] * 3)
    slot = new_slot(inst)
    first = slot_valid_actions(slot, "self")
    assert slot_valid_actions(slot, "self") is first  # kept: no turn played
    assert "give golden dragon egg to dragon" in slot_valid_actions(slot, "partner")
    context = slot_context(slot, "self", ("short",))
    play_turn(slot, "partner", "action", "give golden dragon egg to dragon")
    now = slot_valid_actions(slot, "self")
    assert now is not first and now == valid_actions(slot.world, slot.me)
    assert "drop golden dragon egg" in now and "drop golden dragon egg" not in first
    assert "give golden dragon egg to dragon" not in slot_valid_actions(slot, "partner")
    assert slot_context(slot, "self", ("short",)) != context
    said = slot_context(slot, "self", ("short",))
    play_turn(slot, "self", "speech", "thank you")  # the world is the same; what the self character heard is not
    assert "thank you" in slot_context(slot, "self", ("short",)) and "thank you" not in said
    assert slot_context(slot, "self", ("short", "mid")) != slot_context(slot, "self", ("short",))
    import pickle

    again = pickle.loads(pickle.dumps(slot))  # an RL checkpoint's rollout keeps the slot, not what it holds
    assert again.seen == {} and slot.seen and list(slot_valid_actions(again, "self")) == list(now)
    state = {k: v for k, v in slot.__dict__.items() if k != "seen"}  # a slot pickled before the cache was
    old = object.__new__(type(slot))
    old.__setstate__(state)
    assert slot_context(old, "self", ("short",)) == slot_context(slot, "self", ("short",))
