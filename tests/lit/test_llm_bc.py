"""Behaviour cloning of a language model itself (:class:`lq.lit.llm_bc.LanguageModelBCModule`): LoRA adapters on a
tiny random causal LM, trained on the setup's demonstrations and played through the agents' actor."""

import lightning as L
import pytest
import torch

from lq.eval import evaluate, first_quests
from lq.lit.checkpoints import load_agent
from lq.lit.llm_bc import IGNORED, AnswerExample, LanguageModelBCModule, collate_answers
from tests.samples import env_spec, tiny_causal_lm


@pytest.fixture(scope="module")
def lm_folder(tmp_path_factory):
    # weights of std 0.5: at Llama's 0.02 the frozen output layer keeps every logit within about +-1, so no adapter
    # could take the answers' loss far below the uniform ln(258) nats
    return tiny_causal_lm(tmp_path_factory.mktemp("lm"), init_range=0.5)


def _module(setup_dir, lm_folder, **kwargs):
    return LanguageModelBCModule(llm=str(lm_folder), env=env_spec(setup_dir, protocol="restricted"), lr=2e-2,
                                 batch_size=4, eval_max_steps=4, **kwargs)  # fmt: skip


def test_the_labels_are_the_answers_tokens_alone():
    batch = collate_answers([AnswerExample([5, 6, 7], [8, 9]), AnswerExample([5], [4])], pad_id=0)
    assert batch["input_ids"].tolist() == [[5, 6, 7, 8, 9], [5, 4, 0, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    assert batch["labels"].tolist() == [[IGNORED] * 3 + [8, 9], [IGNORED, 4] + [IGNORED] * 3]


def test_its_loss_falls_and_its_checkpoint_holds_the_adapters_that_play_as_trained(setup_dir, lm_folder, tmp_path):
    torch.manual_seed(0)
    module = _module(setup_dir, lm_folder)
    trainer = L.Trainer(max_steps=8, limit_val_batches=2, num_sanity_val_steps=0, logger=False,
                        enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False,
                        accelerator="cpu")  # fmt: skip
    before = trainer.validate(module, verbose=False)[0]["val/loss"]
    trainer.fit(module)
    after = trainer.validate(module, verbose=False)[0]["val/loss"]
    assert after < 0.7 * before  # held-out demonstrations' answers, nats per token

    # every demonstrated self turn in the spaces is one example, its answer the demonstrated text and the end mark
    turns = sum(len(e.contexts) for e in module.demonstration_episodes("train"))
    assert len(module.episodes["train"]) == turns
    policy = module.policy()
    first = module.demonstration_episodes("train")[0]
    head, text = ("act", module.action_space[first.targets[0]]) if first.acted[0] else \
        ("speak", module.utterance_space[first.targets[0]])  # fmt: skip
    assert module.episodes["train"][0] == AnswerExample(policy.prompt(first.contexts[0], head), policy.answer_ids(text))

    trainer.save_checkpoint(tmp_path / "adapters.ckpt")
    saved = torch.load(tmp_path / "adapters.ckpt", weights_only=False)
    assert saved["lq_stage"] == "llm_bc"
    assert set(saved["state_dict"]) == set(module.adapter_keys())
    assert all("lora_" in k for k in saved["state_dict"])

    reloaded = load_agent(tmp_path / "adapters.ckpt")  # the base read again from its folder, the adapters loaded
    untrained = _module(setup_dir, lm_folder).eval()
    module.eval()
    args = [first.contexts[0]], ["speak"], [module.utterance_space[:5]]
    trained = module.policy().candidate_scores(*args)[0]
    assert torch.allclose(reloaded.policy().candidate_scores(*args)[0], trained)
    module.train()  # a training module's policy scores without its adapters' dropout, and leaves it training
    assert torch.equal(module.policy().candidate_scores(*args)[0], trained) and module.agent.training
    assert not torch.allclose(untrained.policy().candidate_scores(*args)[0], trained, atol=1e-3)

    # played zero-shot through the agents' actor and environment, as every BC agent is
    env = first_quests(reloaded.eval_env("test"), 1, "test")
    result = evaluate(env, reloaded.make_actor(), seed=0, greedy=True)
    assert len(result.episodes) == 1


def test_a_checkpoint_of_other_adapters_is_refused(setup_dir, lm_folder):
    module = _module(setup_dir, lm_folder)
    other = _module(setup_dir, lm_folder, lora_rank=2, target_modules=["q_proj"])
    with pytest.raises(RuntimeError, match="lora_rank, target_modules"):
        module.load_state_dict({k: v for k, v in other.state_dict().items() if "lora_" in k})


def test_lq_llm_bc_fit_trains_keeps_the_best_adapters_and_evaluates_them_zero_shot(setup_dir, lm_folder, tmp_path):
    from lq.cli import main
    from tests.lit.test_agent_cli import ROOT

    folder = tmp_path / "llm_bc" / "tiny" / "act_speech-hardcoded" / "seed-0"
    data, env = setup_dir / "data", setup_dir
    args = ["llm_bc", "fit", "--config", str(ROOT / "conf/agent.yaml"), "--config", str(ROOT / "conf/llm_bc.yaml"),
            "--config", str(ROOT / "conf/protocol/restricted.yaml"), f"--model.llm={lm_folder}",
            f"--model.env.data_dir={data}", f"--model.env.partner_checkpoint={env / 'partner.ckpt'}",
            f"--model.env.dm_checkpoint={env / 'dm.ckpt'}", f"--checkpoint.dirpath={folder}",
            f"--trainer.logger.init_args.tracking_uri=sqlite:///{tmp_path / 'mlflow.db'}", "--trainer.max_steps=4",
            "--trainer.val_check_interval=2", "--trainer.limit_val_batches=2", "--trainer.accelerator=cpu",
            "--model.batch_size=4", "--model.lr=2e-2", "--model.eval_max_steps=2", "--zero_shot=reported"]  # fmt: skip
    assert main(args) == 0
    saved = torch.load(folder / "best.ckpt", weights_only=False)
    assert saved["lq_stage"] == "llm_bc" and all("lora_" in k for k in saved["state_dict"])
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("lq-llm_bc").experiment_id])
    assert run.data.params["llm"] == run.data.params["encoder"] == str(lm_folder)
    assert "val/loss" in run.data.metrics and "test/act_goal_rate" in run.data.metrics
