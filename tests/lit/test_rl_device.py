"""The paper profile's GPU path, kept honest on the CPU: the rollout state follows the module wherever it is moved, and
the RL, BC and pretraining stages of the paper profile (its files, at tiny sizes) train under bf16-mixed."""

import dataclasses
import math

import lightning as L
import pytest
import torch

from lq.lit.bc import BCModule
from lq.lit.entry import STAGE_CLIS, stage_classes
from lq.lit.rl import RLModule
from lq.stages import Resolver
from tests.lit.test_rl import _module
from tests.samples import env_spec, tiny_agent_config

# the agent at tiny sizes; the paper profile's context lengths (1024, its scratch encoder's 1024 positions; the
# partner and DM 512), precision, objective and protocol stay
TINY_AGENT = [
    *("--model.candidate_dim", "8", "--model.agent.gru_hidden", "16", "--model.agent.policy_hidden", "16"),
    *("--model.agent.critic_hidden", "16", "--model.agent.scratch.hidden_size", "32"),
    *("--model.agent.scratch.num_layers", "1", "--model.agent.scratch.num_heads", "2"),
    *("--model.agent.scratch.intermediate_size", "64"),
]
TINY_ENCODER = [
    *("--model.encoder.spec.hidden_size", "32", "--model.encoder.spec.num_layers", "1"),
    *("--model.encoder.spec.num_heads", "2", "--model.encoder.spec.intermediate_size", "64", "--model.n_codes", "2"),
]
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU here (benchmarks/gpu_check.sh runs it on one)")
QUIET = ["--trainer.logger", "false", "--trainer.enable_progress_bar", "false", "--trainer.accelerator", "cpu"]


@pytest.fixture
def cuda_like_gru(monkeypatch):
    """GRUCell as CUDA's autocast runs it, in bf16 (it is on CUDA's lower-precision list, not on the CPU's): under a
    CPU autocast its states come out in bf16, so that the CPU meets what a GPU hands back."""
    forward = torch.nn.GRUCell.forward

    def bf16_forward(self, input, hx=None):
        dtype = self.weight_hh.dtype
        out = forward(self, input.to(dtype), None if hx is None else hx.to(dtype))
        return out.to(torch.bfloat16) if torch.is_autocast_enabled("cpu") else out

    monkeypatch.setattr(torch.nn.GRUCell, "forward", bf16_forward)


def _paper_cli(stage: str, root, out, encoder: str, *extra: str):
    """The stage as the paper profile runs it (the resolver's files, the paper objective for RL) on the test's data,
    partner and DM, built but not run; ``extra``: arguments after the profile's."""
    where = Resolver(profile="paper", objective="paper", data_dir=str(root / "data"), outputs=str(out))
    run = where.run(stage, encoder)
    if stage in ("rl", "bc"):
        models = ("--model.env.partner_checkpoint", str(root / "partner.ckpt"), "--model.env.dm_checkpoint",
                  str(root / "dm.ckpt"))  # fmt: skip
        run = dataclasses.replace(run, extra=models)
    run.kind.write(run)
    return STAGE_CLIS[stage](*stage_classes(stage), args=[*run.args[2:], *QUIET, *extra], run=False)


def _finite(trainer, key: str) -> float:
    value = float(trainer.callback_metrics[key])
    assert math.isfinite(value), f"{key} = {value}"
    return value


@pytest.mark.slow
def test_the_paper_profiles_rl_updates_run_under_bf16_mixed(setup_dir, tmp_path, cuda_like_gru):
    steps = ("--model.num_envs", "4", "--model.rollout_steps", "3", "--model.max_steps", "3")
    cli = _paper_cli("rl", setup_dir, tmp_path, "scratch", *TINY_AGENT, *steps, "--trainer.max_steps", "2")
    assert cli.trainer.precision == "bf16-mixed" and cli.model.hparams.context_length == 1024
    cli.trainer.fit(cli.model)
    assert cli.trainer.global_step == 2
    _finite(cli.trainer, "losses/total")


@pytest.mark.slow
def test_the_paper_profiles_bc_steps_run_under_bf16_mixed(setup_dir, tmp_path, cuda_like_gru):
    limits = ("--trainer.max_epochs", "1", "--trainer.limit_train_batches", "2", "--trainer.limit_val_batches", "1")
    cli = _paper_cli("bc", setup_dir, tmp_path, "scratch", *TINY_AGENT, "--model.batch_size", "4", *limits)
    assert cli.trainer.precision == "bf16-mixed"
    cli.trainer.fit(cli.model)
    _finite(cli.trainer, "train/loss")
    _finite(cli.trainer, "val/loss")


@pytest.mark.slow
def test_the_paper_profiles_pretraining_steps_run_under_bf16_mixed(setup_dir, tmp_path):
    sizes = ("--data.batch_size", "4", "--data.max_train_examples", "8", "--data.max_eval_examples", "4")
    limits = ("--trainer.max_epochs", "1", "--trainer.limit_train_batches", "2", "--trainer.limit_val_batches", "1")
    cli = _paper_cli("pretrain", setup_dir, tmp_path, "light", *TINY_ENCODER, *sizes, *limits)
    assert cli.trainer.precision == "bf16-mixed" and cli.datamodule.batcher.context_length == 512
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    _finite(cli.trainer, "train/loss")
    _finite(cli.trainer, "val/hits_at_1")  # what the profile's early stopping reads


def _rl_module(root, setup: bool = True, **kwargs) -> RLModule:
    L.seed_everything(0)
    module = _module(root, **kwargs)  # test_rl's tiny RL module
    if setup:
        module.setup("fit")
    return module


def test_the_rollout_state_follows_the_module_through_to_and_an_update_runs(setup_dir):
    """``.to(float64)`` stands in for ``.to("cuda")``: a module moved after setup (Lightning moves it then) plays its
    next rollout with its GRU states, and every tensor the rollout makes, on its device and in its dtype."""
    module = _rl_module(setup_dir)
    assert module.a2c.state.actor.hidden_a.dtype == torch.float32  # made in setup, before the move
    module.to(torch.float64)
    optimizer = module.configure_optimizers()
    for _ in range(2):  # the second from the state the first left
        rollout = module.a2c.collect()
        losses = module.a2c.objective(rollout)
        optimizer.zero_grad()
        losses.total.backward()
        optimizer.step()
    state = module.a2c.state.actor
    assert state.hidden_a.dtype == state.hidden_u.dtype == torch.float64
    assert state.steps.device.type == "cpu"  # the switch's counters stay where Python reads them
    assert rollout.action_logits.dtype == rollout.values.dtype == rollout.rewards.dtype == torch.float64
    assert losses.total.dtype == torch.float64 and torch.isfinite(losses.total)
    module.to(torch.float32)  # and back: the state follows again
    module.a2c.collect(1)
    assert module.a2c.state.actor.hidden_a.dtype == torch.float32


def test_a_resumed_rollout_keeps_its_switch_counters_on_the_cpu_and_its_states_on_the_agents_device(setup_dir):
    module = _rl_module(setup_dir)
    module.to(torch.float64)
    module.a2c.restore_rollout(module.a2c.rollout_snapshot())
    state = module.a2c.state.actor
    assert state.hidden_a.dtype == torch.float64 and state.k.dtype == torch.long and state.k.device.type == "cpu"


def test_behaviour_cloning_follows_the_module_through_to(setup_dir):
    L.seed_everything(0)
    module = BCModule(env=env_spec(setup_dir), lr=1e-4, context_length=64, candidate_dim=8, agent=tiny_agent_config())
    module.setup("fit")
    module.to(torch.float64)
    loss = module.cloning_loss(module.episodes["train"][:4])["loss"]
    assert loss.dtype == torch.float64 and torch.isfinite(loss)


def test_an_rl_update_runs_under_cpu_autocast_with_a_gru_as_cuda_runs_it(setup_dir, cuda_like_gru):
    """The in-place writes of the agent's forward (the speech match's counts, a head's scores of its rows) take their
    destination's dtype under autocast, and the GRU states a bf16 step hands back go on to the next rollout."""
    module = _rl_module(setup_dir, coefficients={"imitation": 0.5})
    optimizer = module.configure_optimizers()
    for _ in range(2):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            rollout = module.a2c.collect()
            losses = module.a2c.objective(rollout)
        optimizer.zero_grad()
        losses.total.backward()
        optimizer.step()
    assert rollout.speech_logits.dtype == torch.float32  # the rollout keeps the weights' dtype
    assert torch.isfinite(losses.total) and torch.isfinite(losses.imitation)


def _gpu_trainer(**limits) -> L.Trainer:
    quiet = dict(logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    return L.Trainer(accelerator="gpu", devices=1, precision="bf16-mixed", **quiet, **limits)


@CUDA
def test_on_a_gpu_rl_plays_and_updates_where_lightning_moved_the_module(setup_dir):
    """Setup builds the partner and DM on the trainer's GPU and the rollout state on the CPU; Lightning then moves the
    module, and the rollouts follow it under CUDA's bf16 autocast (its GRUCell in bf16)."""
    module = _rl_module(setup_dir, setup=False, coefficients={"imitation": 0.5})
    trainer = _gpu_trainer(max_steps=2)
    trainer.fit(module)
    assert trainer.global_step == 2 and math.isfinite(float(trainer.callback_metrics["losses/total"]))
    assert module.env.partner.model.codes.device.type == module.env.dm.model.codes.device.type == "cuda"
    assert module.a2c.state.actor.hidden_a.device.type == "cuda"  # the last rollout's (Lightning ends on the CPU)
    module.to("cuda")  # moved by hand after setup, as a benchmark does: the next rollout follows
    rollout = module.a2c.collect(2)
    assert rollout.action_logits.device.type == rollout.rewards.device.type == "cuda"


@CUDA
def test_on_a_gpu_behaviour_cloning_trains_under_bf16_mixed(setup_dir):
    L.seed_everything(0)
    module = BCModule(env=env_spec(setup_dir), lr=1e-4, context_length=64, candidate_dim=8, agent=tiny_agent_config())
    trainer = _gpu_trainer(max_epochs=1, limit_train_batches=2, limit_val_batches=1)
    trainer.fit(module)
    assert math.isfinite(float(trainer.callback_metrics["val/loss"]))
