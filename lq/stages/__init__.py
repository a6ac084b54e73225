"""The stages of lq, one kind a file, and :class:`Run`, a run of one of them as a value.

Each kind (:class:`lq.stages.run.Stage`) answers for its runs: their config files (resolved once: :attr:`Run.config`),
their folder, checkpoint and every file they write, whether they are done (without building a model), what they need
first, their command line and how many run side by side. ``lq stage``, ``lq experiment`` (its plans and waves), the
stage CLIs' defaults and ``lq experiment graph`` read them. A new stage kind is one file here and one entry in
:data:`KINDS` below.
"""

from __future__ import annotations

from lq.stages.baselines import Baselines
from lq.stages.bc import BehaviourCloning, bc_checkpoint
from lq.stages.calibrate import Calibrate
from lq.stages.configs import ENVIRONMENT, SAME_AGENT, read_config, same_run, start_differences
from lq.stages.data import Data
from lq.stages.dm import DungeonMaster
from lq.stages.families import CONFIG, agent_dir, model_dir, pretrained_checkpoint
from lq.stages.llm import ZeroShotLanguageModel
from lq.stages.llm_bc import LanguageModelBehaviourCloning
from lq.stages.partner import Partner
from lq.stages.pool import Pool
from lq.stages.pretrain import Pretrain
from lq.stages.rl import ReinforcementLearning, shared_with_bc, starts_from_bc
from lq.stages.run import KINDS, Resolver, Run, Stage, kind_of
from lq.stages.spaces import Spaces

# the registry: the training stages (lq NAME fit), then the preparation jobs
for _kind in (Pretrain(), Partner(), DungeonMaster(), ReinforcementLearning(), BehaviourCloning(),
              LanguageModelBehaviourCloning(), Data(), Pool(), Calibrate(), Spaces(), Baselines(),
              ZeroShotLanguageModel()):  # fmt: skip
    KINDS[_kind.name] = _kind

STAGES = tuple(name for name, kind in KINDS.items() if kind.trains)  # pretrain, partner, dm, rl, bc, llm_bc
AGENT_STAGES = tuple(name for name, kind in KINDS.items() if kind.agent)  # rl, bc, llm_bc
ENV_STAGES = tuple(name for name, kind in KINDS.items() if kind.profile_file == "env")  # partner, dm
PREPARATION = tuple(name for name, kind in KINDS.items() if not kind.trains)  # data, pool, calibrate, spaces, ...
JOBS = tuple(name for name, kind in KINDS.items() if kind.job)  # calibrate, spaces, baselines, llm: lq experiment NAME
# set in a driver's children (lq.experiments.launchers): a child stopped leaves the one line on how to go on to its
# driver (lq.cli)
CHILD = "LQ_CHILD"

__all__ = [
    "AGENT_STAGES",
    "CHILD",
    "CONFIG",
    "ENVIRONMENT",
    "ENV_STAGES",
    "JOBS",
    "KINDS",
    "PREPARATION",
    "SAME_AGENT",
    "STAGES",
    "Resolver",
    "Run",
    "Stage",
    "agent_dir",
    "bc_checkpoint",
    "kind_of",
    "model_dir",
    "pretrained_checkpoint",
    "read_config",
    "same_run",
    "shared_with_bc",
    "start_differences",
    "starts_from_bc",
]
