"""An agent checkpoint's dataset and environment models are found from any folder (``lq.lit.places``): ``lq export``
and ``lq eval`` work outside the folder it was trained in, after that folder moved, and for checkpoints from before
lq recorded where their run was; what cannot be found is named with its fingerprint and the fix."""

import shutil
from pathlib import Path

import pytest
import torch

from lq.cli import main
from lq.data.dataset import dataset_id
from lq.lit.checkpoints import load_agent
from tests.lit.test_agent_cli import _args


def _training_folder(setup_dir: Path, folder: Path) -> Path:
    """A training folder as ``make`` leaves one: ``data/`` and the environment's models under ``outputs/``, with the
    partner's calibration beside them (copied: not fitted again)."""
    shutil.copytree(setup_dir / "data", folder / "data")
    env = folder / "outputs" / "env"
    env.mkdir(parents=True)
    for name in ("partner.ckpt", "dm.ckpt"):
        shutil.copy(setup_dir / name, env / name)
    if (setup_dir / "candidates").is_dir():
        shutil.copytree(setup_dir / "candidates", env / "candidates")
    return folder


def _relative_checkpoint(trained_agent: Path, folder: Path) -> Path:
    """``trained_agent`` as a checkpoint from before lq recorded its run's folder: its data and models named relative
    to ``folder``, where it lies under ``outputs/``."""
    saved = torch.load(trained_agent, map_location="cpu", weights_only=False)
    saved.pop("lq_places", None)
    env = saved["hyper_parameters"]["env"]
    env |= {"data_dir": "data", **{f"{m}_checkpoint": f"outputs/env/{m}.ckpt" for m in ("partner", "dm")}}
    out = folder / "outputs" / "bc" / "seed-0" / "best.ckpt"
    out.parent.mkdir(parents=True)
    torch.save(saved, out)
    return out


def test_an_old_checkpoint_loads_from_any_folder_and_what_is_not_found_is_named_with_its_fix(
    trained_agent, setup_dir, tmp_path, monkeypatch, capsys
):
    train = _training_folder(setup_dir, tmp_path / "train")
    old = _relative_checkpoint(trained_agent, train)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "data" / "quests").mkdir(parents=True)  # a dataset folder of the same name, another dataset
    (elsewhere / "data" / "quests" / "q.json").write_text("{}")
    monkeypatch.chdir(elsewhere)
    module = load_agent(old)  # found above the checkpoint, in the folder it was trained in
    assert module.data_dir == str(train / "data") and module.env_spec.partner_checkpoint == str(
        train / "outputs" / "env" / "partner.ckpt"
    )
    # copied out of its training folder: the working folder's data/ is another dataset, passed over, and named
    copied = elsewhere / "copied.ckpt"
    shutil.copy(old, copied)
    fingerprint = dataset_id(setup_dir / "data")
    with pytest.raises(FileNotFoundError) as error:
        load_agent(copied)
    said = str(error.value)
    assert said.startswith(f"{copied}: its dataset {fingerprint} (model.env.data_dir 'data') is not found")
    assert f"found only {elsewhere / 'data'} (fingerprint {dataset_id(elsewhere / 'data')}: another dataset)" in said
    assert "--data DIR (lq eval, lq export)" in said and "make data" not in said
    assert main(["export", str(copied), str(tmp_path / "bundle"), "--no-eval"]) == 1
    assert "--data DIR" in capsys.readouterr().err and not (tmp_path / "bundle").exists()
    # named by the caller: the options of lq export, lq.load_agent's keywords
    places = ["--data", str(train / "data"), "--partner", str(train / "outputs/env/partner.ckpt")]
    assert main(["export", str(copied), str(tmp_path / "bundle"), "--no-eval", *places]) == 1
    assert "its Dungeon Master (model.env.dm_checkpoint 'outputs/env/dm.ckpt')" in capsys.readouterr().err
    places += ["--dm", str(train / "outputs/env/dm.ckpt")]
    assert main(["export", str(copied), str(tmp_path / "bundle"), "--no-eval", *places]) == 0
    assert load_agent(tmp_path / "bundle").data_dir.startswith(str(tmp_path / "bundle"))


@pytest.mark.slow
def test_export_and_eval_work_outside_the_training_folder_and_after_it_moved(setup_dir, tmp_path, monkeypatch):
    """The user's case: an agent trained with the make targets' relative paths (``data/default``,
    ``outputs/...``), exported and evaluated from another folder; then the training folder moved (another disk,
    another machine), exported again: found above the checkpoint, the dataset checked by its fingerprint."""
    train = _training_folder(setup_dir, tmp_path / "train")
    monkeypatch.chdir(train)
    models = [f"--model.env.{m}_checkpoint=outputs/env/{m}.ckpt" for m in ("partner", "dm")]
    tiny = ["--model.batch_size=8", "--trainer.limit_train_batches=2"]
    relative = _args("bc", Path("."), Path("outputs"), *tiny, *models)  # as make runs it: paths from its folder
    assert "--model.env.data_dir=data" in relative
    assert main(relative) == 0
    checkpoint = train / "outputs/bc/scratch/act_speech-hardcoded/seed-0/best.ckpt"
    saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
    assert saved["hyper_parameters"]["env"]["data_dir"] == "data"  # as given: what resumes and BC starts compare
    assert saved["lq_places"] == {
        "root": str(train),
        "paths": {
            "env.data_dir": str(train / "data"),
            "env.partner_checkpoint": str(train / "outputs/env/partner.ckpt"),
            "env.dm_checkpoint": str(train / "outputs/env/dm.ckpt"),
        },
    }
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    monkeypatch.chdir(fresh)
    # the card's evaluation, from the bundle, on a few quests (lq export --quests)
    assert main(["export", str(checkpoint), "bundle", "--quests", "2", "--baselines", "1"]) == 0
    assert "Random (whole spaces)" in Path("bundle/README.md").read_text()  # its table, beside the baselines
    assert main(["eval", "bundle", "--greedy-only", "--quests", "2"]) == 0
    assert main(["eval", str(checkpoint), "--greedy-only", "--quests", "2"]) == 0

    moved = tmp_path / "moved"
    train.rename(moved)
    assert main(["export", str(moved / checkpoint.relative_to(train)), "bundle-moved", "--no-eval"]) == 0
    assert load_agent("bundle-moved").env_spec.replace(data_dir="", partner_checkpoint="", dm_checkpoint="") == (
        load_agent("bundle").env_spec.replace(data_dir="", partner_checkpoint="", dm_checkpoint="")
    )


def test_places_given_relative_or_absolute_are_found_after_the_training_folder_moved(tmp_path, monkeypatch):
    """``located`` alone, on files that only need to be there: a run's paths as given relative to its folder or
    absolute inside it, recorded at training, are found in the folder's new place by walking up from the checkpoint;
    a dataset folder of the recorded name but other files is passed over."""
    from lq.lit.places import located, recorded_places

    train = tmp_path / "train"
    (train / "data" / "quests").mkdir(parents=True)
    (train / "data" / "quests" / "q.json").write_text("{}")
    (train / "outputs" / "env").mkdir(parents=True)
    for name in ("partner.ckpt", "dm.ckpt"):
        (train / "outputs" / "env" / name).write_bytes(b"")
    env = {"data_dir": "data", "partner_checkpoint": "outputs/env/partner.ckpt"}  # as make gives them
    env["dm_checkpoint"] = str(train / "outputs/env/dm.ckpt")  # absolute, inside the training folder
    hparams = {"pretrained_checkpoint": None, "env": env}
    monkeypatch.chdir(train)
    saved = {"lq_places": recorded_places(hparams), "lq_dataset": dataset_id(train / "data")}
    checkpoint = train / "outputs" / "bc" / "best.ckpt"
    moved = tmp_path / "disk" / "moved"
    moved.parent.mkdir()
    train.rename(moved)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "data").mkdir(parents=True)  # the working folder's data/: another dataset of the same name
    monkeypatch.chdir(elsewhere)
    found = located(hparams, saved, moved / checkpoint.relative_to(train))
    assert found["env"] == {
        "data_dir": str(moved / "data"),
        "partner_checkpoint": str(moved / "outputs/env/partner.ckpt"),
        "dm_checkpoint": str(moved / "outputs/env/dm.ckpt"),
    }
    assert found["pretrained_checkpoint"] is None and hparams["env"]["data_dir"] == "data"  # the caller's unchanged
    given = located(hparams, saved, moved / "outputs/bc/best.ckpt", given={"env.dm_checkpoint"})
    assert given["env"]["dm_checkpoint"] == str(train / "outputs/env/dm.ckpt")  # named by the caller: as given
