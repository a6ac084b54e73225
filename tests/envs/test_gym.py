"""The Gymnasium environments: ``lq/Quest-v0`` passes Gymnasium's own checker on the default data, its episodes end
as the protocol says (terminated on goals, truncated at the turn limit), and the vector environment auto-resets."""

import re

import gymnasium
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import lq  # noqa: F401  (registers lq/Quest-v0)
from lq.conf.resolver import mark_finished
from lq.envs import calibration
from lq.envs.gym import FreeText
from lq.generate import generate_dataset
from tests.samples import tiny_env_models


@pytest.fixture(scope="module", autouse=True)
def one_calibration_setting():
    """The partner's calibration tries one setting of its 49 in this module: what it chooses is not what these tests
    read, and the 460 demonstrations of the default data replayed per setting took a minute. The setting is in the
    calibration's key, so every environment here reads the one the fixture below computes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(calibration, "SHARE_STEPS", calibration.SHARE_STEPS[:1])
        patch.setattr(calibration, "LISTEN_STEPS", calibration.LISTEN_STEPS[:1])
        yield


@pytest.fixture(scope="module")
def default_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("gym")
    generate_dataset(root / "data", scale="default", seed=0, log=lambda _: None)
    partner, dm = tiny_env_models(root)
    settings = {"data_dir": root / "data", "partner_checkpoint": partner, "dm_checkpoint": dm, "context_length": 64}
    gymnasium.make("lq/Quest-v0", **settings)  # the partner calibrated and the spaces encoded once, beside the models
    return settings


def test_check_env_passes_on_the_default_data(default_data):
    env = gymnasium.make("lq/Quest-v0", **default_data)
    check_env(env.unwrapped, skip_render_check=False)


def test_reset_seed_picks_the_quest_and_info_lists_what_to_choose(default_data):
    env = gymnasium.make("lq/Quest-v0", split="test", **default_data)
    firsts = {env.reset(seed=s)[1]["quest_id"] for s in range(8)}
    assert len(firsts) > 1  # the seed draws the quest
    obs, info = env.reset(seed=3)
    assert env.reset(seed=3) == (obs, info)
    assert info["valid_actions"] and len(info["valid_utterances"]) == 50
    assert not info["act_goal"] and info["act_goal_by"] is None and info["steps"] == 0
    assert "_self_say" not in obs.split("\n")[0]  # the context, header first


def test_the_goal_action_terminates_and_the_turn_limit_truncates(default_data):
    env = gymnasium.make("lq/Quest-v0", protocol="restricted", **default_data)
    quest = env.unwrapped.env.instances[0].quest
    obs, info = env.reset(options={"quest": quest.quest_id})
    for action in [a.text for a in env.unwrapped.env.instances[0].demo.self_acts("action")]:
        obs, reward, terminated, truncated, info = env.step(action)
        if info["act_goal"]:
            break
    assert info["act_goal_by"] == "self" and terminated and not truncated and reward >= 1.0

    with pytest.raises(ResetNeeded, match="this episode has ended .terminated or truncated.: call reset"):
        env.step(action)  # a terminated episode is not stepped again, silently or otherwise

    env = gymnasium.make("lq/Quest-v0", max_steps=3, **default_data)
    env.reset(seed=0)
    ends = [env.step("I have nothing to say.")[2:4] for _ in range(3)]
    assert ends == [(False, False), (False, False), (False, True)]
    with pytest.raises(ResetNeeded, match="this episode has ended"):
        env.step("I have nothing to say.")  # nor a truncated one
    env.reset(seed=0)
    assert env.step("I have nothing to say.")[4]["steps"] == 1  # a reset plays the next


def test_after_a_move_the_observation_names_the_room_the_agent_is_in(default_data):
    env = gymnasium.make("lq/Quest-v0", split="test", **default_data)
    for seed in range(20):  # a quest whose room has a way out
        obs, info = env.reset(seed=seed)
        moves = [a for a in info["valid_actions"] if a.startswith("go ")]
        if moves:
            break
    slot = env.unwrapped.env.slots[0]
    start = slot.me.room
    obs, *_ = env.step(moves[0])
    room = slot.me.room
    assert room is not start
    assert obs.split("\n")[0] == f"_setting_name {room.raw.get('category') or room.name}"
    assert f"_setting_desc {room.desc}" in obs
    assert f"_partner_name {slot.partner.name}" not in obs  # the partner stayed behind


def test_unknown_quest_and_missing_models_are_named(default_data, tmp_path, monkeypatch):
    env = gymnasium.make("lq/Quest-v0", **default_data)
    with pytest.raises(ValueError, match="not one of this environment's quests"):
        env.reset(options={"quest": "no-such-quest"})
    with pytest.raises(ValueError, match=r"options\['quest'\] = 1000000: this environment has quests 0 to 79"):
        env.reset(options={"quest": 10**6})
    monkeypatch.chdir(tmp_path)  # no outputs/ here
    with pytest.raises(FileNotFoundError, match=r"no partner trained on .* make partner dm DATA=.* \(or make quick"):
        gymnasium.make("lq/Quest-v0", data_dir=default_data["data_dir"])
    with pytest.raises(FileNotFoundError, match=r"data_dir='data/default' holds no dataset: make data"):
        gymnasium.make("lq/Quest-v0")


def test_each_bad_argument_is_named_with_its_fix_before_anything_loads(default_data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # neither data nor models: each error comes before they are looked for or loaded
    with pytest.raises(ValueError, match="render_mode 'human': lq/Quest-v0 renders 'ansi'"):
        gymnasium.make("lq/Quest-v0", render_mode="human")
    with pytest.raises(ValueError, match=r"unknown argument 'partner_ckpt' \(did you mean partner_checkpoint\?\)"):
        gymnasium.make("lq/Quest-v0", partner_ckpt="x.ckpt")
    with pytest.raises(ValueError, match=r"one quest at a time; for a batch: gymnasium.make_vec\('lq/Quest-v0', num_e"):
        gymnasium.make("lq/Quest-v0", batch_size=4)
    with pytest.raises(ValueError, match="protocol='papr': choose from"):
        gymnasium.make("lq/Quest-v0", protocol="papr")
    models = tmp_path / "models"
    models.mkdir()
    with pytest.raises(
        IsADirectoryError, match=r"partner_checkpoint='.*models' is a folder: name the checkpoint in it"
    ):
        gymnasium.make("lq/Quest-v0", data_dir=default_data["data_dir"], partner_checkpoint=models)


def test_arguments_checkable_from_themselves_are_refused_with_their_fix_before_anything_loads(tmp_path, monkeypatch):
    """A misspelt split, a setting of the wrong type, one quest id as a string: one line naming the argument and the
    fix, before the data or any model is looked for (none is here)."""
    from lq.envs.gym import SETTING_CHECKS, SETTINGS

    monkeypatch.chdir(tmp_path)
    bad = {
        "split='tset' (did you mean test?): choose from train, valid, test": {"split": "tset"},
        "context_length='long': must be a positive number of word pieces": {"context_length": "long"},
        "context_length=0: must be a positive number": {"context_length": 0},
        "max_steps=2.5: must be a positive number of agent turns, or None": {"max_steps": 2.5},
        "objects='yes': must be True or False": {"objects": "yes"},
        "partner_calibration='shares': must be one of 'share', 'completions'": {"partner_calibration": "shares"},
        "quests='test_00003': a list of quest ids, e.g. quests=['test_00003']": {"quests": "test_00003"},
        "quests=[]: a non-empty list of quest ids": {"quests": []},
    }
    for message, kwargs in bad.items():
        with pytest.raises(ValueError, match="^" + re.escape(f"lq/Quest-v0: {message}")):
            gymnasium.make("lq/Quest-v0", **kwargs)
    with pytest.raises(ValueError, match=r"^lq/Quest-v0: num_envs=0: a positive number of environments"):
        gymnasium.make_vec("lq/Quest-v0", num_envs=0, vectorization_mode="vector_entry_point")
    assert set(SETTING_CHECKS) == set(SETTINGS)  # every setting passed on is checked


def test_reset_takes_numpy_indices_and_a_failed_reset_leaves_no_episode_to_step(default_data):
    env = gymnasium.make("lq/Quest-v0", **default_data)
    assert env.reset(seed=0, options={"quest": np.int64(2)}) == env.reset(seed=0, options={"quest": 2})
    with pytest.raises(ValueError, match=r"options\['qeust'\]: reset takes options=\{'quest': INDEX_OR_ID\} only"):
        env.reset(options={"qeust": 2})
    with pytest.raises(ResetNeeded, match=r"no episode to step in: call reset\(\) first"):
        env.step("hello")  # not the episode before the failed reset
    fresh = gymnasium.make("lq/Quest-v0", env=env.unwrapped.env)  # a new Gymnasium environment, the same quests
    with pytest.raises(ValueError, match="is not one of this environment's quests"):
        fresh.reset(options={"quest": "tset_00001"})  # a first reset that fails ...
    fresh.reset(seed=0)
    assert fresh.step("hello")[4]["steps"] == 1  # ... leaves the next episode to play as any other


def test_with_no_arguments_it_plays_the_default_data_with_the_newest_trained_partner_and_dm(default_data, tmp_path,
                                                                                              monkeypatch):  # fmt: skip
    """As after make quickstart: data/default, and the partner and DM under outputs/quick/ whose runs finished; the
    context length the partner was trained at (in its checkpoint); the calibration and candidates kept beside them
    read, not written again: the environment the agents are evaluated in."""
    import shutil

    import torch

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "default").symlink_to(default_data["data_dir"])
    kept = {}
    for stage in ("partner", "dm"):
        saved = torch.load(default_data[f"{stage}_checkpoint"], map_location="cpu", weights_only=False)
        saved["lq_context_length"] = 64  # the fixture's, not the environment's default (256)
        kept[stage] = tmp_path / "outputs" / "quick" / stage / "small" / "best.ckpt"
        kept[stage].parent.mkdir(parents=True)
        torch.save(saved, kept[stage])
        mark_finished(kept[stage])
        shutil.copytree(default_data[f"{stage}_checkpoint"].parent / "candidates", kept[stage].parent / "candidates")
        stale = tmp_path / "outputs" / stage / "small" / "best.ckpt"  # an interrupted run's: not a trained model
        stale.parent.mkdir(parents=True)
        shutil.copy(kept[stage], stale)
    stores = sorted(p for stage in kept.values() for p in (stage.parent / "candidates").iterdir())
    before = [(p, p.stat().st_mtime_ns) for p in stores]
    env = gymnasium.make("lq/Quest-v0")
    quest_env = env.unwrapped.env
    assert quest_env.partner.batcher.context_length == 64 and quest_env.objects
    after = sorted(p for stage in kept.values() for p in (stage.parent / "candidates").iterdir())
    assert [(p, p.stat().st_mtime_ns) for p in after] == before  # read where the partner and DM are, none written
    partner = tmp_path / "outputs" / "partner" / "small"
    assert any("calibration" in p.name for p in stores) and not list(partner.glob("c*"))
    observation, info = env.reset(seed=0)  # Gymnasium's checker passes on this environment (the test above)
    assert env.observation_space.contains(observation)
    assert env.step(info["valid_actions"][0])[4]["steps"] == 1


def test_import_lq_registers_the_environment_and_imports_nothing_heavy():
    import subprocess
    import sys

    code = (
        "import sys, lq, gymnasium; spec = gymnasium.spec('lq/Quest-v0'); "
        "print(spec.entry_point, 'torch' in sys.modules, 'lq.envs' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["lq.envs.gym:QuestGymEnv", "False", "False"]


def test_free_text_space():
    space = FreeText(["hug dragon", "Who's there?"], seed=0)
    assert space.contains("Who's there? — ¡hola!") and not space.contains(3)
    assert {space.sample() for _ in range(20)} == {"hug dragon", "Who's there?"}
    assert not gymnasium.spaces.Text(100).contains("Who's there?")  # why lq has its own


def test_vector_env_resets_in_the_step_that_ends(default_data):
    envs = gymnasium.make_vec(
        "lq/Quest-v0", num_envs=3, vectorization_mode="vector_entry_point", max_steps=2, **default_data
    )
    obs, infos = envs.reset(seed=0)
    assert len(obs) == 3 and infos["_valid_actions"].all()
    envs.step(["hello"] * 3)
    obs, rewards, terminated, truncated, infos = envs.step(["hello"] * 3)
    assert truncated.all() and not terminated.any() and rewards.dtype == np.float64
    assert infos["_final_obs"].all() and all(o is not None for o in infos["final_obs"])
    assert (infos["final_info"]["steps"] == 2).all() and (infos["steps"] == 0).all()  # the new episodes


def test_with_no_arguments_the_dm_is_the_one_trained_beside_the_partner(tmp_path, monkeypatch):
    """A newer DM of another profile is not paired with the partner: their outputs (and calibration) stay one set."""
    import os

    import torch

    from lq.envs.gym import environment_arguments

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "default" / "quests").mkdir(parents=True)
    made = {}
    for age, (profile, stage) in enumerate([("quick", "dm"), ("quick", "partner"), ("tiny", "dm")]):
        made[profile, stage] = path = tmp_path / "outputs" / profile / stage / "small" / "best.ckpt"
        path.parent.mkdir(parents=True)
        torch.save({}, path)
        os.utime(path, (1_000_000 + age, 1_000_000 + age))  # tiny's DM the newest of all
        mark_finished(path)
    _, partner, dm, _ = environment_arguments(None, None, None, "paper", {})
    assert partner.resolve() == made["quick", "partner"] and dm.resolve() == made["quick", "dm"]


def test_with_no_arguments_it_works_after_checkpoints_of_another_dataset_exist(tmp_path, monkeypatch):
    """After training on other data (``DATA=data/seed7``: outputs/seed7/...), the newest partner and DM of any dataset
    were taken for data/default and then refused ("was trained on dataset seed7-..."); now those of data/default."""
    import os

    import torch

    from lq.data.dataset import dataset_id
    from lq.envs.gym import environment_arguments

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "default" / "quests").mkdir(parents=True)
    ours = dataset_id("data/default")
    made = {}
    for age, (where, stage, data) in enumerate(
        [("quick", "partner", ours), ("quick", "dm", ours), ("seed7", "partner", "seed7-0123456789ab"),
         ("seed7", "dm", "seed7-0123456789ab")]
    ):  # fmt: skip
        made[where, stage] = path = tmp_path / "outputs" / where / stage / "small" / "best.ckpt"
        path.parent.mkdir(parents=True)
        torch.save({"lq_dataset": data}, path)
        os.utime(path, (1_000_000 + age, 1_000_000 + age))  # seed7's the newest
        mark_finished(path)
    _, partner, dm, _ = environment_arguments(None, None, None, "paper", {})
    assert partner.resolve() == made["quick", "partner"] and dm.resolve() == made["quick", "dm"]
    for stage in ("partner", "dm"):
        made["quick", stage].unlink()
    with pytest.raises(FileNotFoundError, match=r"no partner trained on data/default under outputs/ \(those there "
                       r"were trained on other data: outputs/seed7/partner/small/best.ckpt, ...\): make partner dm"):
        environment_arguments(None, None, None, "paper", {})


def test_a_context_longer_than_the_environment_models_positions_is_refused_at_construction(default_data):
    """Read late it failed deep inside the model ("The expanded size of the tensor (538) must match ... (512)"); now one
    line names the field, the models' positions and the fix, before the data or a model loads, at every entry."""
    from lq.api import build_env
    from lq.envs.spec import EnvSpec
    from lq.models.encoder import spec_positions
    from tests.samples import tiny_encoder_spec

    limit = spec_positions(tiny_encoder_spec())
    too_long = {**default_data, "context_length": limit + 1}
    message = rf"context_length {limit + 1} exceeds the {limit} positions of the partner \(.*partner.ckpt\) and the "
    message += rf"Dungeon Master \(.*dm.ckpt\): give context_length {limit} or less"
    with pytest.raises(ValueError, match=message):
        gymnasium.make("lq/Quest-v0", **too_long)
    paths = {k: str(v) for k, v in too_long.items() if k.endswith(("_dir", "_checkpoint"))}
    spec = EnvSpec(**{**too_long, **paths})
    with pytest.raises(ValueError, match=message):
        build_env(spec)
    gymnasium.make("lq/Quest-v0", **{**default_data, "context_length": limit})  # the models' own length plays


def test_a_text_the_engine_parses_as_a_possible_action_is_that_action_and_the_rest_is_said(default_data):
    """Paraphrases of a valid action (case, articles, a verb's synonym) were recorded as speech; only the listed strings
    acted. Now they play the engine's canonical command; speech, and speech marked as such, stays speech."""
    env = gymnasium.make("lq/Quest-v0", **default_data)
    for seed in range(40):
        _, info = env.reset(seed=seed)
        gets = [a for a in info["valid_actions"] if a.startswith("get ") and " from " not in a]
        if gets:
            break
    command = gets[0]
    thing = command.removeprefix("get ")
    slot = env.unwrapped._slot
    for text in (f"Take the {thing}", f"GET THE {thing.upper()}", f"pick up {thing}"):
        env.reset(seed=seed)
        slot = env.unwrapped._slot
        env.step(text)
        mine = [t for t in slot.turns if t["side"] == "self"]
        assert (mine[-1]["kind"], mine[-1]["text"]) == ("action", command), text
    env.reset(seed=seed)
    slot = env.unwrapped._slot
    env.step("Hello there, friend.")
    env.step(("speech", f"take the {thing}"))
    said = [(t["kind"], t["text"]) for t in slot.turns if t["side"] == "self"]
    assert said == [("speech", "Hello there, friend."), ("speech", f"take the {thing}")]


def test_info_says_why_the_engine_refused_a_text_meant_as_a_command(default_data):
    env = gymnasium.make("lq/Quest-v0", **default_data)
    _, info = env.reset(seed=0)
    assert env.step("Hello there, friend.")[4]["refusal"] is None  # speech
    assert env.step(info["valid_actions"][0])[4]["refusal"] is None  # done
    info = env.step("get the lantern of nowhere")[4]  # a command the engine refuses: said, and why it was not done
    assert info["refusal"] == "You don't see 'lantern of nowhere' here."
    slot = env.unwrapped._slot
    assert (slot.turns[-2]["kind"], slot.turns[-2]["text"]) == ("speech", "get the lantern of nowhere")
