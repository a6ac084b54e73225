import json
import shutil

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from lq.eval import EvalResult, evaluate_agent, zero_shot
from lq.lit.agent import SAME_AGENT
from lq.lit.checkpoints import agent_name
from lq.lit.rl import RLModule
from lq.rl.losses import LossCoefficients
from tests.samples import env_spec, tiny_agent_config

AGENT = tiny_agent_config()


def _module(root, env=None, agent=AGENT, eval_max_steps=4, lr=1e-4, **kwargs):
    return RLModule(
        env=env or env_spec(root),
        lr=lr,
        num_envs=4,
        rollout_steps=3,
        max_steps=3,  # every episode ends within the first rollout: the curves have a figure from the first update
        context_length=64,
        candidate_dim=8,
        agent=agent,
        updates_per_epoch=2,
        eval_max_steps=eval_max_steps,
        **kwargs,
    )


def _trainer(tmp_path, epochs):
    return L.Trainer(
        max_epochs=epochs,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[ModelCheckpoint(dirpath=tmp_path, save_last=True)],
        accelerator="cpu",
    )


class _Record(L.Callback):
    """Per update: the loss and the training curves' figures."""

    def __init__(self):
        self.steps = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        m = trainer.callback_metrics
        self.steps.append(tuple(float(m[k]) for k in ("losses/total", "rl/reward_per_step", "rl/return")))


def _fit(root, tmp_path, epochs, ckpt_path=None):
    L.seed_everything(0)
    module, record = _module(root), _Record()
    trainer = _trainer(tmp_path, epochs)
    trainer.callbacks.append(record)
    trainer.fit(module, ckpt_path=ckpt_path)
    return module, trainer, record.steps


@pytest.mark.slow
def test_rl_trains_and_logs(setup_dir, tmp_path):
    module, trainer, _ = _fit(setup_dir, tmp_path, 1)
    metrics = trainer.callback_metrics
    assert trainer.global_step == 2 and torch.isfinite(metrics["losses/total"])
    for name in ("valid_action", "valid_speech", "action_entropy", "speech_entropy", "value"):
        assert f"losses/{name}" in metrics
    saved = torch.load(tmp_path / "last.ckpt", weights_only=True)  # the rollout is kept as bytes, safely loadable
    assert saved["lq_priority"]["plays"] == module.a2c.sampler.plays != [0] * len(module.a2c.sampler.plays)


@pytest.mark.slow
def test_rl_resumes_exactly_where_an_interrupted_run_stopped(setup_dir, tmp_path):
    """Killed after epoch 1 and resumed from its last checkpoint, a run goes on as the uninterrupted one of the same
    seed: the same losses and curves at every later update, the same priority table, quest sampler and weights."""
    whole, _, steps = _fit(setup_dir, tmp_path / "whole", 2)
    _fit(setup_dir, tmp_path / "killed", 1)
    checkpoint = tmp_path / "killed" / "last.ckpt"
    resumed, trainer, resumed_steps = _fit(setup_dir, tmp_path / "resumed", 2, ckpt_path=str(checkpoint))
    assert trainer.global_step == 4 and len(steps) == 4 and len(resumed_steps) == 2
    assert resumed_steps == steps[2:]
    assert resumed.a2c.sampler.state_dict() == whole.a2c.sampler.state_dict()
    assert resumed.env.rng.getstate() == whole.env.rng.getstate()
    for (name, p), q in zip(whole.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(p, q), name

    # without the rollout (only the priority table and the sampler's state), it does not: the test can fail
    saved = torch.load(checkpoint, weights_only=True)
    del saved["lq_rollout"]
    torch.save(saved, tmp_path / "partial.ckpt")
    _, _, partial_steps = _fit(setup_dir, tmp_path / "partial", 2, ckpt_path=str(tmp_path / "partial.ckpt"))
    assert partial_steps != steps[2:]


@pytest.mark.parametrize(
    ("ability", "switch"),
    [("act", "hardcoded"), ("speech", "ratio"), ("speech_no_speech_goals", "hardcoded"), ("act_speech", "ratio")],
)
@pytest.mark.slow
def test_abilities_and_switches_run_and_evaluate(setup_dir, tmp_path, ability, switch):
    module = _module(setup_dir, ability=ability, switch=switch)
    _trainer(tmp_path, 1).fit(module)
    result = module.evaluate("test")
    assert len(result.episodes) == 6
    assert result.act_goal_rate == sum(e["act_goal"] for e in result.episodes) / 6
    transcripts = "\n".join(e["transcript"] for e in result.episodes)
    if ability == "act":
        assert " > " in transcripts  # acts
    if ability.startswith("speech"):  # an agent that only speaks never completes a goal itself
        assert all(e["act_goal_by"] != "self" for e in result.episodes)


@pytest.fixture(scope="module")
def toy_dir(setup_dir, tmp_path_factory):
    """The tiny dataset with every quest's short motivation rewritten to name its goal: "I want to <goal>."."""
    root = tmp_path_factory.mktemp("toy")
    shutil.copytree(setup_dir / "data", root / "data")
    for path in (root / "data" / "quests").rglob("*.json"):
        stem = json.loads(path.read_text())
        stem["data"]["short_motivation"] = f"I want to {stem['data']['goal']}."
        path.write_text(json.dumps(stem))
    for name in ("partner.ckpt", "dm.ckpt"):
        shutil.copy(setup_dir / name, root / name)
    return root


@pytest.mark.slow
def test_the_agent_learns_to_act_on_its_motivation(toy_dir):
    """A real learning test on a toy quest set whose short motivations name the goal: one action per episode, so a
    random valid action reaches it less often. After 120 A2C updates the greedy agent reaches the act goal on these
    quests
    clearly more often than a random choice among the same valid actions, and its training curve rose."""
    from lq.models.encoder import EncoderSpec

    agent = tiny_agent_config()
    agent.scratch = EncoderSpec(init="scratch", hidden_size=64, num_layers=2, num_heads=4, intermediate_size=128)
    module = RLModule(
        env=env_spec(toy_dir),
        ability="act",
        num_envs=16,
        rollout_steps=4,
        max_steps=1,
        lr=1e-3,
        context_length=64,
        candidate_dim=32,
        agent=agent,
        updates_per_epoch=60,
        eval_max_steps=1,
        recent_episodes=64,
        priority_mix=1.0,  # uniform: priority sampling would move to the unsolvable third and flatten the curve
    )
    curve = []

    class Curve(L.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            curve.append(float(trainer.callback_metrics["rl/act_goal_rate"]))

    trainer = L.Trainer(
        max_epochs=2,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        callbacks=[Curve()],
        accelerator="cpu",
    )
    L.seed_everything(0)
    trainer.fit(module)
    learned = module.evaluate("train", seed=0)
    random_rates = [module.evaluate("train", seed=s, policy="random").act_goal_rate for s in range(3)]
    chance = sum(random_rates) / len(random_rates)
    # a third of these quests' goals are not valid as a first action: the word-overlap rule, the best one-step play,
    # reaches 0.667 here, and random 0.47
    assert learned.act_goal_rate >= chance + 0.15, (learned.act_goal_rate, random_rates)
    assert sum(curve[-20:]) / 20 >= sum(curve[4:24]) / 20 + 0.15, curve[::10]


def test_a_scratch_agent_has_a_row_for_every_word_piece_its_quests_show(setup_dir):
    """The scratch encoder keeps embedding rows only for the dataset's word pieces: every piece of every context that
    zero-shot test episodes show is among them (none falls back to [UNK]), and far fewer than the tokenizer's."""
    module = _module(setup_dir)
    module.build_agent()
    encoder, tokenizer = module.agent.encoder, module.batcher.tokenizer
    assert len(encoder.vocabulary) < len(tokenizer) // 4
    seen = []
    rows = encoder.rows
    encoder.rows = lambda ids: seen.append(ids.clone()) or rows(ids)
    module.evaluate("test", seed=0, greedy=False)
    ids = torch.cat([i.flatten() for i in seen])
    assert len(ids) > 1000
    unknown = encoder.vocabulary(ids) == encoder.vocabulary.unk_row
    assert not unknown[ids != tokenizer.unk_token_id].any()
    assert (
        encoder.vocabulary(torch.tensor([tokenizer.convert_tokens_to_ids("computer")])).item()
        == encoder.vocabulary.unk_row
    )


@pytest.mark.slow
def test_rl_starts_from_a_behaviour_cloned_agent_of_the_same_sizes(trained_agent):
    saved = torch.load(trained_agent, map_location="cpu", weights_only=False)
    keep = (*SAME_AGENT, "env", "lr")
    same = {k: v for k, v in saved["hyper_parameters"].items() if k in keep}
    module = RLModule(init_from=str(trained_agent), **same)
    assert agent_name(module) == "RL (from an agent) scratch act_speech hardcoded"  # a checkpoint named, not bc
    module.start_from(str(trained_agent))
    state = module.state_dict()
    assert saved["state_dict"] and all(torch.equal(state[k], v) for k, v in saved["state_dict"].items())
    wider = RLModule(**{**same, "candidate_dim": same["candidate_dim"] * 2})
    with pytest.raises(ValueError, match=r"an agent of another candidate_dim \(candidate_dim="):
        wider.start_from(str(trained_agent))
    with pytest.raises(FileNotFoundError, match="model.init_from: .*nothing.ckpt: no such checkpoint"):
        wider.start_from(str(trained_agent.parent / "nothing.ckpt"))
    # an agent without head temperatures is the agent with both at 1: one that learns them starts from it there
    agent = {**same["agent"], "head_temperature": True}
    sharper = RLModule(**{**same, "agent": agent})
    sharper.start_from(str(trained_agent))
    state = sharper.state_dict()
    assert torch.equal(state["agent.head_log_temperature"], torch.zeros(2))
    assert all(torch.equal(state[k], v) for k, v in saved["state_dict"].items())
    # {seed}: the BC agent of the run's own seed (make rl's seeds from make bc's)
    per_seed = str(trained_agent).replace("seed-0", "seed-{seed}")
    RLModule(**{**same, "seed": 0}).start_from(per_seed)
    with pytest.raises(FileNotFoundError, match="model.init_from: .*seed-1/best.ckpt: no such checkpoint"):
        RLModule(**{**same, "seed": 1}).start_from(per_seed)
    # bc (conf/objective/lq.yaml's): the BC agent its resolved config names, read when the module is set up; without it,
    # the fix
    module = RLModule(init_from="bc", bc_checkpoint=str(trained_agent), **{**same, "seed": 1})
    module.setup("validate")
    assert all(torch.equal(module.state_dict()[k], v) for k, v in saved["state_dict"].items())
    fix = "model.bc_checkpoint is not set: .*--model.bc_checkpoint PATH.*--model.init_from null"
    with pytest.raises(ValueError, match=fix):
        RLModule(init_from="bc", **same).setup("validate")


def test_an_agent_that_learns_head_temperatures_starts_from_one_without_them():
    """A BC agent (no head temperatures) is the start of an RL agent that learns them, at 1; not the other way round
    (a learned temperature scales the logits), and any other difference still refuses it. The RL module's start and
    the experiments' BC starts (``_trained_alike``) read this one rule."""
    from lq.lit.agent import start_differences

    bc = {"encoder": "scratch", "agent": {"gru_hidden": 128}}  # saved before head_temperature existed: off
    rl = {"encoder": "scratch", "agent": {"gru_hidden": 128, "head_temperature": True}}
    assert start_differences(bc, rl) == {}
    assert list(start_differences(rl, bc)) == ["agent"]
    assert start_differences(bc, {**rl, "encoder": "general"}) == {"encoder": "scratch"}
    assert list(start_differences(bc, {**rl, "agent": {"gru_hidden": 64, "head_temperature": True}})) == ["agent"]


def test_the_environment_reads_at_the_partner_and_dm_length_the_agent_at_its_own(setup_dir):
    module = _module(setup_dir, env=env_spec(setup_dir, context_length=32))
    env = module.eval_env("test")
    assert (env.partner.batcher.context_length, env.dm.batcher.context_length) == (32, 32)
    assert module.batcher.context_length == 64


@pytest.mark.slow
def test_the_imitation_term_trains_the_agent_on_the_training_demonstrations(setup_dir, tmp_path):
    """With ``coefficients.imitation`` the update adds behaviour cloning's loss on training demonstrations: with the
    other weighted terms off, the same seed's updates lower that loss on the training demonstrations well below where
    the policy gradients alone leave it; off (the paper's agent), no demonstration is loaded."""
    off = {"valid_action": 0.0, "action_entropy": 0.0, "valid_speech": 0.0, "speech_entropy": 0.0, "value": 0.0}
    cloning, episodes = {}, []
    for weight in (1.0, 0.0):
        L.seed_everything(0)
        module = _module(setup_dir, coefficients={**off, "imitation": weight}, imitation_batch=64, lr=1e-2)
        module.setup("fit")
        assert bool(module.demo_episodes) == (weight > 0)
        assert agent_name(module).startswith("RL (imitation 1) scratch" if weight else "RL scratch")  # tables say so
        episodes = module.demo_episodes or episodes  # the paper's agent is scored on the imitating one's
        if weight:
            with torch.no_grad():
                before = module.cloning_loss(episodes)["loss"].item()
        trainer = _trainer(tmp_path / str(weight), 3)
        trainer.fit(module)
        assert trainer.global_step == 6 and ("losses/imitation" in trainer.callback_metrics) == (weight > 0)
        with torch.no_grad():
            cloning[weight] = module.cloning_loss(episodes)["loss"].item()
    assert cloning[1.0] < 0.95 * min(before, cloning[0.0]), (before, cloning)  # 4.71 against 5.34 and 5.16


def _trainable(module) -> list:
    return [p for p in module.parameters() if p.requires_grad]


@pytest.mark.slow
def test_term_gradients_of_summed_valid_terms_are_the_candidates_times_the_averaged(setup_dir):
    """``lq gradients``' figures: on the same rollouts, the valid-speech term summed over the candidates has exactly
    the number of utterances times the averaged term's gradient norm, the policy gradients the same."""
    terms = {}
    for reduction in ("sum", "mean"):
        L.seed_everything(0)
        module = _module(setup_dir, valid_reduction=reduction)
        module.setup("fit")
        terms[reduction] = module.a2c.term_gradients(_trainable(module), 2)
    n = len(module.utterance_space)
    assert n > 1 and terms["sum"]["valid_speech"][1] > 0
    assert terms["sum"]["valid_speech"][1] == pytest.approx(n * terms["mean"]["valid_speech"][1], rel=1e-3)
    assert terms["sum"]["speech_policy"] == pytest.approx(terms["mean"]["speech_policy"], rel=1e-4)
    assert "imitation" not in terms["sum"] and terms["sum"]["total"][1] > terms["mean"]["total"][1]
    L.seed_everything(0)
    silent = _module(setup_dir, coefficients={"policy": 0.0})  # the policy gradients off: nothing of theirs moves
    silent.setup("fit")
    off = silent.a2c.term_gradients(_trainable(silent), 1)
    assert off["action_policy"][1] == off["speech_policy"][1] == 0.0 < off["valid_speech"][1]
    assert agent_name(silent) == "RL (no policy gradient) scratch act_speech hardcoded"


def test_the_exact_match_gain_can_learn_in_its_own_parameter_group(setup_dir):
    """gain_lr_scale puts the one scalar gain in its own Adam group at lr times the scale; at 1, one group as before."""
    module = _module(setup_dir, lr=1e-3, gain_lr_scale=30.0)
    module.build_agent()
    rest, gain = module.configure_optimizers().param_groups
    assert [p.numel() for p in gain["params"]] == [1] and gain["lr"] == pytest.approx(3e-2) and rest["lr"] == 1e-3
    assert gain["params"][0] is module.agent.speech_match_weight
    plain = _module(setup_dir, lr=1e-3)
    plain.build_agent()
    assert len(plain.configure_optimizers().param_groups) == 1
    assert not hasattr(plain.agent, "head_log_temperature")  # off by default: no parameter, no figure moves
    assert plain.gains() == {"speech_match_weight": 1.0}  # logged each update (agent/...): where the gains stand


def test_a_learned_temperature_per_head_scales_its_logits_and_learns_with_the_gains(setup_dir):
    import dataclasses

    agent = dataclasses.replace(AGENT, head_temperature=True)
    module = _module(setup_dir, agent=agent, lr=1e-3, gain_lr_scale=30.0)
    module.build_agent()
    rest, gains = module.configure_optimizers().param_groups
    temperature = module.agent.head_log_temperature
    assert any(p is temperature for p in gains["params"]) and not any(p is temperature for p in rest["params"])
    module.eval()
    ids, mask, lines = module.batcher.contexts_with_lines(["a room. you see a sword."] * 2)
    hidden = module.agent.initial_state(2)
    acted = torch.tensor([True, False])
    with torch.no_grad():
        before = module.agent(ids, mask, hidden, acted)
        temperature.copy_(torch.log(torch.tensor([2.0, 0.5])))  # the action head at 2, the dialogue head at 1/2
        after = module.agent(ids, mask, hidden, acted)
    assert torch.allclose(after.action_logits, before.action_logits / 2, atol=1e-5)
    assert torch.allclose(after.speech_logits, before.speech_logits * 2, atol=1e-5)
    assert module.gains() == pytest.approx(
        {"speech_match_weight": 1.0, "action_temperature": 2.0, "speech_temperature": 0.5}
    )


class _Logged(L.pytorch.loggers.logger.Logger):
    """Keeps what the module logs with its step (the budget evaluations')."""

    def __init__(self):
        super().__init__()
        self.logged = []

    name, version = "memory", 0

    @property
    def experiment(self):
        return None

    def log_hyperparams(self, params, *args, **kwargs):
        pass

    def log_metrics(self, metrics, step=None):
        self.logged.append((step, dict(metrics)))


def _budget_fit(root, tmp_path, epochs, budgets=(), ckpt_path=None, **settings):
    L.seed_everything(0)
    module, record, logger = _module(root, budgets=budgets, **settings), _Record(), _Logged()
    trainer = _trainer(tmp_path, epochs)
    trainer.loggers = [logger]
    trainer.callbacks.append(record)
    trainer.fit(module, ckpt_path=ckpt_path)
    evaluated = [(s, m) for s, m in logger.logged if any(k.startswith("budget/") for k in m)]
    return module, trainer, record.steps, evaluated


@pytest.mark.slow
def test_a_budget_run_is_evaluated_at_each_budget_and_stops_at_the_last(setup_dir, tmp_path):
    """Budgets in interactions (4 environments x 3 steps = 12 an update): evaluated zero-shot when reached, each
    checkpoint kept, the run ending at the last budget whatever its epochs; the evaluations leave training as it would
    have gone without them; a run killed between budgets and resumed evaluates the rest once."""
    _, _, plain, _ = _budget_fit(setup_dir, tmp_path / "plain", 3)
    module, trainer, steps, evaluated = _budget_fit(setup_dir, tmp_path / "budget", 50, budgets=(24, 48))
    assert trainer.global_step == 4 and module.interactions == 48
    assert steps == plain[:4]  # the same updates as a run without evaluations
    assert [s for s, _ in evaluated] == [2, 4]
    assert {k.split("/")[2] for k in evaluated[0][1]} == {"val", "test", "test_greedy", "demos"}
    # the last budget's figures are the zero-shot evaluation of the weights the run ended with, and their
    # demonstrations read teacher-forced
    for split, result in zero_shot(module, 0).items():
        for name, value in result.metrics(f"budget/48/{split}/").items():
            assert evaluated[1][1].get(name, value) == value, name  # NaN rates are not logged
    read = module.demonstration_metrics("budget/48/")
    assert {"budget/48/demos/train/loss", "budget/48/demos/val/speech_accuracy"} <= set(read)
    assert {k: evaluated[1][1][k] for k in read} == pytest.approx(read)
    assert (tmp_path / "budget" / "budget-24.ckpt").is_file() and (tmp_path / "budget" / "budget-48.ckpt").is_file()

    _budget_fit(setup_dir, tmp_path / "short", 1, budgets=(24, 48))  # killed after an epoch: at the first budget
    assert torch.load(tmp_path / "short" / "last.ckpt", weights_only=True)["lq_budgets_done"] == [24]
    resumed, trainer, resumed_steps, again = _budget_fit(
        setup_dir, tmp_path / "resumed", 50, budgets=(24, 48), ckpt_path=str(tmp_path / "short" / "last.ckpt")
    )
    assert trainer.global_step == 4 and resumed_steps == steps[2:]
    assert [s for s, _ in again] == [4]  # the first budget was evaluated before the kill
    assert again[0][1] == evaluated[1][1]


# the validation episodes that reach both goals at each selection, by interactions (12 an update): ties at 24, 36, 60
SCRIPTED = {12: 1, 24: 3, 36: 3, 48: 0, 60: 3, 72: 1}


class _Weights(L.Callback):
    """Per update: the agent's weights after it."""

    def __init__(self):
        self.after = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.after.append({k: v.clone() for k, v in pl_module.agent.state_dict().items()})


def _select_fit(root, tmp_path, epochs, monkeypatch, ckpt_path=None, **settings):
    """A run choosing every update, its validation figures :data:`SCRIPTED` (each a real evaluation's episodes, their
    goals set to the figure); its losses and curves, weights per update and what it logged of the selections."""
    import lq.lit.selection as rl

    def scripted(module, split, seed):
        played = evaluate_agent(module, split, seed=seed)
        episodes = [{**e, "act_goal": i < SCRIPTED[module.interactions], "speech_goal": True}
                    for i, e in enumerate(played.episodes)]  # fmt: skip
        return EvalResult.of(episodes)

    monkeypatch.setattr(rl, "evaluate_agent", scripted)
    L.seed_everything(0)
    module, record, weights, logger = _module(root, select_every=12, **settings), _Record(), _Weights(), _Logged()
    trainer = _trainer(tmp_path, epochs)
    trainer.loggers = [logger]
    trainer.callbacks += [record, weights]
    trainer.fit(module, ckpt_path=ckpt_path)
    chosen = {}  # what each selection logged (its validation figures, the held-out schedule's), by step
    for step, metrics in logger.logged:
        if any(k.startswith("select/") for k in metrics):
            chosen.setdefault(step, {}).update(metrics)
    logged = [(s, m) for s, m in chosen.items() if "select/val/act_and_speech_goal_rate" in m]
    return module, record.steps, weights.after, logged


@pytest.mark.slow
def test_the_kept_best_checkpoint_is_the_validation_best_of_the_logged_selections(setup_dir, tmp_path, monkeypatch):
    """With ``select_every`` (12 interactions: every update) the run plays the validation quests after each update,
    logs it, and keeps as ``best.ckpt`` the weights of the best logged act & speech goals (the earliest of equals:
    update 2 of the ties at 2, 3 and 5), saying at what; the selections leave training as it would have gone; a run
    killed and resumed goes on choosing among every selection, the killed part's too."""
    plain = _fit(setup_dir, tmp_path / "plain", 3)[2]
    module, steps, weights, logged = _select_fit(setup_dir, tmp_path / "select", 3, monkeypatch)
    assert steps == plain
    assert [s for s, _ in logged] == [1, 2, 3, 4, 5, 6]
    n = len(evaluate_agent(module, "valid", 0).episodes)
    assert [m["select/val/act_and_speech_goal_rate"] for _, m in logged] == [c / n for c in SCRIPTED.values()]
    assert [m["select/best_interactions"] for _, m in logged] == [12, 24, 24, 24, 24, 24]
    assert module.chosen() == (24, 3 / n)
    saved = torch.load(tmp_path / "select" / "best.ckpt", weights_only=False)
    assert saved["global_step"] == 2
    assert saved["lq_chosen"] == {"interactions": 24, "val_act_and_speech_goal_rate": 3 / n}
    kept = {k[len("agent."):]: v for k, v in saved["state_dict"].items() if k.startswith("agent.")}
    assert kept.keys() == weights[1].keys() and all(torch.equal(kept[k], weights[1][k]) for k in kept)
    assert not all(torch.equal(weights[1][k], weights[-1][k]) for k in kept)  # not the last weights

    _select_fit(setup_dir, tmp_path / "short", 1, monkeypatch)  # killed after an epoch: the best already chosen
    resumed, resumed_steps, _, again = _select_fit(
        setup_dir, tmp_path / "short", 3, monkeypatch, ckpt_path=str(tmp_path / "short" / "last.ckpt")
    )
    assert resumed_steps == steps[2:] and [m for _, m in again] == [m for _, m in logged[2:]]
    assert resumed.chosen() == (24, 3 / n)
    assert torch.load(tmp_path / "short" / "best.ckpt", weights_only=False)["global_step"] == 2  # not replaced by a tie
    # killed after its training ended, before its agent was kept: Lightning's resume trains no more and calls no
    # on_train_start, and the run must still know what it chose (what makes best.ckpt its agent)
    done, done_steps, _, none = _select_fit(
        setup_dir, tmp_path / "short", 3, monkeypatch, ckpt_path=str(tmp_path / "short" / "last.ckpt")
    )
    assert done_steps == [] and none == [] and done.chosen() == (24, 3 / n)


# the held-out demonstrations' mean action and speech accuracy at each selection, by interactions
HELD_OUT = {12: 0.5, 24: 0.4, 36: 0.6, 48: 0.6, 60: 0.3, 72: 0.7}


@pytest.mark.slow
def test_the_imitation_term_weakens_when_the_held_out_demonstrations_pass_their_best(setup_dir, tmp_path, monkeypatch):
    """``imitation_patience`` 1, ``imitation_decay`` 0.5: each selection whose held-out accuracy is no new best halves
    the imitation term's weight, which the following updates use (a run whose weight stays 1 trains the same until the
    first halving, then otherwise); a resumed run goes on with the weight it had."""

    def figures(module, split, limit=None, batch_size=16):
        assert split == "valid"
        return {"demonstrations": 6, "loss": 1.0, "action_accuracy": HELD_OUT[module.interactions] - 0.1,
                "speech_accuracy": HELD_OUT[module.interactions] + 0.1}  # fmt: skip

    monkeypatch.setattr(RLModule, "demonstration_figures", figures)
    settings = {"coefficients": LossCoefficients(imitation=1.0), "imitation_patience": 1, "imitation_decay": 0.5}
    module, steps, _, logged = _select_fit(setup_dir, tmp_path / "whole", 3, monkeypatch, **settings)
    assert [m["select/demos_val_accuracy"] for _, m in logged] == pytest.approx(list(HELD_OUT.values()))
    assert [m["select/imitation"] for _, m in logged] == [1.0, 0.5, 0.5, 0.25, 0.125, 0.125]
    assert module.a2c.settings.coefficients.imitation == 0.125
    _select_fit(setup_dir, tmp_path / "short", 1, monkeypatch, **settings)
    resumed, resumed_steps, _, again = _select_fit(
        setup_dir, tmp_path / "short", 3, monkeypatch, ckpt_path=str(tmp_path / "short" / "last.ckpt"), **settings
    )
    assert resumed_steps == steps[2:] and [m for _, m in again] == [m for _, m in logged[2:]]
    plain = _select_fit(setup_dir, tmp_path / "plain", 3, monkeypatch, coefficients=LossCoefficients(imitation=1.0))[1]
    assert plain[:2] == steps[:2] and plain[2] != steps[2]  # the same until the weight first moves
    with pytest.raises(ValueError, match="select_every"):
        _module(setup_dir, imitation_patience=2)
