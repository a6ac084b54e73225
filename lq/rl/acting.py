"""Turning the switch agent's scores into environment commands, the same way in RL, BC, evaluation and the baselines.

Each step the switch picks the head (act or speak, or only one for the ability ablations); the Dungeon
Master ranks the utterances only for the environments about to speak; the head samples its candidate by
Boltzmann exploration (softmax at a temperature) or, greedily, takes the best one. Per-environment
counters feed the switch.

Under the ``paper`` protocol a head chooses among its whole space; with ``restrict=True`` (the ``restricted``
protocol) only among the candidates the environment says are valid: the engine's valid actions and the Dungeon
Master's M valid utterances (Jericho's valid-action handicap). The valid-output losses are trained either way, on
targets the protocol sets (:meth:`Actor._loss_targets`).

The baselines are the same actor with a rule of :mod:`lq.rl.baseline_policies` for a policy, so they play through the
same switch, candidates and environment; so does a language model (:class:`CandidateScorer`: :mod:`lq.llm.policy`),
which scores only the candidates its head chooses among this step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Protocol as Interface
from typing import runtime_checkable

import torch

from lq.models.agent import SwitchAgent
from lq.models.poly_encoder import TextBatcher
from lq.rl.baseline_policies import rule_scores
from lq.rl.losses import masked
from lq.rl.registry import RULE_DECODING, RULES
from lq.rl.switch import HardcodedSwitch, RatioSwitch

ABILITIES = ("act_speech", "act", "speech", "speech_no_speech_goals")


@dataclass
class StepOutput:
    """One step of the actor for a batch: the fields of a :class:`lq.rl.rollout.Rollout` at one time step, by the
    same names (:meth:`Rollout.store`)."""

    action_logits: torch.Tensor  # [b, actions]
    speech_logits: torch.Tensor  # [b, utterances]
    values: torch.Tensor  # [b]
    acted: torch.Tensor  # [b] bool: the action head chose this step
    action_log_probs: torch.Tensor  # [b]
    speech_log_probs: torch.Tensor
    valid_actions: torch.Tensor  # [b, actions] bool: the valid-action loss's targets
    valid_utterances: torch.Tensor  # [b, utterances] bool: the valid-speech loss's targets (rows that spoke)
    action_choices: torch.Tensor  # [b, actions] bool: the candidates the head chose among
    speech_choices: torch.Tensor


@dataclass
class ActorState:
    """What the actor keeps per environment between steps: the two policies' GRU states (None for a rule), the
    switch's counters (steps, utterances since the last action) and the ratio switch's ``k`` (0: the training
    average)."""

    hidden_a: torch.Tensor | None
    hidden_u: torch.Tensor | None
    steps: torch.Tensor  # [b] long
    since_action: torch.Tensor  # [b] long
    k: torch.Tensor  # [b] long

    def map(self, fn) -> ActorState:
        """The state with ``fn`` applied to each tensor (``lambda t: t.detach()`` to start a new autograd graph,
        ``lambda t: t.to(device)``)."""
        return ActorState(*(fn(t) if t is not None else None for t in (getattr(self, f.name) for f in fields(self))))


def valid_mask(ids: list[list[int] | None], size: int) -> torch.Tensor:
    """``[b, size]`` bool with the candidates ``ids[i]`` of each row set."""
    mask = torch.zeros(len(ids), size, dtype=torch.bool)
    for i, row in enumerate(ids):
        if row:
            mask[i, row] = True
    return mask


def choice_mask(valid: torch.Tensor, restrict: bool) -> torch.Tensor:
    """The candidates a head chooses among: the valid ones (every candidate in a row with none), or all."""
    if not restrict:
        return torch.ones_like(valid)
    return valid | ~valid.any(dim=1, keepdim=True)


@runtime_checkable
class CandidateScorer(Interface):
    """A policy that scores, for each environment, the candidates its head chooses among given what the agent reads
    (:class:`lq.llm.policy.LanguageModelPolicy`); decoded as the protocol says, as an agent is."""

    name: str

    def candidate_scores(self, contexts: Sequence[str], heads: Sequence[str], candidates: Sequence[Sequence[str]]
                         ) -> list[torch.Tensor]: ...  # fmt: skip


class Actor:
    """``policy``: a :class:`SwitchAgent`, a baseline rule (``"random"``, ``"overlap"``) or a :class:`CandidateScorer`
    (a language model)."""

    def __init__(
        self,
        policy: SwitchAgent | str | CandidateScorer,
        batcher: TextBatcher | None,
        action_space: list[str],
        utterance_space: list[str],
        switch: HardcodedSwitch | RatioSwitch,
        ability: str = "act_speech",
        temperature: float = 1.0,
        restrict: bool = True,
    ):
        if ability not in ABILITIES:
            raise ValueError(f"unknown ability '{ability}': choose from {', '.join(ABILITIES)}")
        if isinstance(policy, str) and policy not in RULES:
            raise ValueError(f"unknown baseline '{policy}': choose from {', '.join(RULES)} (or give an agent)")
        if not isinstance(policy, SwitchAgent | str | CandidateScorer):
            raise TypeError(f"policy {type(policy).__name__}: give a SwitchAgent, a rule or a CandidateScorer")
        self.agent = policy if isinstance(policy, SwitchAgent) else None
        self.rule = policy if isinstance(policy, str) else None
        self.scorer = policy if isinstance(policy, CandidateScorer) else None
        self.batcher, self.switch = batcher, switch
        self.action_space, self.utterance_space = action_space, utterance_space
        self.ability, self.temperature, self.restrict = ability, temperature, restrict
        self.candidates: tuple[torch.Tensor, torch.Tensor] | None = None  # see cache_candidates

    def cache_candidates(self, on: bool = True) -> None:
        """Embed the action and utterance spaces once for the steps that follow (a rollout, an evaluation: the
        weights do not change within them), or forget them (``on=False``)."""
        self.candidates = self.agent.candidate_vectors() if on and self.agent is not None else None

    @property
    def device(self) -> torch.device:
        return next(self.agent.parameters()).device if self.agent is not None else torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:
        """The agent's floating dtype (float32 under autocast too: autocast casts inside the ops, not the weights)."""
        return next(self.agent.parameters()).dtype if self.agent is not None else torch.float

    def placed(self, state: ActorState) -> ActorState:
        """``state`` with its GRU states on the agent's device and in its dtype: a state made before the agent was
        moved (Lightning moves a module after ``setup``, where the rollout starts; ``.to(...)`` any time) follows it.
        The switch's counters stay on the CPU, where Python reads them per environment every step."""
        if state.hidden_a is None:
            return state
        device, dtype = self.device, self.dtype
        state.hidden_a, state.hidden_u = state.hidden_a.to(device, dtype), state.hidden_u.to(device, dtype)
        return state

    def start(self, batch: int, k: list[int] | None = None) -> ActorState:
        """The per-environment state of ``batch`` new episodes (``k``: the ratio switch's, 0 for the training
        average)."""
        hidden = self.agent.initial_state(batch) if self.agent is not None else (None, None)
        zeros = torch.zeros(batch, dtype=torch.long)
        k = torch.tensor(k if k is not None else [0] * batch, dtype=torch.long)
        return ActorState(*hidden, steps=zeros, since_action=zeros.clone(), k=k)

    def reset_done(self, state: ActorState, dones: list[bool], k: list[int] | None = None) -> None:
        done = torch.tensor(dones, dtype=torch.bool)
        if state.hidden_a is not None:
            keep = (~done).unsqueeze(1).to(state.hidden_a.device, state.hidden_a.dtype)
            state.hidden_a, state.hidden_u = state.hidden_a * keep, state.hidden_u * keep
        state.steps = torch.where(done, 0, state.steps)
        state.since_action = torch.where(done, 0, state.since_action)
        if k is not None:
            state.k = torch.tensor(k, dtype=torch.long)

    def acts(self, state: ActorState) -> torch.Tensor:
        """``[b]`` bool: which environments act (the others speak) this step."""
        batch = state.steps.shape[0]
        if self.ability == "act":
            return torch.ones(batch, dtype=torch.bool)
        if self.ability.startswith("speech"):
            return torch.zeros(batch, dtype=torch.bool)
        k = state.k if isinstance(self.switch, RatioSwitch) and bool((state.k > 0).all()) else None
        return self.switch.acts(state.steps, state.since_action, k)

    def step(
        self, env, obs: list[str], infos: list[dict], state: ActorState, greedy: bool = False
    ) -> tuple[list[tuple[str, str]], StepOutput]:
        """The commands for ``env`` (a :class:`lq.envs.QuestEnv` whose last observations are ``obs``, ``infos``) and
        what the actor computed to choose them."""
        acted = self.acts(state)
        speaking = [i for i in range(len(obs)) if not acted[i]]
        utterance_ids: list[list[int] | None] = [None] * len(obs)
        for i, ids in zip(speaking, env.valid_utterances(speaking), strict=True):
            utterance_ids[i] = ids
        device = self.device
        valid_a = valid_mask([info["valid_action_ids"] for info in infos], len(self.action_space)).to(device)
        valid_u = valid_mask(utterance_ids, len(self.utterance_space)).to(device)
        choose_a, choose_u = choice_mask(valid_a, self.restrict), choice_mask(valid_u, self.restrict)
        if self.scorer is not None:
            a_logits, u_logits, value = self._scorer_scores(obs, acted, choose_a, choose_u)
        else:
            a_logits, u_logits, value = self._scores(env, obs, infos, state, acted.to(device))
        target_a, target_u = self._loss_targets(env, infos, valid_a, utterance_ids)
        a_masked, u_masked = masked(a_logits, choose_a), masked(u_logits, choose_u)
        greedy = RULE_DECODING[self.rule] == "greedy" if self.rule else greedy  # a rule decodes as the registry says
        a_choice, u_choice = self._choose(a_masked, greedy), self._choose(u_masked, greedy)
        a_logp = a_masked.log_softmax(-1).gather(1, a_choice.unsqueeze(1)).squeeze(1)
        u_logp = u_masked.log_softmax(-1).gather(1, u_choice.unsqueeze(1)).squeeze(1)
        commands = [
            ("action", self.action_space[int(a_choice[i])])
            if acted[i]
            else ("speech", self.utterance_space[int(u_choice[i])])
            for i in range(len(obs))
        ]
        state.steps = state.steps + 1
        state.since_action = torch.where(acted, 0, state.since_action + 1)
        return commands, StepOutput(
            a_logits, u_logits, value, acted.to(device), a_logp, u_logp, target_a, target_u, choose_a, choose_u
        )

    def _loss_targets(
        self, env, infos: list[dict], valid_a: torch.Tensor, utterance_ids: list[list[int] | None]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The valid-output losses' targets, never what a head chooses among: the engine's valid actions and the DM's
        first ``speech_targets`` valid utterances (rows about to speak), with the demonstration's goal action and
        utterances where the protocol adds them (the released code's ``generate_valid_masks``)."""
        n_a, n_u, cut = valid_a.shape[1], len(self.utterance_space), env.protocol.speech_targets
        goal = valid_mask([info.get("target_action_ids") for info in infos], n_a).to(valid_a.device)
        dm = valid_mask([ids[:cut] if ids is not None and cut is not None else ids for ids in utterance_ids], n_u)
        said = [
            info.get("target_utterance_ids") if ids is not None else None
            for info, ids in zip(infos, utterance_ids, strict=True)
        ]
        return valid_a | goal, (dm | valid_mask(said, n_u)).to(valid_a.device)

    @torch.no_grad()
    def step_value(self, obs: list[str], state: ActorState) -> torch.Tensor:
        """The critic's V(s) ``[b]`` of observations, leaving the state as it is (0 for a rule)."""
        if self.agent is None:
            return torch.zeros(len(obs))
        ids, mask, lines = self.batcher.contexts_with_lines(obs)
        return self.agent.value(ids.to(self.device), mask.to(self.device), lines)

    def _scores(
        self, env, obs: list[str], infos: list[dict], state: ActorState, acted: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Action scores, utterance scores and values ``[b]`` of the agent, or of the baseline rule."""
        b = len(obs)
        if self.agent is not None:
            ids, mask, lines = self.batcher.contexts_with_lines(obs)
            hidden = (state.hidden_a, state.hidden_u)
            out = self.agent(ids.to(self.device), mask.to(self.device), hidden, acted, self.candidates, lines)
            state.hidden_a, state.hidden_u = out.hidden
            return out.action_logits, out.speech_logits, out.value
        motivations = [env.instances[info["instance"]].quest.motivation("short") for info in infos]
        return (*rule_scores(self.rule, self.action_space, self.utterance_space, motivations), torch.zeros(b))

    def _scorer_scores(
        self, obs: list[str], acted: torch.Tensor, choose_a: torch.Tensor, choose_u: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A :class:`CandidateScorer`'s scores: of each environment's chosen head, its candidates that it chooses among
        (the others, and the other head's, stay 0: masked or not read); values 0."""
        b = len(obs)
        heads = ["act" if acted[i] else "speak" for i in range(b)]
        logits = {"act": torch.zeros(choose_a.shape), "speak": torch.zeros(choose_u.shape)}
        choices = {"act": (choose_a, self.action_space), "speak": (choose_u, self.utterance_space)}
        ids = [choices[head][0][i].nonzero().squeeze(1) for i, head in enumerate(heads)]
        texts = [[choices[head][1][j] for j in row.tolist()] for head, row in zip(heads, ids, strict=True)]
        for i, scores in enumerate(self.scorer.candidate_scores(obs, heads, texts)):
            logits[heads[i]][i, ids[i]] = scores.float()
        return logits["act"], logits["speak"], torch.zeros(b)

    def _choose(self, logits: torch.Tensor, greedy: bool) -> torch.Tensor:
        if greedy:
            return logits.argmax(dim=-1)
        # inverse-CDF sampling: one uniform per row (torch.multinomial draws an exponential per candidate)
        cdf = (logits.detach().float() / self.temperature).softmax(dim=-1).cumsum(dim=-1)
        # u in (0, total]: the first candidate whose cumulative probability reaches u has a probability above 0
        u = (1.0 - torch.rand(cdf.shape[0], 1, device=cdf.device)) * cdf[:, -1:]
        return torch.searchsorted(cdf, u).squeeze(1)
