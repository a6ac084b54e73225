"""What the libraries print that a person reading a stage's output must not have to read past, switched off where it
starts: transformers' "Loading weights" bars (its own switch), Lightning's device-availability lines and tips (and the
second of its two lines on a checkpoint read), its
warning that a run's checkpoint folder is not empty (lq trains again into its folders on purpose) and that a frozen
base is in eval mode (on purpose too), the deprecations
Lightning's CLI raises in jsonargparse (jsonargparse's own switch), torch's pytree
deprecation (raised by a library, not by lq), MLflow's lines as it makes a new store's tables. Warnings that say
something about the run itself (a param cut, a non-finite metric, an unused setting) are left as they are.

:func:`quiet_libraries` is called once per process by every stage CLI (:class:`lq.lit.cli.StageCLI`)."""

from __future__ import annotations

import logging
import os
import warnings

from lq.tracking import quiet_store

# Lightning's INFO lines of every run that say nothing about it (no GPU on a CPU machine, an advertisement), and the
# second of the two it prints as it reads a checkpoint ("Restoring states from the checkpoint path at ...", kept, says
# which)
LIGHTNING_NOISE = ("GPU available:", "TPU available:", "HPU available:", "💡 Tip", "LOCAL_RANK:",
                   "Loaded model weights from the checkpoint at")  # fmt: skip


class _DropLines(logging.Filter):
    """Drops the records whose message starts with one of ``starts``."""

    def __init__(self, starts: tuple[str, ...]):
        super().__init__()
        self.starts = starts

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.starts)


def quiet_libraries() -> None:
    """Switch the libraries' noise off (see the module); idempotent."""
    from transformers.utils import logging as transformers_logging

    # jsonargparse's own switch for the deprecations Lightning's CLI triggers in it (read as each is raised)
    os.environ.setdefault("JSONARGPARSE_DEPRECATION_WARNINGS", "off")
    transformers_logging.disable_progress_bar()
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropLines) for f in logger.filters):
            logger.addFilter(_DropLines(LIGHTNING_NOISE))
    quiet_store()
    warnings.filterwarnings("ignore", message=r"Checkpoint directory .* exists and is not empty")
    # a frozen pretrained base is in eval mode on purpose (lq.models.encoder): Lightning's warning about it says nothing
    warnings.filterwarnings("ignore", message=r"Found \d+ module\(s\) in eval mode at the start of training")
    warnings.filterwarnings("ignore", message=r".*torch\.utils\._pytree\._register_pytree_node` is deprecated")
    warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated")  # in Lightning
