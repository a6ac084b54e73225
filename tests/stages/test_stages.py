"""Every stage kind answers for its runs (:mod:`lq.stages`): whether they are done and every file they write, without
building a model; and the stage graph ``lq experiment graph`` draws from them."""

from pathlib import Path

import pytest
import torch

from lq import stages
from lq.data.outputs import mark_finished
from lq.lit.agent import AgentModule
from lq.lit.cli import StageCLI
from lq.lit.offline import build_module

ROOT = Path(__file__).resolve().parents[2]


def trained_env_models(setup_dir: Path, outputs: Path) -> None:
    """The setup's tiny partner and DM as the profile's, and the partner's weights as a pretrained encoder."""
    for name, target in (("partner", "partner/small"), ("dm", "dm/small"), ("partner", "pretrain/general_light")):
        (outputs / target).mkdir(parents=True)
        checkpoint = torch.load(setup_dir / f"{name}.ckpt", weights_only=False)
        checkpoint["hyper_parameters"]["encoder"]["name"] = target.split("/")[1]
        torch.save(checkpoint, outputs / target / "best.ckpt")
        mark_finished(outputs / target / "best.ckpt")


def test_every_stage_kind_says_whether_it_is_done_and_what_it_writes_without_building_a_model(
    setup_dir, tmp_path, monkeypatch
):
    """The calibration's and the spaces' files are named by a key of the models' weights: found from the run's
    configuration (no agent module, no CLI), and the same files the agent module would name; the baselines and a
    language model's zero-shot child write no file and are never done (a child always runs)."""
    monkeypatch.chdir(ROOT)
    outputs = tmp_path / "outputs"
    trained_env_models(setup_dir, outputs)
    where = stages.Resolver(data_dir=str(setup_dir / "data"), outputs=str(outputs))
    encoders = {"pretrain": "general_light", "partner": "small", "dm": "small", "spaces": "general_light",
                "llm": "smollm2", "llm_bc": "smollm2"}  # fmt: skip
    runs = {kind: where.run(kind, encoders.get(kind, "general_light")) for kind in stages.KINDS}

    def built(*args, **kwargs):
        raise AssertionError("a model was built")

    monkeypatch.setattr(AgentModule, "__init__", built)
    monkeypatch.setattr(StageCLI, "__init__", built)
    done = {kind: run.done for kind, run in runs.items()}
    assert done == {"pretrain": True, "partner": True, "dm": True, "rl": False, "bc": False, "llm_bc": False,
                    "data": True, "pool": False, "calibrate": False, "spaces": False, "baselines": False,
                    "llm": False}  # fmt: skip
    pool = stages.Run("pool", data=str(setup_dir / "data"), folder=str(tmp_path / "data-pool-12"))
    assert pool.outputs == {"manifest": f"{tmp_path}/data-pool-12/manifest.json"} and not pool.done
    assert pool.args == ["data", "pool", str(setup_dir / "data"), "12", "--out", str(tmp_path / "data-pool-12")]
    calibration, spaces = Path(runs["calibrate"].outputs["file"]), Path(runs["spaces"].outputs["file"])
    assert calibration.parent == outputs / "partner/small/candidates"
    assert spaces.parent == outputs / "pretrain/general_light/candidates" and spaces.name.startswith("agent-utterances")
    assert runs["baselines"].outputs == runs["llm"].outputs == {}
    assert runs["data"].outputs == {"manifest": f"{setup_dir}/data/manifest.json"}
    assert set(runs["rl"].outputs) == set(runs["llm_bc"].outputs) == {"checkpoint", "last", "done", "config"}
    # a language model's BC: its folder named by the model, its config the model's and no pretrained encoder's
    assert runs["llm_bc"].checkpoint == f"{outputs}/llm_bc/smollm2/act_speech-hardcoded/seed-0/best.ckpt"
    assert runs["llm_bc"].config["model"]["llm"] == "smollm2"
    assert runs["llm_bc"].config["model"]["pretrained_checkpoint"] is None
    assert [n.stage for n in runs["llm_bc"].needs()] == ["data", "partner", "dm", "calibrate"]
    for file in (calibration, spaces):
        file.parent.mkdir(parents=True, exist_ok=True)
        file.touch()
    assert runs["calibrate"].done_as == str(calibration) and runs["spaces"].done_as == str(spaces)
    assert not stages.Run("spaces", "light", root=str(outputs)).done  # its encoder is not trained: nothing to key

    monkeypatch.undo()  # the agent module names the same files
    module = build_module(runs["calibrate"].module)
    assert module.env_spec.calibration_file() == calibration
    assert build_module(runs["spaces"].module).space_stores()[-1] == spaces


def test_a_stage_kind_is_one_registry_entry():
    assert stages.STAGES == ("pretrain", "partner", "dm", "rl", "bc", "llm_bc")
    assert stages.PREPARATION == ("data", "pool", "calibrate", "spaces", "baselines", "llm")
    assert stages.AGENT_STAGES == ("rl", "bc", "llm_bc") and stages.ENV_STAGES == ("partner", "dm")
    assert stages.JOBS == ("calibrate", "spaces", "baselines", "llm")
    with pytest.raises(ValueError, match="unknown stage eval: choose from pretrain, partner, dm, rl, bc, llm_bc, data"):
        stages.Run("eval")


def test_lqs_parser_is_the_registrys_and_reading_it_imports_no_torch():
    """``lq stage`` and ``lq experiment`` take the registry's stages and jobs; the registry, and with it ``lq``'s
    parser, import neither torch nor transformers (``lq --help`` stays quick): a kind imports them when it computes."""
    import subprocess
    import sys

    code = (
        "import sys; from lq.cli import build_parser; p = build_parser(); "
        "print(*(m in sys.modules for m in ('torch', 'transformers', 'lightning')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False"]
    from lq.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert tuple(next(a for a in sub["stage"]._actions if a.dest == "stage").choices) == stages.STAGES
    actions = next(a for a in sub["experiment"]._actions if a.dest == "action").choices
    assert tuple(actions[-len(stages.JOBS) :]) == stages.JOBS


def test_lq_experiment_graph_draws_each_run_and_what_it_needs_from_the_stage_kinds(capsys, tmp_path, monkeypatch):
    from lq.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["experiment", "graph", "table1", "--encoders", "adaptive", "--seeds", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "flowchart LR" and lines[1].startswith("  %% Table 1")
    names = {line.split("[")[0].strip(): line.split('["')[1][:-2] for line in lines if '["' in line}
    edges = {(names[a], names[b]) for a, _, b in (line.split() for line in lines if " --> " in line)}
    assert sorted(names.values()) == sorted(
        ["data data/default", "pretrain general", "pretrain adaptive", "partner small", "dm small", "calibrate",
         "spaces adaptive", "bc adaptive act_speech-hardcoded s0", "rl adaptive act_speech-hardcoded s0",
         "baselines act_speech-hardcoded s0"]
    )  # fmt: skip
    assert {
        ("data data/default", "pretrain general"),
        ("pretrain general", "pretrain adaptive"),
        ("pretrain adaptive", "spaces adaptive"),
        ("partner small", "calibrate"),
        ("calibrate", "baselines act_speech-hardcoded s0"),
        ("spaces adaptive", "rl adaptive act_speech-hardcoded s0"),
        ("bc adaptive act_speech-hardcoded s0", "rl adaptive act_speech-hardcoded s0"),
    } <= edges
    assert ("pretrain adaptive", "baselines act_speech-hardcoded s0") not in edges  # the baselines read no encoder
    order = list(names.values())
    assert order.index("bc adaptive act_speech-hardcoded s0") < order.index("rl adaptive act_speech-hardcoded s0")


def test_the_architecture_page_shows_the_graph_the_registry_draws_for_the_quickstart(capsys, tmp_path, monkeypatch):
    from lq.cli import main

    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    command = ".venv/bin/lq experiment graph table1 --encoders scratch general_light --seeds 0 --profile quick"
    assert command in page  # the page says how its picture is made
    shown = page.split("```mermaid\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    assert main(command.split()[1:]) == 0
    assert shown == capsys.readouterr().out, "docs/architecture.md: paste the output of the command above"


def test_the_partners_calibration_is_computed_from_the_agents_environment_without_an_agent_module(
    setup_dir, tmp_path, monkeypatch
):
    """``lq experiment calibrate``: the file its key names, from the agents' environment (the run's resolved config's
    ``model.env``) alone; building an agent module would fail here."""
    from lq.commands.jobs import run_preparation

    monkeypatch.chdir(ROOT)
    outputs = tmp_path / "outputs"
    trained_env_models(setup_dir, outputs)
    run = stages.Resolver(data_dir=str(setup_dir / "data"), outputs=str(outputs)).run("calibrate")
    assert not run.done

    def refused(*args, **kwargs):
        raise AssertionError("an agent module was built")

    monkeypatch.setattr(AgentModule, "__init__", refused)
    run_preparation(run)
    assert run.done_as == run.outputs["file"] and Path(run.done_as).parent == outputs / "partner/small/candidates"


def test_a_preparation_job_reads_the_config_its_scheduler_wrote_not_its_options(
    setup_dir, tmp_path, monkeypatch, capsys
):
    """A preparation job's command line names the file its scheduler wrote (``Prepared.write``: the RL run's config
    resolved once, in the scheduler); the job reads that file alone, so a setting changed there is the one it runs
    with, and a file that is not there is one line naming it."""
    import dataclasses

    import yaml

    from lq.cli import main

    monkeypatch.chdir(ROOT)
    where = stages.Resolver(data_dir=str(setup_dir / "data"), outputs=str(tmp_path / "outputs"))
    run = where.run("calibrate")
    file = Path(run.args[run.args.index("--config") + 1])
    assert file.parent == tmp_path / "outputs" / "jobs" and not file.exists()
    run.kind.write(run)
    written = yaml.safe_load(file.read_text(encoding="utf-8"))
    assert written == run.module.config and written["model"]["env"]["data_dir"] == str(setup_dir / "data")
    assert where.run("calibrate", seed=1).args == run.args  # the same job, whatever its fixed parts are given
    assert where.run("baselines", seed=1).kind.config_file(where.run("baselines", seed=1)) != str(file)
    file.write_text(yaml.safe_dump({**written, "threads": run.threads + 5}), encoding="utf-8")
    job = dataclasses.replace(run, written=str(file))
    assert job.threads == run.threads + 5 and job.config["threads"] == run.threads + 5
    file.unlink()
    assert main(run.args) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: {file}: no resolved configuration there") and "lq experiment plan" in error


def test_the_spaces_vectors_are_computed_from_the_encoder_and_data_without_an_agent_module(
    setup_dir, tmp_path, monkeypatch
):
    """``lq experiment spaces``: the encoder's vectors of both spaces, in the files its key names, from the pretrained
    encoder and the data alone (building an agent module would fail here); the same bytes an agent's build writes."""
    from lq.commands.jobs import run_preparation

    monkeypatch.chdir(ROOT)
    outputs = tmp_path / "outputs"
    trained_env_models(setup_dir, outputs)
    run = stages.Resolver(data_dir=str(setup_dir / "data"), outputs=str(outputs)).run("spaces", "general_light")
    assert not run.done

    def refused(*args, **kwargs):
        raise AssertionError("an agent module was built")

    monkeypatch.setattr(AgentModule, "__init__", refused)
    run_preparation(run)
    assert run.done_as == run.outputs["file"]
    monkeypatch.undo()
    module = build_module(run.module)
    stores = module.space_stores()
    assert [p.name.split("-")[1] for p in stores] == ["actions", "utterances"] and str(stores[-1]) == run.done_as
    computed = [p.read_bytes() for p in stores]
    for p in stores:
        p.unlink()
    module.build_agent()  # encodes them again, as an agent does where they are missing
    assert [p.read_bytes() for p in stores] == computed
