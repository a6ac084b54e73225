"""The switch A2C agent as a LightningModule with its own rollout loop (paper 4.2, appendix 8.2).

Each training step plays ``rollout_steps`` steps of a batch of environments in the main process with
the current weights, then takes one A2C update on the n-step returns. Lightning supplies the loop
count, checkpoints, logging and devices; the environment, the frozen partner and DM live in the
module (each DDP rank runs its own environments, seeded by rank).
"""

from __future__ import annotations

from dataclasses import asdict

import torch
from torch.utils.data import DataLoader

from lq.envs.build import build_env
from lq.lit.agent import DEFAULT_ENCODER, AgentModule
from lq.lit.pretrain import EncoderConfig
from lq.models.agent import AgentConfig
from lq.rl.losses import LossCoefficients, discounted_returns, switch_a2c_loss
from lq.rl.priority import PrioritySampler
from lq.rl.switch import RatioSwitch


class RLModule(AgentModule):
    stage = "rl"

    def __init__(
        self,
        encoder: EncoderConfig = DEFAULT_ENCODER,
        pretrained_checkpoint: str | None = None,
        data_dir: str = "data/default",
        partner_checkpoint: str = "outputs/partner/general/best.ckpt",
        dm_checkpoint: str = "outputs/dm/general/best.ckpt",
        switch: str = "hardcoded",
        switch_every: int = 3,
        ability: str = "act_speech",
        restrict: bool = True,
        num_envs: int = 32,
        rollout_steps: int = 8,
        max_steps: int = 100,
        gamma: float = 0.99,
        lr: float = 1e-4,
        temperature: float = 1.0,
        context_length: int = 256,
        candidate_dim: int = 256,
        coefficients: LossCoefficients = LossCoefficients(),  # noqa: B008 (frozen dataclass)
        agent: AgentConfig = AgentConfig(),  # noqa: B008
        eval_max_steps: int = 100,
        eval_batch_size: int = 32,
        updates_per_epoch: int = 50,
        seed: int = 0,
    ):
        super().__init__()
        self.check_choices(switch, ability)
        self.save_hyperparameters(ignore=["encoder", "coefficients", "agent"])
        self.store_configs(encoder, agent)
        self.coef = coefficients if isinstance(coefficients, LossCoefficients) else LossCoefficients(**coefficients)
        self.hparams["coefficients"] = asdict(self.coef)
        self.automatic_optimization = False
        self.env = None
        self.agent = None

    # -- building ------------------------------------------------------------------------------------

    def setup(self, stage: str) -> None:
        self.build_agent()
        if self.env is not None or stage != "fit":
            return
        h = self.hparams
        rank = self.global_rank if self._trainer is not None else 0
        env = build_env(
            h.data_dir,
            "train",
            h.partner_checkpoint,
            h.dm_checkpoint,
            batch_size=h.num_envs,
            max_steps=h.max_steps,
            context_length=h.context_length,
            seed=h.seed + 1000 * rank,
            device=self.device,
        )
        self.sampler = PrioritySampler(len(env.instances))
        env.sampler = self.sampler
        self.env = env
        self.rollout_actor = self.make_actor(h.temperature)
        self._ks = [RatioSwitch.k_for(inst.demo, getattr(self.switch, "average_k", 1)) for inst in env.instances]
        self._index = {id(inst): i for i, inst in enumerate(env.instances)}
        self.obs, self.infos = env.reset([self.sampler(env.rng) for _ in range(h.num_envs)])
        self.state = self.rollout_actor.start(h.num_envs)
        self.state["k"] = torch.tensor([self._k(i) for i in range(h.num_envs)])
        self.finished: list[dict] = []

    def _k(self, slot: int) -> int:
        return self._ks[self._index[id(self.env.slots[slot].instance)]]

    def train_dataloader(self) -> DataLoader:
        """One item per update: the rollout itself is the data."""
        return DataLoader(range(self.hparams.updates_per_epoch), batch_size=1)

    def configure_optimizers(self):
        return torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=self.hparams.lr)

    # -- training ------------------------------------------------------------------------------------

    def _rewards(self, rewards: list[float], infos: list[dict]) -> list[float]:
        if self.hparams.ability == "speech_no_speech_goals":  # speaks, but earns only act rewards
            return [info["act_reward"] for info in infos]
        return rewards

    def training_step(self, batch, batch_idx: int):
        h = self.hparams
        steps = []
        for _ in range(h.rollout_steps):
            commands, out = self.rollout_actor.step(self.obs, self.infos, self.state)
            valid_a = torch.zeros_like(out.action_logits)
            valid_u = torch.zeros_like(out.speech_logits)
            for i, info in enumerate(self.infos):
                valid_a[i, info["valid_action_ids"]] = 1.0
                valid_u[i, info["valid_utterance_ids"]] = 1.0
            slots_before = [self._index[id(s.instance)] for s in self.env.slots]
            self.obs, rewards, dones, self.infos = self.env.step(commands)
            rewards = self._rewards(rewards, self.infos)
            for i, (done, info) in enumerate(zip(dones, self.infos, strict=True)):
                if done:
                    self.finished.append(info["episode"])
                    self.sampler.record(slots_before[i], info["episode"]["act_goal"])
            self.rollout_actor.reset_done(self.state, dones, [self._k(i) for i in range(h.num_envs)])
            steps.append((out, valid_a, valid_u, torch.tensor(rewards), torch.tensor(dones, dtype=torch.float)))
        with torch.no_grad():
            ids, mask = self.batcher.contexts(self.obs)
            _, _, last_value, _ = self.agent(
                ids.to(self.device), mask.to(self.device), (self.state["hidden_a"], self.state["hidden_u"])
            )
        rewards = torch.stack([s[3] for s in steps]).to(self.device)
        dones = torch.stack([s[4] for s in steps]).to(self.device)
        values = torch.stack([s[0].value for s in steps])
        returns = discounted_returns(rewards, dones, last_value, h.gamma)
        cat = lambda f: torch.cat([f(s) for s in steps])  # noqa: E731
        losses = switch_a2c_loss(
            cat(lambda s: s[0].action_logits),
            cat(lambda s: s[0].speech_logits),
            cat(lambda s: s[0].action_log_prob),
            cat(lambda s: s[0].speech_log_prob),
            cat(lambda s: s[0].acted),
            cat(lambda s: s[1]),
            cat(lambda s: s[2]),
            values.reshape(-1),
            returns.reshape(-1),
            self.coef,
            cat(lambda s: s[0].action_mask),
            cat(lambda s: s[0].speech_mask),
        )
        optimizer = self.optimizers()
        optimizer.zero_grad()
        self.manual_backward(losses.total)
        self.clip_gradients(optimizer, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
        optimizer.step()
        # detach the recurrent state: the next rollout starts a new graph
        self.state["hidden_a"] = self.state["hidden_a"].detach()
        self.state["hidden_u"] = self.state["hidden_u"].detach()
        for name in (
            "total",
            "action_policy",
            "speech_policy",
            "valid_action",
            "valid_speech",
            "action_entropy",
            "speech_entropy",
            "value",
        ):
            self.log(f"losses/{name}", getattr(losses, name).detach(), batch_size=h.num_envs)
        self.log("rl/reward_per_step", rewards.mean(), batch_size=h.num_envs)
        recent = self.finished[-200:]
        if recent:
            self.log(
                "rl/act_goal_rate",
                sum(e["act_goal"] for e in recent) / len(recent),
                prog_bar=True,
                batch_size=len(recent),
            )
            self.log("rl/speech_goal_rate", sum(e["speech_goal"] for e in recent) / len(recent), batch_size=len(recent))
        return losses.total.detach()

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        super().on_save_checkpoint(checkpoint)
        checkpoint["lq_priority"] = self.sampler.state_dict() if self.env is not None else None
        checkpoint["lq_env_rng"] = self.env.rng.getstate() if self.env is not None else None

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        self._restore = checkpoint

    def on_train_start(self) -> None:
        restore = getattr(self, "_restore", None)
        if restore and restore.get("lq_priority"):
            self.sampler.load_state_dict(restore["lq_priority"])
            self.env.rng.setstate(restore["lq_env_rng"])
