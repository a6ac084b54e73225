"""Evaluation results (:mod:`lq.eval.episodes`): the transcripts grouped as in the paper's appendix."""

from lq.eval import EvalResult


def test_eval_transcripts_are_grouped_as_in_the_appendix():
    def episode(by, speech, text):
        return {
            "act_goal_by": by,
            "act_goal": by is not None,
            "speech_goal": speech,
            "speech_score": 0.5 * speech,
            "steps": 3,
            "transcript": text,
        }

    result = EvalResult(
        0.5,
        0.5,
        0.25,
        [
            episode(None, True, "A"),
            episode("self", False, "B"),
            episode("self", True, "C"),
            episode("partner", False, "D"),
        ],
    )
    text = result.transcripts()
    order = [
        text.index(mark)
        for mark in (
            "=== Self act completion transcripts: 2 episodes, 1 of them",
            "C\n  => act goal: self, speech score 0.50 (speech goal: yes)",
            "B\n  => act goal: self",
            "=== Partner act completion transcripts: 1",
            "D\n",
            "=== Act goal not reached: 1 episodes, 1 of them",
            "A\n",
        )
    ]
    assert order == sorted(order)
