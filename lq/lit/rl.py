"""The switch A2C agent as a LightningModule (paper 4.2, appendix 8.2): the Lightning shell of the algorithm,
:class:`lq.rl.a2c.SwitchA2C`. ``setup`` builds the training environments (the frozen partner and DM inside; each DDP
rank its own, seeded by rank), the quest sampler and the algorithm; a training step is one update; the checkpoint
hooks keep the algorithm's state. The choice of the agent on validation, the held-out imitation schedule and the
budget evaluations are callbacks (:mod:`lq.lit.selection`).
"""

from __future__ import annotations

from dataclasses import asdict

import torch
from torch.utils.data import DataLoader

from lq.lit.agent import AgentModule, start_checkpoint
from lq.lit.selection import BudgetEvaluation, HeldOutImitation, ValidationSelection
from lq.rl.a2c import Losses, Rollout, SwitchA2C
from lq.rl.curriculum import RarityCurriculum, dataset_rarity_order
from lq.rl.losses import A2CSettings, LossCoefficients
from lq.rl.priority import PrioritySampler
from lq.rl.switch import RatioSwitch

# the agent's scalar gains, which learn at gain_lr_scale times the learning rate: the exact-match feature's weight and
# the heads' temperatures (AgentConfig.head_temperature)
GAINS = ("speech_match_weight", "head_log_temperature")
CURRICULA = (None, "rarity")  # model.curriculum: none (priority sampling over every training quest), or by rarity


class RLModule(AgentModule):
    stage = "rl"

    def __init__(
        self,
        num_envs: int = 32,
        rollout_steps: int = 8,
        max_steps: int | None = None,
        gamma: float = 0.99,
        temperature: float = 1.0,
        coefficients: LossCoefficients = LossCoefficients(),  # noqa: B008 (frozen dataclass)
        updates_per_epoch: int = 50,
        priority_mix: float = 0.5,
        recent_episodes: int = 200,
        normalize_advantages: bool = True,
        valid_reduction: str = "sum",
        init_from: str | None = None,
        bc_checkpoint: str | None = None,
        imitation_batch: int = 4,
        adam_betas: tuple[float, float] = (0.9, 0.999),
        gain_lr_scale: float = 1.0,
        budgets: tuple[int, ...] = (),
        select_every: int = 0,
        curriculum: str | None = None,
        curriculum_stages: int = 4,
        curriculum_interactions: int = 100_000,
        imitation_patience: int = 0,
        imitation_decay: float = 0.0,
        **kwargs,
    ):
        """The rollout and A2C hyperparameters (Table 6; ``max_steps``: the training episodes' agent turns in place of
        the protocol's); ``init_from``: an agent checkpoint (``lq bc``'s or ``lq rl``'s, of the same encoder, sizes and
        data) whose weights the agent starts from, or ``bc``: ``bc_checkpoint``, the BC agent of this run's encoder,
        ability, switch and seed (the run's resolved config names it: :meth:`lq.stages.Stage.resolve`); lq's default
        (conf/objective/lq.yaml) fine-tunes that behaviour-cloned agent, the paper's agents start from their encoder
        (None); ``imitation_batch``: training demonstrations per update in the imitation term, where
        ``coefficients.imitation`` turns it on; ``adam_betas``: Adam's (the released code's: 0.8, 0.999);
        ``gain_lr_scale``: the agent's scalar gains (:data:`GAINS`) learn at ``lr`` times this, in their own parameter
        group (Adam moves a parameter by about ``lr`` a step: at 1 a gain barely leaves its start); ``budgets``:
        environment interactions (one agent turn in one environment) at which the agent is evaluated zero-shot, the
        run ending at the last (:class:`lq.lit.selection.BudgetEvaluation`); ``select_every``: interactions between the
        choices of the run's agent on the validation quests (:class:`lq.lit.selection.ValidationSelection`; 0: none,
        the last weights are the agent); ``curriculum``: ``rarity`` opens the training quests from common to rare in
        ``curriculum_stages`` stages, all of them by ``curriculum_interactions`` (:class:`lq.rl.curriculum.
        RarityCurriculum`; None: priority sampling over them all); ``imitation_patience`` and ``imitation_decay``: the
        held-out imitation schedule (:class:`lq.lit.selection.HeldOutImitation`); the rest as :class:`AgentModule`."""
        settings = A2CSettings(coefficients=coefficients, gamma=gamma, normalize_advantages=normalize_advantages,
                               valid_reduction=valid_reduction, imitation_batch=imitation_batch)  # fmt: skip
        if imitation_patience and not select_every:
            raise ValueError(
                "model.imitation_patience: the held-out signal is read at each selection; set model.select_every too"
            )
        if curriculum not in CURRICULA:
            raise ValueError(f"model.curriculum={curriculum!r}: choose {' or '.join(map(str, CURRICULA))}")
        super().__init__(**kwargs)
        self.settings = settings  # the algorithm's at its start (held-out imitation may weigh its term down since)
        self.hparams["coefficients"] = asdict(self.settings.coefficients)
        self.automatic_optimization = False
        self.a2c: SwitchA2C | None = None
        self.demo_episodes = []
        self.selection = ValidationSelection(select_every)
        self.held_out = HeldOutImitation(self.selection, imitation_patience, imitation_decay,
                                         settings.coefficients.imitation)  # fmt: skip
        self.budgets = BudgetEvaluation(budgets)

    def configure_callbacks(self) -> list:
        return [self.selection, self.held_out, self.budgets]  # in this order at each update's end

    def chosen(self) -> tuple[int, float] | None:  # the agent chosen on the validation quests so far
        return self.selection.chosen()

    # -- building ------------------------------------------------------------------------------------

    def setup(self, stage: str) -> None:
        self.check_worlds()
        if self.hparams.init_from and self.agent is None:
            self.start_from(start_checkpoint(self.hparams.init_from, self.hparams.bc_checkpoint))
        self.build_agent()
        if self.a2c is not None or stage != "fit":
            return
        h = self.hparams
        rank = self.global_rank if self._trainer is not None else 0
        speech_rewards = h.ability != "speech_no_speech_goals"  # Table 2's ablation: its act reward alone
        env = self.env_spec.replace(speech_rewards=speech_rewards).build(
            "train", h.num_envs, h.seed + 1000 * rank, self.run_device, max_steps=h.max_steps
        )
        env.sampler = PrioritySampler(len(env.instances), mix=h.priority_mix)
        if h.get("curriculum") == "rarity":
            order = dataset_rarity_order([inst.quest.goal for inst in env.instances], self.data_dir)
            env.sampler = RarityCurriculum(env.sampler, order, h.curriculum_stages, h.curriculum_interactions)
        average_k = getattr(self.switch, "average_k", 1)
        k_of = [RatioSwitch.k_for(inst.demo, average_k) for inst in env.instances]
        imitation = lambda: self.imitation_loss()  # noqa: E731 (looked up at each call: a benchmark may wrap it)
        self.a2c = SwitchA2C(env, self.make_actor(h.temperature), self.settings, h.rollout_steps, h.recent_episodes,
                             k_of, imitation if self.settings.coefficients.imitation > 0 else None)  # fmt: skip
        self.unsolvable = {i for i, inst in enumerate(env.instances) if inst.quest.goal not in env.action_index}
        if self.settings.coefficients.imitation > 0:  # (set it to 0 where the data has no demonstration to imitate)
            self.demo_episodes = self.demonstration_episodes("train", needed_by="model.coefficients.imitation")

    @property
    def env(self):
        """The training environments (after :meth:`setup` for fitting; None before)."""
        return self.a2c.env if self.a2c is not None else None

    def train_dataloader(self) -> DataLoader:
        """One item per update: the rollout itself is the data. Its own generator: a loader's iterator draws a seed,
        and drawn from the global one it would shift the actions' random state between epochs (and differently in
        a resumed run, whose first iterator Lightning makes before ``on_train_start``)."""
        return DataLoader(range(self.hparams.updates_per_epoch), batch_size=1, generator=torch.Generator())

    def configure_optimizers(self):
        h = self.hparams
        named = [(n, p) for n, p in self.named_parameters() if p.requires_grad]
        if h.gain_lr_scale == 1.0:
            return torch.optim.Adam([p for _, p in named], lr=h.lr, betas=tuple(h.adam_betas))
        gain = [p for n, p in named if n.endswith(GAINS)]
        rest = [p for n, p in named if not n.endswith(GAINS)]
        groups = [{"params": rest}, {"params": gain, "lr": h.lr * h.gain_lr_scale}]
        return torch.optim.Adam([g for g in groups if g["params"]], lr=h.lr, betas=tuple(h.adam_betas))

    # -- training ------------------------------------------------------------------------------------

    def training_step(self, batch, batch_idx: int):
        update = self.a2c.update(self.optimizers(), self.manual_backward, self.clip, self.interactions)
        return self.log_training(*update)

    def clip(self, optimizer) -> None:
        """Table 6's gradient clipping, at a norm of 1 (every objective's)."""
        self.clip_gradients(optimizer, gradient_clip_val=1.0, gradient_clip_algorithm="norm")

    @property
    def interactions(self) -> int:
        """Environment interactions so far, over every rank: one agent turn in one environment."""
        h = self.hparams
        return self.global_step * h.num_envs * h.rollout_steps * self.trainer.world_size

    def imitation_loss(self) -> torch.Tensor:
        """Behaviour cloning's loss (:meth:`AgentModule.cloning_loss`) on ``imitation_batch`` training demonstrations
        drawn at random (by the global generator, which a resumed run restores with the rollout)."""
        n = len(self.demo_episodes)
        picks = torch.randint(n, (min(self.settings.imitation_batch, n),)).tolist()
        return self.cloning_loss([self.demo_episodes[i] for i in picks])["loss"]

    def log_training(self, losses: Losses, rollout: Rollout) -> torch.Tensor:
        """The update's curves (``losses/*``, ``rl/*``, ``agent/*``); returns its total loss, detached."""
        n, demos, env = self.hparams.num_envs, self.hparams.imitation_batch, self.a2c.env
        if isinstance(self.a2c.sampler, RarityCurriculum):
            self.log("rl/curriculum_stage", float(self.a2c.sampler.stage()), batch_size=n)
        for name, value in {"total": losses.total, **losses.terms}.items():  # the imitation term: over its demos
            self.log(f"losses/{name}", value.detach(), batch_size=demos if name == "imitation" else n)
        self.log("rl/reward_per_step", rollout.rewards.mean(), batch_size=n)
        for name, gain in self.gains().items():
            self.log(f"agent/{name}", gain, batch_size=n)
        for name, (value, size) in self.a2c.curves.figures((s.serial for s in env.slots), self.unsolvable).items():
            self.log(f"rl/{name}", value, prog_bar=name == "act_goal_rate", batch_size=size)
        return losses.total.detach()

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        super().on_save_checkpoint(checkpoint)
        if self.a2c is not None:  # each DDP rank plays its own rollout: only a single process's is kept
            checkpoint.update(self.a2c.state_dict(rollout=self.trainer.world_size == 1))

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        self._restore = checkpoint

    def on_train_start(self) -> None:
        """Resuming (``--ckpt_path``): the priority table, the quest sampler's random state and, from a single-process
        run, the rollout itself, so that the resumed run goes on as the uninterrupted one would have."""
        if restore := getattr(self, "_restore", None):
            self.a2c.load_state_dict(restore, rollout=self.trainer.world_size == 1)
