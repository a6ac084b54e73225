"""Library noise switched off where it starts (:func:`lq.lit.quiet.quiet_libraries`); what says something, kept."""

import logging

import lightning as L

from lq.lit.quiet import quiet_libraries
from tests.lit.test_callbacks import _loader, _Tiny


def test_lightnings_device_lines_and_tips_and_transformers_bars_are_off_what_says_something_is_kept(caplog, tmp_path):
    quiet_libraries()
    with caplog.at_level(logging.INFO):
        trainer = L.Trainer(max_epochs=1, default_root_dir=tmp_path, logger=False, enable_progress_bar=False)
        trainer.fit(_Tiny(), _loader(4), _loader(2))
        trainer.validate(_Tiny(), _loader(2), ckpt_path="best", verbose=False)
    said = [r.getMessage() for r in caplog.records]
    assert not [m for m in said if m.startswith(("GPU available", "TPU available", "💡 Tip"))], said
    assert any("`Trainer.fit` stopped: `max_epochs=1` reached." in m for m in said)  # the run's own end, kept
    # one line for a checkpoint read, which says which: "Restoring states from the checkpoint path at ..."
    read = [m for m in said if m.startswith(("Restoring states", "Loaded model weights"))]
    assert len(read) == 1 and read[0].startswith("Restoring states from the checkpoint path at"), said
    from transformers.utils import logging as transformers_logging

    assert not transformers_logging.is_progress_bar_enabled()
