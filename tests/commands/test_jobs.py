"""The jobs ``lq experiment`` launches in a process of their own (:mod:`lq.commands.jobs`): a preparation job that
imports neither the trainer nor the tracking client, and the baselines' children played without the agent's networks."""


def test_a_preparation_job_imports_neither_lightning_nor_mlflow():
    """``lq experiment calibrate`` and ``spaces`` run :func:`lq.commands.jobs.run_preparation` in a process of their
    own, the partner's calibration on the critical path of every table: the module they load imports the trainer
    (Lightning) and the tracking client (MLflow) only where a job uses them (about 3 s of each process)."""
    import subprocess
    import sys

    code = (
        "import sys; import lq.cli, lq.commands.experiments, lq.commands.jobs, lq.stages.calibrate, "
        "lq.stages.spaces, lq.envs.spec, lq.envs.build, lq.envs.calibration; "
        "print(*(m in sys.modules for m in ('lightning', 'mlflow')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_the_baselines_play_an_rl_runs_environment_spaces_and_switch_without_its_networks(setup_dir, tmp_path):
    """``lq experiment baselines``: each rule through the RL run's environment, spaces and switch; the agent's
    networks are never built, and the figures are those of a module whose networks are."""
    from lq import experiments as X
    from lq.commands.jobs import baselines_module
    from lq.eval import agent_baselines
    from tests.experiments.helpers import _tiny_setup

    setup = _tiny_setup(setup_dir, tmp_path, seeds=(0,))
    run = X.running.prep("baselines", setup, ability="act_speech", switch="hardcoded", seed=0)
    bare, built = baselines_module(run), baselines_module(run)
    built.build_agent()
    played = [agent_baselines(module, "test", [0, 1], quests=3) for module in (bare, built)]
    assert bare.agent is None and built.agent is not None
    figures = [{key: [repr(r.metrics()) for r in results] for key, results in p.items()} for p in played]
    assert figures[0] == figures[1] and len(figures[0]) >= 4


def test_a_language_model_child_logs_its_choice_on_validation_and_later_seeds_read_its_greedy_plays(
    setup_dir, tmp_path
):
    """``lq experiment llm``: a child per seed with each score's validation figures, the score chosen there (the
    better act & speech goals, then act goals), and the chosen score's val/, test/ and test_sampled/ figures as an
    agent's; under a greedy protocol the second seed's child reads the first's greedy plays, which are what playing
    them again with its own seed gives."""
    import json

    from mlflow.tracking import MlflowClient

    from lq import experiments as X
    from lq.commands.jobs import baselines_module, run_language_model
    from lq.eval import evaluate
    from lq.eval.llm import rank
    from lq.llm.model import load_language_model
    from lq.llm.policy import SCORES, LanguageModelPolicy
    from lq.tracking import stored
    from tests.experiments.helpers import _tiny_setup
    from tests.samples import tiny_causal_lm

    setup = _tiny_setup(setup_dir, tmp_path, seeds=(0, 1), protocol="restricted")
    model = str(tiny_causal_lm(tmp_path / "lm"))
    client = MlflowClient(setup.tracking_uri)
    parent = client.create_run(X.experiment_id(client, "llm")).info.run_id
    runs = [X.running.prep("llm", setup, model, seed=seed) for seed in (0, 1)]
    children = [client.get_run(run_language_model(client, "llm", run, parent)) for run in runs]
    first, second = (child.data.metrics for child in children)
    chosen = children[0].data.tags["lq.llm_score"]
    by_score = {s: (first[f"llm_val/{s}/act_and_speech_goal_rate"], first[f"llm_val/{s}/act_goal_rate"])
                for s in SCORES}  # fmt: skip
    assert chosen == max(SCORES, key=lambda s: by_score[s])  # ties: the first score, as max takes it
    assert all(first[f"val/{m}"] == first[f"llm_val/{chosen}/{m}"] for m in ("act_goal_rate", "speech_goal_rate"))
    assert {"test/act_goal_rate", "test_sampled/act_goal_rate"} <= set(first)
    assert children[1].data.tags["lq.llm_score"] == chosen
    greedy = [k for k in first if k.startswith(("val/", "test/", "llm_val/"))]
    assert {k: second[k] for k in greedy} == {k: first[k] for k in greedy}
    assert children[0].data.params["llm"] == model and children[0].data.params["stage"] == "llm"

    kept = sorted((tmp_path / "outputs" / "eval" / "llm-plays").glob("*.json"))
    assert sorted(p.name.split("-")[:2] for p in kept) == sorted([["test", chosen], *(["valid", s] for s in SCORES)])
    test_file = next(p for p in kept if p.name.startswith("test-"))
    module = baselines_module(runs[1])
    policy = LanguageModelPolicy(load_language_model(model), chosen, threads=runs[1].threads)
    again = evaluate(module.eval_env("test", seed=1), module.make_actor(policy=policy), seed=1, greedy=True)
    assert again.episodes == json.loads(test_file.read_text(encoding="utf-8"))["episodes"]
    assert tuple(map(stored, rank(again))) == (second["test/act_and_speech_goal_rate"], second["test/act_goal_rate"])
