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
