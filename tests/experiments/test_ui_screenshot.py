"""The MLflow UI in a real browser (``experiments/ui_screenshot.py``): the parent, its children, the table and an
agent's transcript, at a laptop's and a desktop's width."""

import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from lq import experiments as X
from tests.experiments.helpers import _fake_children

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="Debian's chromium is not installed (apt-get install chromium)"
)
def test_the_mlflow_ui_shows_the_parent_its_children_and_the_table_in_a_real_browser(tmp_path, monkeypatch):
    import importlib.util

    monkeypatch.chdir(tmp_path)  # the store's artifacts go under tmp_path/mlruns
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    experiment = X.table1(["scratch"])
    parent = _fake_children(MlflowClient(uri), experiment, {"test/act_goal_rate": [0.2, 0.4]})
    X.build_tables(experiment, parent, uri, log=lambda _: None)
    spec = importlib.util.spec_from_file_location("ui_screenshot", ROOT / "experiments" / "ui_screenshot.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    # an agent run's HTML transcript, as every BC and RL run logs it
    from lq.eval import transcripts_html

    client = MlflowClient(uri)
    agent = client.create_run(client.get_run(parent).info.experiment_id).info.run_id
    episode = {
        "card": {"quest_id": "q1", "goal": "hug dragon", "setting": "A cave.", "motivation": "I want a hug."},
        "turns": [
            {"side": "partner", "name": "dragon", "kind": "speech", "text": "Who goes there?"},
            {
                "side": "self",
                "name": "knight",
                "kind": "action",
                "text": "hug dragon",
                "result": "You hug the dragon.",
                "reached_goal": True,
            },
        ],
        "act_goal_by": "self",
        "speech_goal": False,
        "steps": 1,
    }
    client.log_text(agent, transcripts_html([episode] * 40, "RL scratch, test, seed 0"), "transcripts/test_seed0.html")
    client.set_terminated(agent, "FINISHED")
    out = tmp_path / "ui"
    argv = ["--tracking-uri", uri, "--experiment", "table1", "--out", str(out), "--transcript-run", agent]
    assert script.main(argv) == 0
    from PIL import Image

    for name in ("runs", "parent", "table", "compare", "transcript"):
        for width in (1366, 1600):  # a laptop's and a desktop's screen
            data = (out / f"{name}-{width}.png").read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
            assert Image.open(out / f"{name}-{width}.png").width == width
    # the page itself is painted where the UI shows the artifact (not just the UI's frame around an empty iframe)
    artifact_view = Image.open(out / "transcript-1366.png").convert("L").crop((460, 200, 1160, 900))
    assert len(set(artifact_view.get_flattened_data())) > 20
