"""Agent bundles (``lq export``): self-contained, loaded from any folder, evaluated exactly as their checkpoint."""

import json
import os

import pytest
import torch
import yaml

from lq.cli import main
from lq.lit.checkpoints import load_agent


def _table(capsys) -> list[str]:
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]


@pytest.mark.slow
def test_export_then_eval_from_another_folder_gives_the_checkpoints_figures(trained_agent, tmp_path, capsys):
    bundle = tmp_path / "bundle"
    assert main(["export", str(trained_agent), str(bundle), "--baselines", "1"]) == 0
    capsys.readouterr()
    card = (bundle / "README.md").read_text()
    assert "| protocol | protocol paper:" in card and "Random (whole spaces)" in card and "fingerprint" in card
    meta = json.loads((bundle / "bundle.json").read_text())
    env = meta["hyper_parameters"]["env"]
    assert not any(os.path.isabs(env[k]) for k in ("data_dir", "partner_checkpoint", "dm_checkpoint"))
    # Hugging Face's YAML metadata first: licence, library, tags, the training identity, a model-index of its figures
    assert card.startswith("---\n")
    front = yaml.safe_load(card.split("---\n")[1])
    assert (front["license"], front["library_name"], front["lq"]["encoder"], front["lq"]["stage"]) == (
        "mit", "lq", "scratch", "bc"
    )  # fmt: skip
    [result] = front["model-index"][0]["results"]
    assert [m["type"] for m in result["metrics"]] == ["act_goal_rate", "speech_goal_rate", "act_and_speech_goal_rate"]
    # no path outside itself: not where it was trained or exported, not the training tree's outputs/
    for file in bundle.rglob("*"):
        if file.is_file() and file.suffix in (".md", ".json", ".jsonl"):
            text = file.read_text()
            assert "/tmp/" not in text and "outputs/" not in text and "sqlite:" not in text, file

    assert main(["eval", str(trained_agent), "--baselines", "1"]) == 0
    from_checkpoint = _table(capsys)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = tmp_path / "moved-bundle"
    bundle.rename(moved)  # nothing in it points back to where it was written, or to the training tree
    cwd = os.getcwd()
    before = {f: f.stat().st_mtime_ns for f in moved.rglob("*")}
    try:
        os.chdir(elsewhere)
        assert main(["eval", str(moved), "--baselines", "1"]) == 0
    finally:
        os.chdir(cwd)
    assert _table(capsys) == from_checkpoint
    assert {f: f.stat().st_mtime_ns for f in moved.rglob("*")} == before  # read only: nothing written, nothing added
    assert len(from_checkpoint) >= 6


@pytest.mark.slow
def test_bundle_loads_the_same_weights(trained_agent, tmp_path):
    bundle = tmp_path / "b"
    assert main(["export", str(trained_agent), str(bundle), "--no-eval"]) == 0
    a, b = load_agent(trained_agent), load_agent(bundle)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all((sa[k] == sb[k]).all() for k in sa)
    assert b.data_dir.startswith(str(bundle.resolve()))
    assert b.env_spec.partner_checkpoint == str(bundle.resolve() / "partner.safetensors")
    assert b.env_spec.replace(data_dir=a.data_dir, partner_checkpoint="", dm_checkpoint="") == a.env_spec.replace(
        partner_checkpoint="", dm_checkpoint=""
    )  # the bundle's environment is the checkpoint's, its files the bundle's copies
    from lq.data.io import umask

    modes = {p.stat().st_mode & 0o777 for p in [bundle, *bundle.rglob("*")] if p.is_file()}
    assert modes == {0o666 & ~umask()}  # as files written directly: a bundle is for others to read (not mkstemp's 0600)
    assert {p.stat().st_mode & 0o777 for p in [bundle, *bundle.rglob("*")] if p.is_dir()} == {0o777 & ~umask()}


@pytest.mark.slow
def test_a_checkpoint_from_before_the_env_spec_loads_with_its_environment(trained_agent, tmp_path):
    """Agents saved before EnvSpec kept its fields at the top level of their hyperparameters (``data_dir``,
    ``context_objects``, ``env_context_length`` ...): they load into the same environment."""
    import torch

    saved = torch.load(trained_agent, map_location="cpu", weights_only=False)
    h = dict(saved["hyper_parameters"])
    env = h.pop("env")
    flat = {"env_context_length": env["context_length"], "context_objects": env["objects"]}
    flat |= {k: env[k] for k in ("data_dir", "partner_checkpoint", "dm_checkpoint", "protocol", "partner_calibration")}
    torch.save({**saved, "hyper_parameters": {**h, **flat}}, tmp_path / "old.ckpt")
    old, new = load_agent(tmp_path / "old.ckpt"), load_agent(trained_agent)
    assert old.env_spec == new.env_spec and old.hparams["env"] == new.hparams["env"]
    sa, sb = old.state_dict(), new.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sb)
    restricted = load_agent(tmp_path / "old.ckpt", protocol="restricted", context_objects=False)
    assert (restricted.protocol.name, restricted.env_spec.objects) == ("restricted", False)


@pytest.mark.slow
def test_export_refuses_to_clobber_and_leaves_nothing_half_written(trained_agent, tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    assert main(["export", str(trained_agent), str(tmp_path / "taken"), "--no-eval"]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "nope.ckpt"), str(tmp_path / "x"), "--no-eval"]) == 1
    assert "no such checkpoint" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    with pytest.raises(FileNotFoundError, match="no such checkpoint or agent bundle"):
        load_agent(tmp_path / "taken")
    bundle = tmp_path / "b"
    assert main(["export", str(trained_agent), str(bundle), "--no-eval"]) == 0
    (bundle / "partner.safetensors").unlink()  # found when it loads, not when its environment is first built
    with pytest.raises(FileNotFoundError, match=r"incomplete bundle, partner.safetensors missing: re-export it with "
                                                rf"`lq export CHECKPOINT {bundle} --overwrite`"):  # fmt: skip
        load_agent(bundle)


def test_eval_plays_an_agent_as_its_run_evaluated_it_whatever_seed_trained_it(trained_agent, tmp_path):
    """``lq eval`` evaluates under seed 0 (its ``--seed``), as every agent run does after fitting: the same agent
    saved as trained by seed 1 plays the same sampled episodes (make rl's table then shows what the runs logged and
    the tables read), and another evaluation seed plays others."""
    from lq.lit.checkpoints import evaluate_checkpoints

    saved = torch.load(trained_agent, map_location="cpu", weights_only=False)
    saved["hyper_parameters"]["seed"] = 1
    other = tmp_path / "seed-1.ckpt"
    torch.save(saved, other)
    name = "BC scratch act_speech hardcoded (sampled)"

    def played(checkpoint, **seed):
        [result] = dict(evaluate_checkpoints([checkpoint], split="valid", log=lambda _: None, **seed))[name]
        return [e["transcript"] for e in result.episodes]

    assert played(other) == played(trained_agent) != played(trained_agent, seed=1)


def test_eval_samples_at_a_temperature_as_a_diagnostic(trained_agent):
    """``lq eval --temperature T`` samples from the agent's distribution sharpened by T (its rows say so); near 0 it
    plays what greedy decoding plays, and a temperature of 0 or below is refused with the fix."""
    from lq.lit.checkpoints import evaluate_checkpoints

    rows = dict(evaluate_checkpoints([trained_agent], split="valid", temperature=1e-6, log=lambda _: None))
    [greedy] = rows["BC scratch act_speech hardcoded (greedy)"]
    [sharp] = rows["BC scratch act_speech hardcoded (sampled at temperature 1e-06)"]
    assert [e["transcript"] for e in sharp.episodes] == [e["transcript"] for e in greedy.episodes]
    [plain] = dict(evaluate_checkpoints([trained_agent], split="valid", log=lambda _: None))[
        "BC scratch act_speech hardcoded (sampled)"
    ]
    assert [e["transcript"] for e in plain.episodes] != [e["transcript"] for e in greedy.episodes]
    with pytest.raises(ValueError, match="--temperature 0: sample at a temperature above 0"):
        evaluate_checkpoints([trained_agent], temperature=0)


def test_eval_quests_plays_the_first_n_quests_of_the_split_agents_and_baselines_alike(setup_dir, monkeypatch, capsys):
    """``lq eval --quests N`` (``evaluate_checkpoints(..., quests=N)``): a quick look at the first N quests."""
    from lq.lit import checkpoints
    from lq.lit.bc import BCModule
    from tests.samples import env_spec, tiny_agent_config

    untrained = BCModule(
        env=env_spec(setup_dir), lr=1e-4, context_length=64, candidate_dim=16, agent=tiny_agent_config(),
        eval_max_steps=3, eval_batch_size=8,
    )  # fmt: skip
    monkeypatch.setattr(checkpoints, "load_agent", lambda *_, **__: untrained)  # what it plays, not how well
    rows = dict(checkpoints.evaluate_checkpoints(["agent"], 1, sampled=False, quests=5, log=lambda _: None))
    played = {name: [len(r.episodes) for r in results] for name, results in rows.items() if results[0].episodes}
    assert played and all(n == [5] for n in played.values()), played  # the agent and every baseline: 5 quests
    quest_ids = [e["quest_id"] for e in rows["BC scratch act_speech hardcoded (greedy)"][0].episodes]
    assert quest_ids == [i.quest.quest_id for i in untrained.eval_env("test").instances[:5]]  # the first five
    with pytest.raises(ValueError, match=r"--quests 99: the test split has 6 quests; give 1 to 6"):
        checkpoints.evaluate_checkpoints(["agent"], sampled=False, quests=99, log=lambda _: None)
    assert main(["eval", "agent", "--greedy-only", "--quests", "2"]) == 0
    assert "Zero-shot evaluation on the first 2 test quests" in capsys.readouterr().out
