"""What an RL run does beside its updates, as Lightning callbacks of :class:`lq.lit.rl.RLModule` (its
``configure_callbacks``): the choice of its agent on the validation quests (:class:`ValidationSelection`), the
held-out imitation schedule read at each choice (:class:`HeldOutImitation`) and the zero-shot evaluations at fixed
interaction budgets (:class:`BudgetEvaluation`). Each keeps its state in the run's checkpoints, so a resumed run goes
on with it, and puts the random state back after its evaluations, so training goes on as it would have without them.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import lightning as L
import torch

from lq.eval import evaluate_agent, zero_shot
from lq.lit.agent import DEMONSTRATIONS_READ

BEST = "best.ckpt"  # the weights ValidationSelection chose on the validation quests, beside the run's checkpoints


@contextlib.contextmanager
def rng_kept(module: L.LightningModule):
    """Random states put back after the block: the CPU's and, on a GPU, the module's device's (an evaluation seeds
    both), so that training goes on as it would have without the block."""
    devices = [module.device.index or 0] if module.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        yield


def _log(module: L.LightningModule, metrics: dict[str, float]) -> None:
    for logger in module.loggers:
        logger.log_metrics({k: v for k, v in metrics.items() if v == v}, step=module.global_step)  # not NaN


class ValidationSelection(L.Callback):
    """Every ``every`` environment interactions (0: never; the last weights are the agent), the agent as it stands
    played zero-shot on the validation quests (evaluation seed 0, the protocol's decoding: the ``val`` figures every
    run is chosen by), logged as ``select/val/...``; where its act & speech goals pass every earlier selection's (a
    tie keeps the earlier), its weights are kept as ``best.ckpt`` beside the run's checkpoints (``lq_chosen`` in it
    says at what), and ``select/best_interactions`` and ``select/best_val_act_and_speech_goal_rate`` say which.
    Played on rank 0; every rank takes its figures and chooses alike. ``lq.lit.cli.RLCLI.keep_chosen`` makes the
    chosen weights the run's agent."""

    def __init__(self, every: int):
        self.every = every
        self.selections: list[tuple[int, float]] = []  # (interactions, validation act & speech goals)
        self.choosing: dict | None = None  # while best.ckpt is saved: what it was chosen at

    def chosen(self) -> tuple[int, float] | None:
        """The selection kept (interactions, validation act & speech goals): the best, the earliest of equals; None
        before any."""
        return max(self.selections, key=lambda s: (s[1], -s[0])) if self.selections else None

    def just_selected(self, interactions: int) -> bool:
        return bool(self.selections) and self.selections[-1][0] == interactions

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        last = self.selections[-1][0] if self.selections else 0
        if self.every and pl_module.interactions // self.every > last // self.every:  # one a period, however long
            self.select(trainer, pl_module)

    def select(self, trainer: L.Trainer, module) -> None:
        result = None
        if trainer.is_global_zero:
            with rng_kept(module):
                result = evaluate_agent(module, "valid", seed=0)
        rate = trainer.strategy.broadcast(result.act_and_speech_rate if result is not None else None, src=0)
        interactions = module.interactions
        self.selections.append((interactions, rate))
        best_at, best = self.chosen()
        callback = trainer.checkpoint_callback
        if best_at == interactions and callback is not None and callback.dirpath:
            self.choosing = {"interactions": best_at, "val_act_and_speech_goal_rate": best}
            try:
                trainer.save_checkpoint(Path(callback.dirpath) / BEST)
            finally:
                self.choosing = None
        if result is None:  # another rank: rank 0 logs
            return
        metrics = {"select/best_interactions": best_at, "select/best_val_act_and_speech_goal_rate": best}
        _log(module, metrics | result.metrics("select/val/"))
        print(
            f"selection at {interactions} interactions (update {module.global_step}): validation act & speech goals "
            f"{result.act_and_speech_rate:.3f}; the best so far {best:.3f}, at {best_at}",
            flush=True,
        )

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        checkpoint["lq_selections"] = [list(s) for s in self.selections]
        if self.choosing:  # best.ckpt: the weights chosen, and at what
            checkpoint["lq_chosen"] = self.choosing

    def on_load_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        """Taken at the restore, not at the training's start: a resume of a run whose training had ended trains no
        more, and must still know its choice (what makes ``best.ckpt`` its agent)."""
        self.selections = [tuple(s) for s in checkpoint.get("lq_selections", [])]


class HeldOutImitation(L.Callback):
    """Memorisation stopped where it starts: at each of ``selection``'s choices the validation demonstrations are read
    teacher-forced (the first :data:`DEMONSTRATIONS_READ`: their mean action and speech accuracy, which peaks where the
    agent starts to fit its training demonstrations rather than the task; their loss does not mark it); after
    ``patience`` readings without a new best, the imitation term's weight is multiplied by ``decay`` (0: stopped) and
    the count starts again. 0 patience: off. Logs ``select/demos_val_accuracy`` and ``select/imitation``."""

    def __init__(self, selection: ValidationSelection, patience: int, decay: float, imitation: float):
        self.selection, self.patience, self.decay = selection, patience, decay
        self.state = {"best": float("-inf"), "since": 0, "imitation": imitation}  # the weight now

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if not self.patience or not self.selection.just_selected(pl_module.interactions):
            return
        accuracy = None
        if trainer.is_global_zero:
            with rng_kept(pl_module):
                accuracy = self.accuracy(pl_module)
        accuracy = trainer.strategy.broadcast(accuracy, src=0)  # every rank weighs the term alike
        state = self.state
        if accuracy > state["best"]:
            state["best"], state["since"] = accuracy, 0
        else:
            state["since"] += 1
        if state["since"] >= self.patience and state["imitation"] > 0:
            state["imitation"], state["since"] = state["imitation"] * self.decay, 0
            pl_module.a2c.weigh_imitation(state["imitation"])
            print(f"the imitation term's weight: {state['imitation']:g} (held-out accuracy past its best)", flush=True)
        if trainer.is_global_zero:
            _log(pl_module, {"select/demos_val_accuracy": accuracy, "select/imitation": state["imitation"]})

    @staticmethod
    def accuracy(module) -> float:
        figures = module.demonstration_figures("valid", DEMONSTRATIONS_READ)
        return (figures.get("action_accuracy", 0.0) + figures.get("speech_accuracy", 0.0)) / 2

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        checkpoint["lq_held_out"] = dict(self.state)

    def on_load_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        if "lq_held_out" in checkpoint:
            self.state = dict(checkpoint["lq_held_out"])

    def on_train_start(self, trainer, pl_module) -> None:
        pl_module.a2c.weigh_imitation(self.state["imitation"])  # a resumed run's weight as it stood


class BudgetEvaluation(L.Callback):
    """At each of ``budgets`` (environment interactions: one agent turn in one environment) the update reached, the
    agent's weights kept (``budget-N.ckpt`` beside the run's checkpoints) and evaluated zero-shot as an agent run is
    after fitting (:func:`lq.eval.agents.zero_shot`, evaluation seed 0, all of it whatever ``--zero_shot`` says),
    logged as ``budget/N/val/...``, ``budget/N/test/...`` and the other decoding, with the demonstrations read
    teacher-forced (``budget/N/demos/...``); past the last budget the run stops (the budget experiment)."""

    def __init__(self, budgets: tuple[int, ...]):
        self.budgets = sorted(budgets)
        self.done: list[int] = []  # the budgets evaluated so far

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if not self.budgets:
            return
        for budget in self.budgets:
            if budget <= pl_module.interactions and budget not in self.done:
                self.evaluate(trainer, pl_module, budget)
        if pl_module.interactions >= self.budgets[-1]:
            trainer.should_stop = True

    def evaluate(self, trainer: L.Trainer, module, budget: int) -> None:
        callback = trainer.checkpoint_callback
        if callback is not None and callback.dirpath:  # every rank calls it (it ends on a barrier); rank 0 writes
            trainer.save_checkpoint(Path(callback.dirpath) / f"budget-{budget}.ckpt")
        with rng_kept(module):
            played = zero_shot(module, 0) if trainer.is_global_zero else {}
            read = module.demonstration_metrics(f"budget/{budget}/") if trainer.is_global_zero else {}
        self.done.append(budget)
        metrics = {k: v for name, r in played.items() for k, v in r.metrics(f"budget/{budget}/{name}/").items()}
        metrics = {k: v for k, v in (metrics | read).items() if v == v}  # not NaN
        _log(module, metrics)
        shown = ", ".join(f"{k.split('/', 2)[2]} {v:.3f}" for k, v in metrics.items() if k.endswith("_goal_rate"))
        print(f"budget {budget} interactions (update {module.global_step}): {shown}", flush=True)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        checkpoint["lq_budgets_done"] = list(self.done)

    def on_load_checkpoint(self, trainer, pl_module, checkpoint: dict) -> None:
        self.done = list(checkpoint.get("lq_budgets_done", []))
