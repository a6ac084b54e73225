"""A language model as the agent's policy (:class:`lq.llm.policy.LanguageModelPolicy`), played by the same actor, in
the same environment, as the baselines' rules."""

import pytest
import torch

from lq.eval import evaluate, first_quests
from lq.llm.model import load_language_model
from lq.llm.policy import LanguageModelPolicy
from tests.lit.test_rl import _module
from tests.samples import env_spec, tiny_causal_lm


class Recorded(LanguageModelPolicy):
    """The policy, keeping every turn's heads, candidates and scores."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.turns = []

    def candidate_scores(self, contexts, heads, candidates):
        scores = super().candidate_scores(contexts, heads, candidates)
        self.turns.append((list(heads), [list(c) for c in candidates], scores))
        return scores


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    return load_language_model(tiny_causal_lm(tmp_path_factory.mktemp("lm")))


def _restricted(setup_dir):
    return _module(setup_dir, env=env_spec(setup_dir, protocol="restricted"), eval_max_steps=6)


def test_each_turn_it_scores_exactly_the_candidates_a_rule_chooses_among(setup_dir, lm):
    module = _restricted(setup_dir)
    policy = Recorded(lm)
    env = module.eval_env("test", seed=0)
    rule, llm = module.make_actor(policy="random"), module.make_actor(policy=policy)
    obs, infos = env.reset(list(range(min(4, len(env.instances)))))
    for step in range(3):  # act at the third step (the hardcoded switch, N = 3): both heads
        state_rule, state_llm = rule.start(len(obs)), llm.start(len(obs))
        state_rule.steps = state_llm.steps = torch.full((len(obs),), step)
        _, by_rule = rule.step(env, obs, infos, state_rule)
        commands, by_llm = llm.step(env, obs, infos, state_llm, greedy=True)
        assert torch.equal(by_rule.acted, by_llm.acted)
        assert torch.equal(by_rule.action_choices, by_llm.action_choices)
        assert torch.equal(by_rule.speech_choices, by_llm.speech_choices)
        heads, texts, scores = policy.turns[-1]
        for i, (head, offered, row) in enumerate(zip(heads, texts, scores, strict=True)):
            space, choices = (llm.action_space, by_llm.action_choices) if head == "act" else \
                (llm.utterance_space, by_llm.speech_choices)  # fmt: skip
            assert head == ("act" if by_llm.acted[i] else "speak")
            # restricted: the engine's valid actions, the DM's valid utterances, and nothing else
            assert offered == [space[j] for j in choices[i].nonzero().squeeze(1).tolist()]
            if head == "act":
                assert sorted(offered) == sorted(space[j] for j in infos[i]["valid_action_ids"])
            assert commands[i] == (("action" if head == "act" else "speech"), offered[int(row.argmax())])


def test_it_plays_whole_episodes_through_the_actor_greedily_by_its_scores(setup_dir, lm):
    module = _restricted(setup_dir)
    env = first_quests(module.eval_env("test", seed=0), 3, "test")
    by_sum, by_mean = Recorded(lm, score="sum"), Recorded(lm, score="mean")
    played = evaluate(env, module.make_actor(policy=by_sum), seed=0, progress=False, greedy=True)
    assert len(played.episodes) == len(env.instances) and all(e["steps"] >= 1 for e in played.episodes)
    assert {h for heads, _, _ in by_sum.turns for h in heads} == {"act", "speak"}
    assert by_sum.counted["turns"] == sum(len(h) for h, _, _ in by_sum.turns) > 0
    again = evaluate(env, module.make_actor(policy=Recorded(lm)), seed=0, progress=False, greedy=True)
    assert [e["transcript"] for e in again.episodes] == [e["transcript"] for e in played.episodes]
    evaluate(env, module.make_actor(policy=by_mean), seed=0, progress=False, greedy=True)
    _, texts, mean = by_mean.turns[0]
    _, same_texts, total = by_sum.turns[0]
    assert texts == same_texts  # the same first turn: its mean is the sum over each answer's tokens
    tokens = torch.tensor([len(by_mean.answer_ids(t)) for t in texts[0]], dtype=torch.float)
    assert torch.allclose(mean[0], total[0] / tokens, atol=1e-6)


def test_under_the_paper_protocol_it_scores_the_whole_action_space(setup_dir, lm):
    module = _module(setup_dir, env=env_spec(setup_dir, protocol="paper"))
    policy = Recorded(lm)
    env = module.eval_env("test", seed=0)
    actor = module.make_actor(policy=policy)
    obs, infos = env.reset([0])
    state = actor.start(1)
    state.steps = torch.tensor([2])  # the hardcoded switch acts at the third step
    actor.step(env, obs, infos, state, greedy=True)
    assert policy.turns[-1][0] == ["act"] and policy.turns[-1][1] == [list(actor.action_space)]


def test_its_score_is_chosen_on_validation_and_its_test_rows_stand_beside_the_baselines(setup_dir, lm):
    from lq.eval.llm import evaluate_language_model, rank
    from lq.rl.registry import TITLES

    module = _restricted(setup_dir)
    policies = {"sum": LanguageModelPolicy(lm, "sum"), "mean": LanguageModelPolicy(lm, "mean")}
    lines = []
    evaluation = evaluate_language_model(module, policies, seeds=(0, 1), quests=2, log=lines.append)
    assert set(evaluation.validation) == {"sum", "mean"} and len(evaluation.test) == 2
    assert evaluation.chosen == max(("sum", "mean"), key=lambda s: rank(evaluation.validation[s]))
    names = [name for name, _ in evaluation.rows("LLM tiny")]
    assert names[0] == f"LLM tiny ({evaluation.chosen}, greedy)"
    assert names[1:] == [TITLES[k] for k in evaluation.baselines]
    assert all(len(results) == 2 for key, results in evaluation.baselines.items() if key.startswith(("random", "over")))
    assert [line.split(":")[0] for line in lines] == ["validation, sum", "validation, mean",
                                                      f"test, {evaluation.chosen}, seed 0",
                                                      f"test, {evaluation.chosen}, seed 1"]  # fmt: skip
    only = evaluate_language_model(module, {"mean": policies["mean"]}, seeds=(0,), quests=1, log=lines.append)
    assert only.validation == {} and only.chosen == "mean"  # one score: nothing to choose, validation not played


def test_lq_llm_refuses_a_model_path_before_anything_is_made(tmp_path, capsys, monkeypatch):
    from lq.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["llm", "--llm", str(tmp_path / "nowhere"), "--switch", "hardcodd"]) == 2
    err = capsys.readouterr().err
    assert "--switch hardcodd (SWITCH=hardcodd): unknown (did you mean hardcoded?)" in err
    assert "nowhere: no such file or folder" in err
    assert not list(tmp_path.iterdir())  # no data generated, no store opened


def test_lq_llm_plays_beside_the_baselines_and_logs_its_own_mlflow_run(setup_dir, lm, tmp_path, capsys, monkeypatch):
    import mlflow

    from lq.cli import main
    from tests.stages.test_stages import trained_env_models

    monkeypatch.chdir(tmp_path)
    trained_env_models(setup_dir, tmp_path / "outputs" / "data")  # the setup's partner and DM as its data's
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ["llm", "--llm", lm.source, "--data", str(setup_dir / "data"), "--quests", "1", "--seeds", "0", "1",
            "--threads", "1", "--tracking-uri", store, "--out", str(tmp_path / "table")]  # fmt: skip
    assert main(args) == 0
    client = mlflow.MlflowClient(store)
    (run,) = client.search_runs([client.get_experiment_by_name("lq-llm-zero-shot").experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags["lq.stage"] == "llm"
    assert run.data.params["llm"] == lm.source and run.data.params["score"] == run.data.tags["lq.llm_score"]
    assert {"llm_val/sum/act_goal_rate", "llm_val/mean/act_goal_rate", "test/act_goal_rate",
            "baselines/random_valid/act_goal_rate"} <= set(run.data.metrics)  # fmt: skip
    assert [m.step for m in client.get_metric_history(run.info.run_id, "test/act_goal_rate")] == [0, 1]
    # the table the command printed is the one the run holds
    table = (tmp_path / "table.md").read_text()
    assert table in capsys.readouterr().out
    held = client.download_artifacts(run.info.run_id, "table.md", str(tmp_path / "held"))
    assert open(held).read() == table
