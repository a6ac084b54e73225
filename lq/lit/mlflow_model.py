"""An agent bundle as an MLflow logged model (``mlflow.pyfunc``): the experiment driver's ``--log-model`` and
``lq export --log-model RUN`` log one, and ``mlflow.pyfunc.load_model(uri).predict(frame)`` plays quests with it."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd

from lq.eval import evaluate
from lq.lit.bundles import load_bundle

EPISODE_COLUMNS = ("quest_id", "act_goal", "act_goal_by", "speech_goal", "steps", "transcript")


class AgentModel(mlflow.pyfunc.PythonModel):
    """``predict`` plays the quests of its input (a DataFrame with a ``quest_id`` column of the bundle's test quests;
    every test quest for an empty one), one zero-shot episode each under the agent's protocol, and returns a row per
    quest: the goals reached, by whom, the turns and the transcript."""

    def load_context(self, context) -> None:
        self.module = load_bundle(context.artifacts["bundle"])

    def predict(self, context, model_input: pd.DataFrame, params: dict | None = None) -> pd.DataFrame:
        env = self.module.eval_env("test")
        if model_input is not None and len(model_input):
            env.only([str(q) for q in model_input["quest_id"]], "a test quest of this agent's data")
        result = evaluate(env, self.module.make_actor(), progress=False, greedy=self.module.protocol.greedy)
        return pd.DataFrame([{k: e[k] for k in EPISODE_COLUMNS} for e in result.episodes])


def log_agent_model(bundle: str | Path, run_id: str, tracking_uri: str, name: str = "agent") -> str:
    """Log the bundle folder as a logged model of run ``run_id``; returns its model URI."""
    client = mlflow.MlflowClient(tracking_uri)
    client.get_run(run_id)  # an unknown run is named here, before anything is written
    mlflow.set_tracking_uri(tracking_uri)
    with mlflow.start_run(run_id=run_id):
        info = mlflow.pyfunc.log_model(
            name=name, python_model=AgentModel(), artifacts={"bundle": str(bundle)}, pip_requirements=["lq"]
        )
    return info.model_uri
