import glob
from pathlib import Path

import lightning as L
import mlflow
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from lq import stages
from lq.cli import main
from lq.conf import resolver
from lq.data.atomic_light import load_atomic_light
from lq.data.dataset import load_dataset
from lq.generate import generate_dataset
from lq.lit.entry import STAGE_CLIS, fit_pretrain
from lq.lit.metrics import HitsAtK
from lq.lit.pretrain import PretrainDataModule, PretrainModule
from lq.models.encoder import EncoderConfig
from lq.models.poly_encoder import CandidateMemo
from lq.tasks import build_task
from lq.tasks.atomic_light import MODERN
from lq.tracking import stored
from tests.samples import parsed_cli, tiny_encoder_spec, written

ROOT = Path(__file__).resolve().parents[2]
TINY_SPEC = tiny_encoder_spec()
TINY_ARGS = [
    "--model.encoder.spec.init",
    "scratch",
    "--model.encoder.spec.hidden_size",
    "32",
    "--model.encoder.spec.num_layers",
    "1",
    "--model.encoder.spec.num_heads",
    "2",
    "--model.encoder.spec.intermediate_size",
    "64",
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("pretrain") / "data"
    generate_dataset(out, scale="tiny", seed=1, log=lambda _: None)
    return out


def test_hits_at_k_against_a_hand_computed_ranking():
    scores = torch.tensor([[0.1, 0.9, 0.5, 0.7], [0.3, 0.2, 0.1, 0.0], [0.4, 0.4, 0.2, 0.9]])
    target = torch.tensor([2, 0, 1])
    # gold ranks: 0.5 is beaten by 0.9 and 0.7 -> 2; 0.3 beats all -> 0; 0.4 ties 0.4 and is beaten by 0.9 -> 1
    expected = {1: 1 / 3, 2: 2 / 3, 3: 1.0}
    for k, value in expected.items():
        metric = HitsAtK(k)
        metric.update(scores[:2], target[:2])
        metric.update(scores[2:], target[2:])
        assert metric.compute().item() == pytest.approx(value)


def _module(tasks, lr=1e-3):
    torch.manual_seed(0)
    return PretrainModule(EncoderConfig("tiny", TINY_SPEC, tasks=tasks), n_codes=4, lr=lr, warmup_steps=1)


@pytest.mark.slow
def test_overfits_one_small_batch(data_dir):
    dm = PretrainDataModule(str(data_dir), {"seq_timeline": 1.0}, batch_size=8, context_length=96, num_candidates=8)
    dm.setup("fit")
    batch = dm.collate_eval(dm.examples["train"]["seq_timeline"][:8])
    module = _module({"seq_timeline": 1.0})
    optimizer = torch.optim.Adam(module.parameters(), lr=3e-3)
    for _ in range(150):  # cross-entropy over each example's own 8 candidates
        loss = torch.nn.functional.cross_entropy(module.rank_scores(batch), batch["target"])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    module.eval()
    metric = HitsAtK(1)
    with torch.no_grad():
        metric.update(module.rank_scores(batch), batch["target"])
    assert metric.compute().item() == 1.0


def test_evaluation_encodes_each_distinct_candidate_once(data_dir):
    dm = PretrainDataModule(str(data_dir), {"boa_timeline": 1.0}, context_length=96, num_candidates=30)
    dm.setup("validate")
    examples = dm.examples["valid"]["boa_timeline"][:24]
    module = _module({"boa_timeline": 1.0}).eval()
    memo = CandidateMemo(module.model)
    with torch.no_grad():
        for start in range(0, len(examples), 8):
            chunk = examples[start : start + 8]
            batch = dm.collate_eval(chunk)
            scores = module.rank_scores(batch, memo)
            assert torch.allclose(scores, module.rank_scores(batch), atol=1e-5)  # the same scores as encoding all
            # each example scored against its own candidates, in its own order
            first = chunk[0]
            ids, mask = dm.batcher.candidates(list(first.candidates))
            ctx = module.model.encode_context(batch["ctx_ids"][:1], batch["ctx_mask"][:1])
            own = module.model.score(ctx, module.model.encode_candidates(ids, mask))[0]
            assert torch.allclose(scores[0, : len(first.candidates)], own, atol=1e-5)
    distinct = {c for e in examples for c in e.candidates}
    assert memo.encoded == len(distinct) < sum(len(e.candidates) for e in examples)


def test_mixing_follows_the_task_weights(data_dir):
    dm = PretrainDataModule(str(data_dir), {"boa_timeline": 3.0, "atomic_light": 1.0}, batch_size=50)
    dm.setup("fit")
    seen = {"boa_timeline": 0, "atomic_light": 0}
    sampler = dm.train_dataloader().sampler
    pool = dm.examples["train"]["boa_timeline"] + dm.examples["train"]["atomic_light"]
    for i in sampler:
        seen[pool[i].task] += 1
    assert 2.3 < seen["boa_timeline"] / seen["atomic_light"] < 3.9, seen


def test_fewer_training_quests_cut_the_quest_tasks_at_quest_boundaries_and_nothing_else(data_dir):
    """``max_train_quests`` (Figures 13 and 14): the timeline tasks' and the quest dialogues' training examples are
    those of the first quests only (seq: 6 per quest, boa: 7; a demonstration's turns where its quest is kept); the
    other tasks, the evaluation splits and the length of an epoch are untouched."""
    tasks = {"seq_timeline": 1.0, "boa_timeline": 1.0, "quest_dialogue": 1.0, "atomic_light": 1.0}
    whole, cut = PretrainDataModule(str(data_dir), tasks), PretrainDataModule(str(data_dir), tasks, max_train_quests=3)
    for dm in (whole, cut):
        dm.setup("fit")
    train, full = cut.examples["train"], whole.examples["train"]
    assert len(train["seq_timeline"]) == 3 * 6 < len(full["seq_timeline"]) and len(train["boa_timeline"]) == 3 * 7
    assert [e.label for e in train["seq_timeline"]] == [e.label for e in full["seq_timeline"][:18]]
    quests = load_dataset(data_dir).quests.train[:3]
    assert {e.label for e in train["boa_timeline"]} == {a for q in quests for a in q.timeline_actions}
    assert 0 < len(train["quest_dialogue"]) < len(full["quest_dialogue"])
    assert len(train["atomic_light"]) == len(full["atomic_light"])
    assert [len(v) for v in cut.examples["valid"].values()] == [len(v) for v in whole.examples["valid"].values()]
    # and an epoch as long: it draws as many samples (with replacement) as the uncut tasks hold
    drawn = sum(len(v) for v in full.values())
    assert whole.epoch_samples == cut.epoch_samples == drawn > sum(len(v) for v in train.values())
    assert len(list(cut.train_dataloader().sampler)) == drawn


def test_atomic_without_domain_adaptation_is_atomic_light_told_of_personx(data_dir):
    """The ``atomic`` task (Tables 4/5's second trend): the bundle's ATOMIC triples in ATOMIC-LIGHT's templates, of
    PersonX and PersonY and with ATOMIC's own nouns, without the engine's triples: ATOMIC-LIGHT has each of them
    adapted."""
    for split in ("train", "test"):
        raw, adapted = (build_task(t, data_dir, split) for t in ("atomic", "atomic_light"))
        assert raw and all(e.task == "atomic" and "PersonX" in e.context for e in raw)
        assert not any("Person" in e.context for e in adapted)
        samples = load_atomic_light(data_dir / "atomic_light")[split]
        of_atomic = [s for s in samples if s.event.startswith("PersonX")]  # the rest: the engine's triples
        assert len(raw) == len(of_atomic) < len(samples)
        named = {"PersonX", "PersonY"} | MODERN
        plain = [(e.label, s.tail) for e, s in zip(raw, of_atomic, strict=True)
                 if not named & set(e.label.replace("'s", "").split())]  # fmt: skip
        assert plain and all(a == b for a, b in plain)  # the same triples, in the same order: where no name or modern
        # noun was replaced, the same tails
    needs = [e.context for e in build_task("atomic", data_dir, "train") if e.context.startswith("Before PersonX ")]
    assert needs and all(c.endswith(", PersonX needs") for c in needs)


def test_unpretrained_and_unknown_tasks_are_refused(data_dir):
    with pytest.raises(ValueError, match="not pretrained"):
        PretrainDataModule(str(data_dir), {})
    with pytest.raises(ValueError, match="unknown task"):
        PretrainDataModule(str(data_dir), {"reddit": 1.0})
    with pytest.raises(ValueError, match=r"data.max_train_quests is 0: give 1 or more, or leave it out \(null\)"):
        PretrainDataModule(str(data_dir), {"seq_timeline": 1.0}, max_train_quests=0)


@pytest.mark.slow
def test_resumes_from_last_ckpt(data_dir, tmp_path):
    def run(epochs, ckpt_path=None):
        dm = PretrainDataModule(
            str(data_dir),
            {"boa_timeline": 1.0},
            batch_size=8,
            max_train_examples=24,
            max_eval_examples=4,
            context_length=64,
            num_candidates=10,
        )
        trainer = L.Trainer(
            max_epochs=epochs,
            logger=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=[
                ModelCheckpoint(dirpath=tmp_path, filename="best", monitor="val/hits_at_1", mode="max", save_last=True)
            ],
        )
        module = _module({"boa_timeline": 1.0})
        trainer.fit(module, dm, ckpt_path=ckpt_path)
        return trainer, module

    first, _ = run(1)
    assert (tmp_path / "last.ckpt").is_file() and first.global_step == 3
    second, module = run(2, ckpt_path=str(tmp_path / "last.ckpt"))
    assert second.current_epoch == 2 and second.global_step == 6  # one more epoch, not two
    state = torch.load(tmp_path / "last.ckpt", weights_only=False)
    assert state["global_step"] == 6


@pytest.mark.parametrize("encoder", sorted(Path(p).stem for p in glob.glob(str(ROOT / "conf/encoder/*.yaml"))))
def test_every_encoder_config_parses_with_every_stage_and_profile(encoder, monkeypatch, tmp_path):
    """Every profile the resolver knows, every stage, as it orders their config files."""
    monkeypatch.chdir(ROOT)
    stage_files = {Path(p).stem for p in glob.glob(str(ROOT / "conf/*.yaml"))} - {"agent", "poly_encoder"}  # bases
    assert stage_files == set(STAGE_CLIS), "a stage config without a CLI"
    assert set(resolver.profiles()) >= {"tiny", "paper", "quick"}
    for profile in resolver.profiles():
        where = stages.Resolver(profile=profile)
        for stage in STAGE_CLIS:
            if stages.kind_of(stage).names_model:  # a language model's BC: its encoder is the model, not a config
                run = where.run(stage, "smollm2")
                cli = parsed_cli(stage, written(run.config, tmp_path))
                assert cli.config.model.llm == "smollm2" and cli.config.model.pretrained_checkpoint is None
                folder = f"{run.stage_dir()}/smollm2/act_speech-hardcoded/seed-0"
                assert run.dir == folder == cli.config.checkpoint.dirpath
                continue
            run = where.run(stage, encoder)
            cli = parsed_cli(stage, written(run.config, tmp_path))  # its resolved config alone, as lq stage runs it
            assert cli.config.model.encoder.name == encoder
            assert cli.config.checkpoint.dirpath == run.dir and cli.configs == run.config["sources"]
            if stage in stages.AGENT_STAGES:  # one folder per configuration and seed
                assert run.dir == f"{run.stage_dir()}/{encoder}/act_speech-hardcoded/seed-0"
                expected = None if encoder == "scratch" else where.checkpoint("pretrain", encoder)
                assert cli.config.model.pretrained_checkpoint == expected
                assert cli.config.model.env.data_dir == "data/default" and cli.config.model.env.objects
                continue
            assert cli.config.checkpoint.dirpath.endswith(f"{stage}/{encoder}")
            fixed = {
                "pretrain": cli.config.model.encoder.tasks,
                "partner": {"partner_turn": 1.0},
                "dm": {"dm_speech": 1.0},
            }[stage]
            assert cli.config.data.tasks == fixed


def _lq_pretrain(encoder: str, data_dir, *args: str, profile: str | None = None) -> int:
    """``lq pretrain fit`` with the stage config, one encoder config, an optional profile and overrides."""
    configs = [a for c in ("poly_encoder.yaml", "pretrain.yaml", f"encoder/{encoder}.yaml")
               for a in ("--config", str(ROOT / "conf" / c))]  # fmt: skip
    if profile:
        configs += ["--config", str(ROOT / f"conf/profile/{profile}/pretrain.yaml")]
    return main(["pretrain", "fit", *configs, "--data.data_dir", str(data_dir), *args])


@pytest.mark.slow
def test_lq_pretrain_end_to_end_logs_to_mlflow(data_dir, tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = {
        "--data.max_train_examples": "8",
        "--data.max_eval_examples": "4",
        "--trainer.max_epochs": "1",
        "--trainer.enable_progress_bar": "false",
        "--checkpoint.dirpath": str(tmp_path / "out" / "general_light"),
        "--trainer.logger.init_args.tracking_uri": uri,
    }
    args = [x for kv in overrides.items() for x in kv]
    files = ("poly_encoder.yaml", "pretrain.yaml", "encoder/general_light.yaml")
    configs = [f"--config={ROOT / 'conf' / c}" for c in files]
    metrics = fit_pretrain(
        [
            *configs,
            f"--config={ROOT / 'conf/profile/tiny/pretrain.yaml'}",
            f"--data.data_dir={data_dir}",
            *TINY_ARGS,
            *args,
        ]
    )
    assert (tmp_path / "out" / "general_light" / "last.ckpt").is_file()
    client = mlflow.MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name("lq-pretrain").experiment_id])
    assert run.data.tags["mlflow.runName"] == "pretrain-general_light-tiny"  # what it trains, and its profile
    assert all(v == stored(v) for v in run.data.metrics.values())  # at 4 significant digits, as the UI shows them
    for split in ("val", "test"):
        for task in ("atomic_light", "quest_dialogue", "seq_timeline"):
            for k in (1, 5, 10):
                assert f"{split}/{task}/hits_at_{k}" in run.data.metrics
    assert not any("@" in m for m in run.data.metrics)
    # where the wall time went, and the experiment opens on its runs table in MLflow's UI
    parts = {m: v for m, v in run.data.metrics.items() if m.startswith("time/")}
    assert set(parts) == {"time/train_s", "time/validation_s", "time/test_s", "time/tables_s", "time/cpu_s"}
    assert all(v > 0 for v in parts.values()), parts
    # fit_pretrain returns what the run logged (stored at 4 digits): test figures, Table 4/5 cells, wall times
    for name in ("test/hits_at_1", "test/seq_timeline/hits_at_5", "table4/short/all_hits_at_1", "time/tables_s"):
        assert stored(metrics[name]) == run.data.metrics[name], name
    assert client.get_experiment_by_name("lq-pretrain").tags["mlflow.experimentKind"] == "custom_model_development"
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["config.yaml", "tables"]
    text = Path(client.download_artifacts(run.info.run_id, "config.yaml", str(tmp_path))).read_text()
    assert "general_light" in text and "seq_timeline" in text
    # the same configuration, resolved once, beside the checkpoints: the stage CLI reads it back as it ran
    saved = tmp_path / "out" / "general_light" / "config.yaml"
    assert saved.read_text() == text
    again = parsed_cli("pretrain", [f"--config={saved}"])
    assert again.parser.dump(again.config, skip_none=False) == text
    tables = sorted(a.path for a in client.list_artifacts(run.info.run_id, "tables"))
    assert tables == [
        f"tables/{t}.{ext}" for t in ("table4_seq_timeline", "table5_boa_timeline") for ext in ("csv", "md")
    ]
    csv_text = Path(client.download_artifacts(run.info.run_id, "tables/table4_seq_timeline.csv", str(tmp_path)))
    rows = csv_text.read_text().splitlines()
    assert rows[0].startswith("motivations,all_hits_at_1") and [r.split(",")[0] for r in rows[1:]] == [
        "none",
        "short",
        "long_mid",
    ]


def test_scratch_is_not_pretrained_and_says_so(data_dir, capsys):
    assert _lq_pretrain("scratch", data_dir) == 1
    assert "not pretrained" in capsys.readouterr().err


def test_adaptive_without_general_says_what_to_run(data_dir, tmp_path, capsys):
    missing = str(tmp_path / "general" / "best.ckpt")
    assert _lq_pretrain("adaptive", data_dir, *TINY_ARGS, "--model.encoder.init_from", missing) == 1
    assert "make pretrain ENCODER=general" in capsys.readouterr().err
