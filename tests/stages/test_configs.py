"""A run's folder found again as done (:func:`lq.stages.configs.same_run`) after conf/ named a setting its module had
taken from a Python default."""

from lq.stages.configs import NAMED_SINCE, same_run


def test_a_run_written_before_conf_named_a_setting_is_the_same_run_at_its_old_value_only():
    resolved = {"sources": ["rl.yaml"], "model": {"lr": 5e-4, "priority_mix": 0.5, "budgets": []}}
    before = {"sources": ["rl.yaml"], "model": {"lr": 5e-4}}  # written before conf/rl.yaml named the two
    assert NAMED_SINCE["model.priority_mix"] == 0.5 and same_run(before, resolved)
    assert not same_run(before, {**resolved, "model": {**resolved["model"], "priority_mix": 0.9}})
    assert not same_run({"sources": ["rl.yaml"], "model": {"lr": 1e-4}}, resolved)  # a setting named before: as ever
    assert not same_run({**before, "model": {"lr": 5e-4, "priority_mix": 0.9}}, resolved)
