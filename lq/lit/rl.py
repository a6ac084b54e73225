"""The switch A2C agent as a LightningModule with its own rollout loop (paper 4.2, appendix 8.2).

Each training step is two calls of :mod:`lq.rl.a2c`: ``collect`` plays ``rollout_steps`` steps of a batch of
environments in the main process with the current weights, ``a2c_losses`` gives the switch A2C objective of
that rollout; then one optimiser step. Lightning supplies the loop count, checkpoints, logging and devices;
the environment, the frozen partner and DM live in the module (each DDP rank runs its own environments,
seeded by rank). Quests are drawn by priority sampling (:class:`lq.rl.priority.PrioritySampler`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
from dataclasses import asdict
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from lq.data.dataset import load_dataset
from lq.data.outputs import DONE, TRAINED, trained
from lq.eval import evaluate_agent, zero_shot
from lq.lit.agent import DEMONSTRATIONS_READ, VOCABULARY, AgentModule, read_checkpoint, start_differences
from lq.rl.a2c import RolloutState, a2c_losses, collect
from lq.rl.curriculum import RarityCurriculum, rarity_order
from lq.rl.curves import StartedEpisodes
from lq.rl.losses import A2CSettings, LossCoefficients, Losses
from lq.rl.priority import PrioritySampler
from lq.rl.switch import RatioSwitch

# the agent's scalar gains, which learn at gain_lr_scale times the learning rate: the exact-match feature's weight and
# the heads' temperatures (AgentConfig.head_temperature)
GAINS = ("speech_match_weight", "head_log_temperature")
TEMPERATURES = "agent.head_log_temperature"  # their state-dict key
CURRICULA = (None, "rarity")  # model.curriculum: none (priority sampling over every training quest), or by rarity
BEST = "best.ckpt"  # the weights select() chose on the validation quests, beside the run's checkpoints


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
        ``gain_lr_scale``: the agent's scalar gains (:data:`GAINS`: the exact-match weight ``speech_match_weight`` and,
        where ``agent.head_temperature`` is on, the heads' log-temperatures) learn at ``lr`` times this, in their own
        parameter group (Adam moves a parameter by about ``lr`` a step: at 1 a gain barely leaves its start);
        ``budgets``: environment interactions (one agent turn in one environment: ``num_envs`` x ``rollout_steps`` an
        update) at which the agent as it stands is evaluated zero-shot (:meth:`evaluate_budget`), the run ending at the
        last (the budget experiment); ``select_every``: environment interactions between the evaluations on the
        validation quests that choose the run's agent (:meth:`select`: ``best.ckpt``, the best validation act & speech
        goals so far, ``lq_chosen`` saying at what; 0: none, the last weights are the agent); ``curriculum``: ``rarity``
        orders the training quests from common to rare and opens them in ``curriculum_stages`` stages, all of them by
        ``curriculum_interactions`` (:class:`lq.rl.curriculum.RarityCurriculum`; None: priority sampling over them
        all); ``imitation_patience``: at each selection (``select_every``) the validation demonstrations are also read
        teacher-forced, and after that many selections without a new best of their mean action and speech accuracy the
        imitation term's weight is multiplied by ``imitation_decay`` (0: stopped; :meth:`held_out_imitation`; 0
        patience: the weight stays); the rest as :class:`AgentModule`."""
        settings = A2CSettings(
            coefficients=coefficients,
            gamma=gamma,
            normalize_advantages=normalize_advantages,
            valid_reduction=valid_reduction,
            imitation_batch=imitation_batch,
        )
        if imitation_patience and not select_every:
            raise ValueError(
                "model.imitation_patience: the held-out signal is read at each selection; set model.select_every too"
            )
        if curriculum not in CURRICULA:
            raise ValueError(f"model.curriculum={curriculum!r}: choose {' or '.join(map(str, CURRICULA))}")
        super().__init__(**kwargs)
        self.settings = settings
        self.hparams["coefficients"] = asdict(self.settings.coefficients)
        self.automatic_optimization = False
        self.env = None
        self.demo_episodes = []
        self.budgets_done: list[int] = []  # the budgets evaluated so far (kept in checkpoints: a resume goes on)
        self.selections: list[tuple[int, float]] = []  # (interactions, validation act & speech goals) of select()
        self._choosing: dict | None = None  # while select() saves best.ckpt: what it was chosen at
        # held_out_imitation's: the best held-out demonstration accuracy, the selections since, the weight now
        self.held_out = {"best": float("-inf"), "since": 0, "imitation": self.settings.coefficients.imitation}

    # -- building ------------------------------------------------------------------------------------

    def setup(self, stage: str) -> None:
        self.check_worlds()
        if self.hparams.init_from and self.agent is None:
            self.start_from(self.start_checkpoint)
        self.build_agent()
        if self.env is not None or stage != "fit":
            return
        h = self.hparams
        rank = self.global_rank if self._trainer is not None else 0
        speech_rewards = h.ability != "speech_no_speech_goals"  # Table 2's ablation: its act reward alone
        self.env = self.env_spec.replace(speech_rewards=speech_rewards).build(
            "train", h.num_envs, h.seed + 1000 * rank, self.run_device, max_steps=h.max_steps
        )
        self.sampler = PrioritySampler(len(self.env.instances), mix=h.priority_mix)
        if h.get("curriculum") == "rarity":
            dataset = load_dataset(self.data_dir)
            quests = dataset.quests_by_id()
            reference = [quests[d.conv_extra["quest_id"]].goal for d in dataset.demos.train]  # the dataset's own
            order = rarity_order([inst.quest.goal for inst in self.env.instances], reference)
            self.sampler = RarityCurriculum(self.sampler, order, h.curriculum_stages, h.curriculum_interactions)
        self.env.sampler = self.sampler
        self.rollout_actor = self.make_actor(h.temperature)
        average_k = getattr(self.switch, "average_k", 1)
        k_of = [RatioSwitch.k_for(inst.demo, average_k) for inst in self.env.instances]
        self.rollout_state = RolloutState.start(self.env, self.rollout_actor, k_of)
        self.unsolvable = {
            i for i, inst in enumerate(self.env.instances) if inst.quest.goal not in self.env.action_index
        }
        self.curve_episodes = StartedEpisodes(h.recent_episodes)  # what the training curves average
        if self.settings.coefficients.imitation > 0:
            self.demo_episodes = self.demonstration_episodes("train")
            if not self.demo_episodes:
                raise ValueError(
                    f"model.coefficients.imitation: {self.data_dir} has no training demonstration linked to a quest "
                    "whose goal can be played; set it to 0 (`lq data stats` on this folder says what became of each)"
                )

    @property
    def start_checkpoint(self) -> str | None:
        """The checkpoint ``init_from`` names: ``bc`` stands for ``bc_checkpoint``."""
        h = self.hparams
        if h.init_from != "bc":
            return h.init_from
        if not h.bc_checkpoint:
            raise ValueError(
                "model.init_from: bc starts from the BC agent of this run's configuration and seed, but "
                "model.bc_checkpoint is not set: run it through `lq stage rl` or `make rl` (its resolved config "
                "names that agent), name it (--model.bc_checkpoint PATH) or another checkpoint (--model.init_from "
                "PATH), or start from the encoder (--model.init_from null, the paper's)"
            )
        if Path(h.bc_checkpoint).is_file() and not trained(h.bc_checkpoint):
            raise ValueError(
                f"model.init_from: bc: the BC agent {h.bc_checkpoint} is a run's that did not finish its training "
                f"(killed or interrupted: neither {DONE} nor {TRAINED} beside it); train it again (make bc, lq stage "
                "bc) before RL starts from it"
            )
        return h.bc_checkpoint

    def start_from(self, checkpoint: str) -> None:
        """Build the agent with ``checkpoint``'s weights (its critic too, where that agent trained one). ``{seed}`` in
        the path stands for this run's seed, so that one argument starts every seed of ``make rl`` from the BC agent
        of the same seed (``outputs/bc/scratch/act_speech-hardcoded/seed-{seed}/best.ckpt``)."""
        checkpoint = str(checkpoint).replace("{seed}", str(self.hparams.seed))
        try:
            saved = read_checkpoint(checkpoint)
        except FileNotFoundError as e:
            raise FileNotFoundError(f"model.init_from: {e}") from None
        theirs = saved.get("hyper_parameters", {})
        if saved.get("lq_stage") not in ("bc", "rl"):
            raise ValueError(f"model.init_from: {checkpoint} is not an lq agent checkpoint (from lq bc or lq rl)")
        differ = start_differences(theirs, self.hparams)
        if differ:
            raise ValueError(
                f"model.init_from: {checkpoint} is an agent of another {', '.join(differ)} "
                f"({', '.join(f'{k}={v!r}' for k, v in differ.items())}); start from one trained with this run's"
            )
        state = saved["state_dict"]
        self.build_agent(state.get(VOCABULARY))
        if self.agent_config.head_temperature and TEMPERATURES not in state:  # at the agent's start: the agent it was
            state = {**state, TEMPERATURES: self.state_dict()[TEMPERATURES]}
        self.load_state_dict(state)

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
        h = self.hparams
        if isinstance(self.sampler, RarityCurriculum):
            self.sampler.reach(self.interactions)
            self.log("rl/curriculum_stage", float(self.sampler.stage()), batch_size=h.num_envs)
        rollout = collect(self.env, self.rollout_actor, self.rollout_state, h.rollout_steps)
        losses = self.objective(rollout)
        optimizer = self.optimizers()
        optimizer.zero_grad()
        self.manual_backward(losses.total)
        self.clip_gradients(optimizer, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
        optimizer.step()
        for episode in rollout.episodes:
            self.sampler.record(episode["instance"], episode["act_goal"])
        self.curve_episodes.add(rollout.episodes)
        self.log_training(losses, rollout)
        return losses.total.detach()

    @property
    def interactions(self) -> int:
        """Environment interactions so far, over every rank: one agent turn in one environment."""
        h = self.hparams
        return self.global_step * h.num_envs * h.rollout_steps * self.trainer.world_size

    def on_train_batch_end(self, outputs, batch, batch_idx: int) -> None:
        """Every ``select_every`` interactions: the choice of the run's agent on the validation quests; at each budget
        the update reached: the zero-shot evaluation; past the last budget, the run stops."""
        every = self.hparams.get("select_every", 0)
        last = self.selections[-1][0] if self.selections else 0
        if every and self.interactions // every > last // every:  # one selection a period, however long an update
            self.select()
        budgets = sorted(self.hparams.budgets)
        if not budgets:
            return
        for budget in budgets:
            if budget <= self.interactions and budget not in self.budgets_done:
                self.evaluate_budget(budget)
        if self.interactions >= budgets[-1]:
            self.trainer.should_stop = True

    def evaluate_budget(self, budget: int) -> None:
        """The agent's weights at ``budget`` interactions, kept (``budget-N.ckpt`` beside the run's checkpoints) and
        evaluated zero-shot as an agent run is after fitting (:func:`lq.eval.agents.zero_shot`, evaluation seed 0, all
        of it whatever ``--zero_shot`` says),
        logged as ``budget/N/val/...``, ``budget/N/test/...`` and the other decoding, with the demonstrations read
        teacher-forced (``budget/N/demos/...``: :meth:`demonstration_metrics`). The random state the rollouts
        sample with is put back after, so that training goes on as it would have without the evaluation."""
        callback = self.trainer.checkpoint_callback
        if callback is not None and callback.dirpath:  # every rank calls it (it ends on a barrier); rank 0 writes
            self.trainer.save_checkpoint(Path(callback.dirpath) / f"budget-{budget}.ckpt")
        with self.rng_kept():
            played = zero_shot(self, 0) if self.trainer.is_global_zero else {}
            read = self.demonstration_metrics(f"budget/{budget}/") if self.trainer.is_global_zero else {}
        self.budgets_done.append(budget)
        metrics = {k: v for name, r in played.items() for k, v in r.metrics(f"budget/{budget}/{name}/").items()}
        metrics |= read
        metrics = {k: v for k, v in metrics.items() if v == v}  # not NaN
        for logger in self.loggers:
            logger.log_metrics(metrics, step=self.global_step)
        shown = ", ".join(f"{k.split('/', 2)[2]} {v:.3f}" for k, v in metrics.items() if k.endswith("_goal_rate"))
        print(f"budget {budget} interactions (update {self.global_step}): {shown}", flush=True)

    def select(self) -> None:
        """The agent as it stands, played zero-shot on the validation quests (evaluation seed 0, the protocol's
        decoding: the ``val`` figures every run is chosen by), logged as ``select/val/...``; where its act & speech
        goals pass every earlier selection's (a tie keeps the earlier), its weights are kept as ``best.ckpt`` beside
        the run's checkpoints, and ``select/best_interactions`` and ``select/best_val_act_and_speech_goal_rate`` say
        which. The random state (the CPU's and the GPU's) is put back after, so that training goes on as it would have
        without it. Played on rank 0; every rank takes its figures and chooses alike."""
        result, held_out = None, None
        if self.trainer.is_global_zero:
            with self.rng_kept():
                result = evaluate_agent(self, "valid", seed=0)
                if self.hparams.get("imitation_patience", 0):
                    held_out = self.held_out_accuracy()
        # every rank takes rank 0's figures, so that all choose, save and weigh the imitation term alike
        rate, held_out = self.trainer.strategy.broadcast(
            (result.act_and_speech_rate if result is not None else None, held_out), src=0
        )
        self.selections.append((self.interactions, rate))
        best_at, best = self.chosen()
        callback = self.trainer.checkpoint_callback
        if best_at == self.interactions and callback is not None and callback.dirpath:
            self._choosing = {"interactions": best_at, "val_act_and_speech_goal_rate": best}
            try:
                self.trainer.save_checkpoint(Path(callback.dirpath) / BEST)
            finally:
                self._choosing = None
        metrics = {"select/best_interactions": best_at, "select/best_val_act_and_speech_goal_rate": best}
        if held_out is not None:
            metrics |= self.held_out_imitation(held_out)
        if result is None:  # another rank: rank 0 logs
            return
        metrics |= result.metrics("select/val/")
        for logger in self.loggers:
            logger.log_metrics({k: v for k, v in metrics.items() if v == v}, step=self.global_step)
        print(
            f"selection at {self.interactions} interactions (update {self.global_step}): validation act & speech goals "
            f"{result.act_and_speech_rate:.3f}; the best so far {best:.3f}, at {best_at}",
            flush=True,
        )

    def held_out_accuracy(self) -> float:
        """The held-out signal: the validation demonstrations read teacher-forced (the first
        :data:`DEMONSTRATIONS_READ`), their mean action and speech accuracy (it peaks where the agent starts to fit its
        training demonstrations rather than the task; their loss does not mark it)."""
        figures = self.demonstration_figures("valid", DEMONSTRATIONS_READ)
        return (figures.get("action_accuracy", 0.0) + figures.get("speech_accuracy", 0.0)) / 2

    def held_out_imitation(self, accuracy: float) -> dict[str, float]:
        """Memorisation stopped where it starts: after ``imitation_patience`` readings of :meth:`held_out_accuracy`
        without a new best, the imitation term's weight is multiplied by ``imitation_decay`` and the count starts again.
        Returns what it logs (``select/demos_val_accuracy``, ``select/imitation``)."""
        h, state = self.hparams, self.held_out
        if accuracy > state["best"]:
            state["best"], state["since"] = accuracy, 0
        else:
            state["since"] += 1
        if state["since"] >= h.imitation_patience and state["imitation"] > 0:
            state["imitation"], state["since"] = state["imitation"] * h.imitation_decay, 0
            self.weigh_imitation(state["imitation"])
            print(f"the imitation term's weight: {state['imitation']:g} (held-out accuracy past its best)", flush=True)
        return {"select/demos_val_accuracy": accuracy, "select/imitation": state["imitation"]}

    @contextlib.contextmanager
    def rng_kept(self):
        """Random states put back after the block: the CPU's and, on a GPU, the module's device's (an evaluation seeds
        both), so that training goes on as it would have without the block."""
        devices = [self.device.index or 0] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            yield

    def weigh_imitation(self, weight: float) -> None:
        """The imitation term's weight from now on."""
        coefficients = dataclasses.replace(self.settings.coefficients, imitation=weight)
        self.settings = dataclasses.replace(self.settings, coefficients=coefficients)

    def chosen(self) -> tuple[int, float] | None:
        """The selection :meth:`select` keeps (interactions, validation act & speech goals): the best, the earliest of
        equals; None before any."""
        return max(self.selections, key=lambda s: (s[1], -s[0])) if self.selections else None

    def objective(self, rollout) -> Losses:
        """The update's terms on ``rollout`` (:data:`lq.rl.losses.TERMS`): the A2C objective's, and the imitation term
        on this module's training demonstrations where ``coefficients.imitation`` turns it on; ``total`` is what the
        update minimises (``losses/total``)."""
        imitation = self.imitation_loss if self.demo_episodes else None
        return a2c_losses(rollout, self.settings, imitation)

    def term_gradients(self, rollouts: int = 4) -> dict[str, tuple[float, float]]:
        """Where an update goes: each weighted term of the objective (:data:`lq.rl.losses.TERMS`, the imitation term
        where on, and their sum, ``total``) with its value and the norm of its gradient alone over the trainable
        weights, averaged over ``rollouts`` rollouts of the training environment (after :meth:`setup`; nothing is
        updated). ``lq gradients`` prints them as shares of the total's norm."""
        h, params = self.hparams, [p for p in self.parameters() if p.requires_grad]
        sums: dict[str, list[float]] = {}
        for _ in range(rollouts):
            rollout = collect(self.env, self.rollout_actor, self.rollout_state, h.rollout_steps)
            losses = self.objective(rollout)
            terms = {**losses.weighted, "total": losses.total}
            for name, term in terms.items():
                norm = term.new_zeros(())  # a term with no path to the weights (no step of its head in the rollout)
                if term.requires_grad:
                    grads = torch.autograd.grad(term, params, retain_graph=True, allow_unused=True)
                    norm = torch.stack([g.pow(2).sum() for g in grads if g is not None] or [norm]).sum()
                value, size = sums.setdefault(name, [0.0, 0.0])
                sums[name] = [value + term.item() / rollouts, size + norm.sqrt().item() / rollouts]
        return {name: (value, size) for name, (value, size) in sums.items()}

    def imitation_loss(self) -> torch.Tensor:
        """Behaviour cloning's loss (:meth:`AgentModule.cloning_loss`) on ``imitation_batch`` training demonstrations
        drawn at random (by the global generator, which a resumed run restores with the rollout)."""
        n = len(self.demo_episodes)
        picks = torch.randint(n, (min(self.settings.imitation_batch, n),)).tolist()
        return self.cloning_loss([self.demo_episodes[i] for i in picks])["loss"]

    def gains(self) -> dict[str, float]:
        """The agent's scalar gains as they stand: the exact-match weight and, where learned, each head's
        temperature (their curves say whether their own learning rate lets them move)."""
        out = {}
        if (weight := getattr(self.agent, "speech_match_weight", None)) is not None:
            out["speech_match_weight"] = weight.item()
        if (log_t := getattr(self.agent, "head_log_temperature", None)) is not None:
            out["action_temperature"], out["speech_temperature"] = log_t.exp().tolist()
        return out

    def log_training(self, losses: Losses, rollout) -> None:
        n, demos = self.hparams.num_envs, self.hparams.imitation_batch
        for name, value in {"total": losses.total, **losses.terms}.items():  # the imitation term: over its demos
            self.log(f"losses/{name}", value.detach(), batch_size=demos if name == "imitation" else n)
        self.log("rl/reward_per_step", rollout.rewards.mean(), batch_size=n)
        for name, gain in self.gains().items():
            self.log(f"agent/{name}", gain, batch_size=n)
        if window := self.curve_episodes.window(slot.serial for slot in self.env.slots):
            m = len(window)
            self.log("rl/act_goal_rate", sum(e["act_goal"] for e in window) / m, prog_bar=True, batch_size=m)
            self.log("rl/speech_goal_rate", sum(e["speech_goal"] for e in window) / m, batch_size=m)
            self.log("rl/return", sum(e["return"] for e in window) / m, batch_size=m)
            # the share of episodes in which a character left the starting room (a checkpoint saved before lq kept
            # it has episodes without it in its window until they age out)
            if left := [e["left_start"] for e in window if "left_start" in e]:
                self.log("rl/left_start_share", sum(left) / len(left), batch_size=len(left))
            # episodes on quests whose goal is not in the action space: priority sampling must not let them take over
            unsolvable = sum(e["instance"] in self.unsolvable for e in window) / m
            self.log("rl/unsolvable_share", unsolvable, batch_size=m)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        super().on_save_checkpoint(checkpoint)
        if self.env is not None:
            checkpoint["lq_priority"] = self.sampler.state_dict()
            checkpoint["lq_budgets_done"] = list(self.budgets_done)
            checkpoint["lq_selections"] = [list(s) for s in self.selections]
            checkpoint["lq_held_out"] = dict(self.held_out)
            if self._choosing:  # best.ckpt: the weights chosen, and at what
                checkpoint["lq_chosen"] = self._choosing
            checkpoint["lq_env_rng"] = self.env.rng.getstate()
            if self.trainer.world_size == 1:  # each DDP rank plays its own rollout: only a single one is kept
                checkpoint["lq_rollout"] = self.rollout_snapshot()

    def rollout_snapshot(self) -> torch.Tensor:
        """What a resumed run needs to go on exactly where this one is: the episodes in play (their worlds,
        histories and turns), the last observations and the actor's per-episode state, the episodes of the training
        curves and the random state that samples the actions; pickled into a byte tensor (a checkpoint
        stays loadable with ``weights_only=True``)."""
        state = self.rollout_state
        snapshot = {
            "slots": self.env.slots,
            "obs": state.obs,
            "infos": state.infos,
            "actor": state.actor.map(lambda t: t.detach().cpu()),
            "k_of": state.k_of,
            "started": self.env.started,
            "recent": self.curve_episodes.ended,
            "torch_rng": torch.get_rng_state(),
        }
        return torch.frombuffer(bytearray(pickle.dumps(snapshot)), dtype=torch.uint8)

    def restore_rollout(self, blob: torch.Tensor) -> None:
        snapshot = pickle.loads(blob.numpy().tobytes())
        self.env.slots = snapshot["slots"]
        actor = self.rollout_actor.placed(snapshot["actor"])  # GRU states on the agent's device, counters on the CPU
        self.rollout_state = RolloutState(snapshot["obs"], snapshot["infos"], actor, snapshot["k_of"])
        self.env.started = snapshot.get("started", 0)  # a snapshot from before episodes were numbered: from 0
        self.curve_episodes.ended = snapshot["recent"] if isinstance(snapshot["recent"], dict) else {}
        torch.set_rng_state(snapshot["torch_rng"])

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """What the run evaluated and chose among is taken here, not in :meth:`on_train_start`: a resume from a run
        whose training had ended trains no more and calls no ``on_train_start``, and must still know its choice (what
        makes ``best.ckpt`` its agent: :meth:`lq.lit.cli.RLCLI.keep_chosen`)."""
        self._restore = checkpoint
        self.budgets_done = list(checkpoint.get("lq_budgets_done", []))
        self.selections = [tuple(s) for s in checkpoint.get("lq_selections", [])]

    def on_train_start(self) -> None:
        """Resuming (``--ckpt_path``): the priority table, the quest sampler's random state and, from a single-process
        run, the rollout itself, so that the resumed run goes on as the uninterrupted one would have."""
        restore = getattr(self, "_restore", None)
        if restore:
            if "lq_held_out" in restore:
                self.held_out = dict(restore["lq_held_out"])
                self.weigh_imitation(self.held_out["imitation"])
        if restore and restore.get("lq_priority"):
            self.sampler.load_state_dict(restore["lq_priority"])
            self.env.rng.setstate(restore["lq_env_rng"])
            if restore.get("lq_rollout") is not None and self.trainer.world_size == 1:
                self.restore_rollout(restore["lq_rollout"])
