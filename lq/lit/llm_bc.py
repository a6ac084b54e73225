"""Behaviour cloning of a causal language model itself (issue 111): LoRA adapters (``peft``) on a frozen local model
(:func:`lq.llm.model.load_language_model`), trained on the demonstrations' self turns, then played zero-shot through
the agents' actor, switch and environment as :class:`lq.llm.policy.LanguageModelPolicy`, as every BC agent is.

Each demonstrated turn that falls in the agent's spaces (:meth:`lq.lit.agent.AgentModule.cloning_episodes`: the same
turns :class:`lq.lit.bc.BCModule` trains on) is one example: the prompt the policy reads at that turn
(:mod:`lq.llm.prompt`: the scene and motivations, the turns so far, the head's question, in the model's chat template)
and, as the model's answer, the demonstrated action or utterance followed by the template's end of an answer
(:meth:`LanguageModelPolicy.answer_ids`). The loss is the cross-entropy of the answer's tokens alone (nats per answer
token; the prompt's tokens are masked, ``labels = -100``), what the policy's ``mean`` score reads. Validation: that loss
on the validation demonstrations; the best checkpoint by ``val/loss``. A checkpoint holds the adapters' weights alone
(the base model is read again from ``llm``): SmolLM2-135M's 2.4M adapter weights and their optimiser's state are
30 MB.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping

import torch

from lq.lit.agent import Episode
from lq.lit.bc import BCModule
from lq.llm.policy import SCORES, LanguageModelPolicy
from lq.rl.acting import Actor
from lq.stages.llm import model_name

IGNORED = -100  # the label of a token the loss leaves out (Hugging Face's convention)


@dataclasses.dataclass(frozen=True)
class AnswerExample:
    """One demonstrated turn as token ids: ``prompt`` (what the policy reads) then ``answer`` (what it is taught)."""

    prompt: list[int]
    answer: list[int]


def collate_answers(examples: list[AnswerExample], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` ``[batch, longest]`` of prompt+answer, the labels
    ``IGNORED`` on the prompt and the padding, so that the loss is the answers' tokens alone."""
    longest = max(len(e.prompt) + len(e.answer) for e in examples)
    ids = torch.full((len(examples), longest), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), longest), IGNORED, dtype=torch.long)
    mask = torch.zeros((len(examples), longest), dtype=torch.long)
    for i, e in enumerate(examples):
        n, total = len(e.prompt), len(e.prompt) + len(e.answer)
        ids[i, :total] = torch.tensor(e.prompt + e.answer)
        labels[i, n:total] = torch.tensor(e.answer)
        mask[i, :total] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


class _EvalPolicy(LanguageModelPolicy):
    """The policy with its model in eval mode while it scores (no adapter dropout), its mode restored after."""

    def _scored(self, prompt: list[int], answers: list[list[int]]):
        training = self.lm.model.training
        self.lm.model.eval()
        try:
            return super()._scored(prompt, answers)
        finally:
            self.lm.model.train(training)


class LanguageModelBCModule(BCModule):
    """``llm``: the model (:func:`lq.llm.model.model_file`: ``smollm2``, a model folder or a GGUF file), in ``dtype``;
    ``lora_rank``, ``lora_alpha``, ``lora_dropout`` and ``target_modules`` (peft's ``LoraConfig``: ``all-linear``, or
    module names such as ``[q_proj, v_proj]``); ``batch_size``: demonstrated turns per update; ``score``: how the
    trained policy ranks its candidates when it plays (``mean``, what the loss trains, or ``sum``);
    ``score_batch_size``: candidates a forward pass when it plays. The rest as :class:`AgentModule` (``lr``: AdamW's,
    on the adapters alone; ``encoder``, ``context_length`` and ``agent`` build no network here: the actor's context
    text is read whole by the model's own tokenizer). Another dataset's worlds (``worlds``) are not played yet."""

    stage = "llm_bc"

    def __init__(
        self,
        llm: str = "smollm2",
        dtype: str = "float32",
        lora_rank: int = 8,
        lora_alpha: int = 16,
        lora_dropout: float = 0.05,
        target_modules: str | list[str] = "all-linear",
        batch_size: int = 8,
        score: str = "mean",
        score_batch_size: int = 32,
        **kwargs,
    ):
        if kwargs.get("worlds") is not None:
            raise ValueError("model.worlds: a language model's BC does not play another dataset's worlds yet; leave "
                             "model.worlds out")  # fmt: skip
        if score not in SCORES:
            raise ValueError(f"model.score {score}: choose {' or '.join(SCORES)}")
        super().__init__(batch_size=batch_size, **kwargs)
        self.lm = None

    def build_agent(self, vocabulary: torch.Tensor | None = None, whole_vocabulary: bool = False) -> None:
        """The model with fresh LoRA adapters (``self.agent``: the peft model, whose adapters alone train) and the
        spaces and switch it plays through (idempotent). Raises :class:`lq.llm.model.ModelError` for a model that
        cannot be read, before anything trains."""
        if self.lm is not None:
            return
        from peft import LoraConfig, get_peft_model

        from lq.llm.model import load_language_model

        h = self.hparams
        self.build_spaces()
        base = load_language_model(h.llm, h.dtype)
        targets = h.target_modules if isinstance(h.target_modules, str) else list(h.target_modules)
        config = LoraConfig(r=h.lora_rank, lora_alpha=h.lora_alpha, lora_dropout=h.lora_dropout,
                            target_modules=targets, task_type="CAUSAL_LM")  # fmt: skip
        with warnings.catch_warnings():  # peft asks transformers 5 a name it deprecates: nothing a run can change
            warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated")
            self.agent = get_peft_model(base.model, config).train()  # read in eval mode; Lightning switches it after
        self.lm = dataclasses.replace(base, model=self.agent)

    def policy(self):
        """The model as both heads' policy (:class:`lq.llm.policy.LanguageModelPolicy`), its prompt cache fresh: the
        weights it caches under may have changed since the last one. It plays in eval mode (no adapter dropout), the
        module's mode restored after it: :meth:`make_actor` leaves a training module training."""
        self.build_agent()
        return _EvalPolicy(self.lm, self.hparams.score, self.hparams.score_batch_size)

    def make_actor(self, temperature: float = 1.0, policy=None, restrict: bool | None = None) -> Actor:
        """The agents' actor with the trained model as its policy (:meth:`policy`), or another ``policy``."""
        return super().make_actor(temperature, policy or self.policy(), restrict)

    def setup(self, stage: str) -> None:
        """Each split's demonstrated turns as answer examples (``self.episodes``: what :class:`BCModule` batches)."""
        self.build_agent()
        if self.episodes or stage not in ("fit", "validate"):
            return
        for split in ("train", "valid"):
            episodes = self.demonstration_episodes(split, needed_by="behaviour cloning of the language model")
            self.episodes[split] = self.answer_examples(episodes)

    def answer_examples(self, episodes: list[Episode]) -> list[AnswerExample]:
        """Every demonstrated turn of ``episodes`` as the policy's prompt and the demonstrated answer. Raises
        :class:`lq.llm.model.ModelError` where one passes the model's context length."""
        policy = self.policy()
        out = []
        for episode in episodes:
            for context, acted, target in zip(episode.contexts, episode.acted, episode.targets, strict=True):
                head, text = ("act", self.action_space[target]) if acted else ("speak", self.utterance_space[target])
                prompt, answer = policy.prompt(context, head), policy.answer_ids(text)
                policy.check_fits(prompt, [answer])
                out.append(AnswerExample(prompt, answer))
        return out

    def collate(self, batch: list[AnswerExample]) -> dict[str, torch.Tensor]:
        tokenizer = self.lm.tokenizer
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        return collate_answers(batch, pad or 0)

    def batch_len(self, batch: dict[str, torch.Tensor]) -> int:
        return len(batch["input_ids"])

    def configure_optimizers(self):
        return torch.optim.AdamW([p for p in self.parameters() if p.requires_grad], lr=self.hparams.lr)

    def cloning_loss(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``loss``: the answers' cross-entropy, nats per answer token (the model's own shifted loss over
        ``labels``), what :class:`BCModule`'s steps log as ``train/loss`` and ``val/loss``."""
        return {"loss": self.agent(**batch).loss}

    @property
    def encoder_name(self) -> str:
        return model_name(str(self.hparams.llm))

    def demonstration_figures(self, split: str, limit: int | None = None, batch_size: int = 16) -> dict[str, float]:
        raise ValueError("lq eval --demonstrations: a language model's BC has no teacher-forced ranking of the whole "
                         "spaces; its val/loss in MLflow is its figure of the held-out demonstrations")  # fmt: skip

    def on_worlds(self, data_dir, partner_checkpoint, dm_checkpoint, networks: bool = True):
        raise ValueError("--worlds: a language model's BC does not play another dataset's worlds yet")

    def demonstration_metrics(self, prefix: str = "") -> dict[str, float]:
        """None: the agents' teacher-forced figures rank every candidate of the whole spaces at each turn, thousands
        of the model's answers a turn; ``val/loss`` is this module's figure of the held-out demonstrations."""
        return {}

    def adapter_keys(self) -> list[str]:
        """The state-dict keys of what trains (the LoRA adapters): all a checkpoint holds."""
        self.build_agent()
        return [name for name, p in self.named_parameters() if p.requires_grad]

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        super().on_save_checkpoint(checkpoint)
        keep = set(self.adapter_keys())
        checkpoint["state_dict"] = {k: v for k, v in checkpoint["state_dict"].items() if k in keep}

    def load_state_dict(self, state_dict: Mapping[str, torch.Tensor], strict: bool = True, assign: bool = False):
        """The adapters' weights (what :meth:`on_save_checkpoint` keeps) into the model, built first; ``strict``:
        every adapter must be there and nothing else this module lacks (the frozen base is read from ``llm``)."""
        keys = set(self.adapter_keys())
        missing = sorted(keys - set(state_dict))
        unexpected = sorted(set(state_dict) - set(self.state_dict()))
        if strict and (missing or unexpected):
            raise RuntimeError(
                f"LoRA adapters of {self.hparams.llm}: {len(missing)} missing (e.g. {missing[:2]}), {len(unexpected)} "
                f"unexpected (e.g. {unexpected[:2]}): a checkpoint of another model or adapter configuration "
                "(lora_rank, target_modules)"
            )
        return super().load_state_dict(state_dict, strict=False, assign=assign)
