"""Small records in the real LIGHT formats, built in code so tests need no data files."""

from __future__ import annotations

import copy

import torch

from lq.rl.rollout import Rollout


def tiny_graph() -> dict:
    """A one-room LIGHT world graph in the engine's JSON: a dragon, a knight and a golden egg."""
    return {
        "agents": ["dragon_1", "knight_2"],
        "nodes": {
            "lair_0": {
                "node_id": "lair_0",
                "name": "dragon's lair",
                "name_prefix": "the",
                "room": True,
                "agent": False,
                "object": False,
                "classes": ["room"],
                "desc": "A cave of gold.",
                "container_node": {"target_id": "VOID"},
                "contained_nodes": {"dragon_1": {"target_id": "dragon_1"}, "knight_2": {"target_id": "knight_2"}},
                "neighbors": {},
            },
            "dragon_1": {
                "node_id": "dragon_1",
                "name": "dragon",
                "room": False,
                "agent": True,
                "object": False,
                "classes": ["agent"],
                "persona": "I am a dragon living in the mountains.",
                "container_node": {"target_id": "lair_0"},
                "contained_nodes": {},
            },
            "knight_2": {
                "node_id": "knight_2",
                "name": "knight",
                "room": False,
                "agent": True,
                "object": False,
                "classes": ["agent"],
                "persona": "I am a knight.",
                "container_node": {"target_id": "lair_0"},
                "contained_nodes": {"egg_3": {"target_id": "egg_3"}},
            },
            "egg_3": {
                "node_id": "egg_3",
                "name": "golden dragon egg",
                "room": False,
                "agent": False,
                "object": True,
                "classes": ["object"],
                "gettable": True,
                "wearable": False,
                "wieldable": False,
                "food": False,
                "drink": False,
                "container": False,
                "container_node": {"target_id": "knight_2"},
                "contained_nodes": {},
            },
        },
        "objects": ["egg_3"],
        "rooms": ["lair_0"],
    }


def quest_json(graph: object | None = None) -> dict:
    """A LIGHT-Quests stem in the release format (the paper's Figure 2 quest)."""
    labels = [
        "4 hours ago",
        "15 minutes ago",
        "10 minutes ago",
        "5 minutes from now",
        "15 minutes from now",
        "2 hours from now",
    ]
    actions = [
        "go to dangerous precipice",
        "get knights armor from knight",
        "get golden dragon egg",
        "put dragon egg on back",
        "eat the knight",
        "go to the mountains",
    ]
    return {
        "data": {
            "character": "dragon",
            "persona": "I am a dragon living in the mountains. I enjoy hoarding treasure.",
            "description": "You are in the dragon's lair.\nA knight is here.\nYou are carrying nothing.",
            "goal": "hit knight",
            "short_motivation": "I need to recover the dragon egg that was stolen and punish the knight.",
            "mid_motivation": "I need to return the golden dragon egg to my treasure hoard.",
            "long_motivation": "I need to build the largest hoard ever attained by any one dragon.",
            "timeline": [{"label": lab, "action": act} for lab, act in zip(labels, actions, strict=True)],
            "graph": copy.deepcopy(graph) if graph is not None else tiny_graph(),
        }
    }


def demo_json(n_turns: int = 6, tag: str = "") -> dict:
    """A wild-completions demonstration: partner at even turns, self at odd turns."""
    acts = []
    for i in range(n_turns):
        if i == 3:
            acts.append(
                {
                    "type": "action",
                    "text": "get golden dragon egg",
                    "task_data": {"actions": ["get golden dragon egg", "hit knight", "hug knight"]},
                }
            )
        else:
            acts.append(
                {
                    "type": "speech",
                    "text": f"utterance {i}{tag}",
                    "task_data": {"actions": ["hit knight", "hug knight"]},
                }
            )
    return {
        "conv_info": {
            "room": {"category": "Cave", "description": "A cave of gold."},
            "characters": [
                [17, {"name": "knight", "personas": ["I am a knight."], "motivation": ""}],
                [
                    4,
                    {
                        "name": "dragon",
                        "personas": ["I am a dragon."],
                        "motivation": "I need to return the golden dragon egg to my treasure hoard.",
                    },
                ],
            ],
            "acts": acts,
        }
    }


def tiny_encoder_spec():
    """A one-layer, 32-wide scratch transformer: fast enough for any test that needs a real model."""
    from lq.models.encoder import EncoderSpec

    return EncoderSpec(init="scratch", hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, dropout=0.0)


def tiny_env_models(root) -> tuple:
    """Random tiny partner and DM poly-encoder checkpoints under ``root`` (what an environment needs), as paths."""
    from dataclasses import asdict

    import torch

    from lq.models.encoder import EncoderConfig
    from lq.models.poly_encoder import PolyEncoder

    paths = []
    for name, seed in (("partner", 1), ("dm", 2)):
        torch.manual_seed(seed)
        model = PolyEncoder.from_spec(tiny_encoder_spec(), n_codes=2)
        torch.save(
            {
                "state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
                "hyper_parameters": {"encoder": asdict(EncoderConfig(name, tiny_encoder_spec())), "n_codes": 2},
            },
            root / f"{name}.ckpt",
        )
        paths.append(root / f"{name}.ckpt")
    return tuple(paths)


def env_spec(root, **settings):
    """The :class:`lq.envs.spec.EnvSpec` of a test folder's dataset (``data/``) and models (``partner.ckpt``,
    ``dm.ckpt``)."""
    from lq.envs.spec import EnvSpec

    return EnvSpec(str(root / "data"), str(root / "partner.ckpt"), str(root / "dm.ckpt"), **settings)


def tiny_agent_config():
    from lq.models.agent import AgentConfig

    return AgentConfig(
        appended_layers=1,
        appended_heads=2,
        appended_feedforward=32,
        gru_hidden=16,
        policy_layers=2,
        policy_hidden=16,
        critic_layers=2,
        critic_hidden=16,
        scratch=tiny_encoder_spec(),
    )


def a2c_settings(coefficients=None, **changes):
    """The switch A2C settings of conf/rl.yaml's coefficients and the paper's loss (raw advantages, valid terms summed
    over the candidates), with ``changes``."""
    from lq.rl.losses import A2CSettings, LossCoefficients

    given = {"gamma": 0.99, "normalize_advantages": False, "valid_reduction": "sum", "imitation_batch": 4, **changes}
    return A2CSettings(coefficients=LossCoefficients() if coefficients is None else coefficients, **given)


def one_env_rollout(**given) -> Rollout:
    """A rollout of one environment over ``steps`` steps from ``[steps, ...]`` tensors; every candidate a choice."""
    a, u = given["action_logits"], given["speech_logits"]
    given.setdefault("action_choices", torch.ones_like(a, dtype=torch.bool))
    given.setdefault("speech_choices", torch.ones_like(u, dtype=torch.bool))
    given.setdefault("rewards", torch.zeros(a.shape[0]))
    given.setdefault("dones", torch.zeros(a.shape[0]))
    return Rollout(**{k: v.unsqueeze(1) for k, v in given.items()})


def written(config: dict, folder) -> list[str]:
    """``--config FILE``: a resolved config (``lq.stages.Run.config``) written to ``folder/config.yaml``, as
    ``lq stage`` writes it before its run starts."""
    from pathlib import Path

    import yaml

    file = Path(folder) / "config.yaml"
    file.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return ["--config", str(file)]


def parsed_cli(stage: str, args: list[str]):
    """The stage's LightningCLI with ``args`` parsed and checked (its context lengths: ``StageCLI.check_lengths``)
    and nothing built: what a test reads the stage CLI's own reading of a command line from (lq never reads a
    setting back from one: a run's configuration is ``lq.stages.Run.config``)."""
    from lq.lit.entry import STAGE_CLIS, stage_classes

    class Parsed(STAGE_CLIS[stage]):
        def before_instantiate_classes(self) -> None:
            self.check_lengths()

        def instantiate_classes(self) -> None:
            pass

    return Parsed(*stage_classes(stage), args=args, run=False)


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_causal_lm(folder, max_positions: int = 4096, chat_template: str | None = CHATML, init_range: float = 0.02):
    """A random two-layer Llama and a byte-level tokenizer with ChatML's chat template (a token per byte, so that every
    text has its own ids), saved to ``folder`` as ``save_pretrained`` saves them; returns the folder. ``init_range``:
    the weights' standard deviation (Llama's 0.02 leaves a frozen output layer logits within about +-1, which no
    adapter can pass: a model whose adapters are to learn needs a larger one)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    byte_symbols = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: i for i, symbol in enumerate(sorted(byte_symbols))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<|im_start|>", eos_token="<|im_end|>")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    if chat_template:
        tokenizer.chat_template = chat_template
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_positions,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         initializer_range=init_range)  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
