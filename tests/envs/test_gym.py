"""The Gymnasium environments: ``lq/Quest-v0`` passes Gymnasium's own checker on the default data, its episodes end
as the protocol says (terminated on goals, truncated at the turn limit), and the vector environment auto-resets."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import lq.envs.gym  # noqa: F401  (registers lq/Quest-v0)
from lq.envs.gym import FreeText
from lq.generate import generate_dataset
from tests.samples import tiny_env_models


@pytest.fixture(scope="module")
def default_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("gym")
    generate_dataset(root / "data", scale="default", seed=0, log=lambda _: None)
    partner, dm = tiny_env_models(root)
    return {"data_dir": root / "data", "partner_checkpoint": partner, "dm_checkpoint": dm, "context_length": 64}


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

    env = gymnasium.make("lq/Quest-v0", max_steps=3, **default_data)
    env.reset(seed=0)
    ends = [env.step("I have nothing to say.")[2:4] for _ in range(3)]
    assert ends == [(False, False), (False, False), (False, True)]


def test_unknown_quest_and_missing_models_are_named(default_data):
    env = gymnasium.make("lq/Quest-v0", **default_data)
    with pytest.raises(ValueError, match="not one of this environment's quests"):
        env.reset(options={"quest": "no-such-quest"})
    with pytest.raises(ValueError, match="partner_checkpoint"):
        gymnasium.make("lq/Quest-v0", data_dir=default_data["data_dir"])


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
