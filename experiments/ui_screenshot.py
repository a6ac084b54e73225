"""Screenshots of the MLflow UI (as ``make ui`` serves it) showing an experiment's parent run, its children and
its table, taken by a real headless browser (Debian's chromium: ``apt-get install chromium``).

    python experiments/ui_screenshot.py --experiment table1 --out outputs/ui

Writes ``runs.png`` (the experiment's runs: the parent, its children nested under it), ``parent.png`` (the parent
run's page, listing its child runs: one per configuration and seed), ``table.png`` (the parent's table artifact),
``compare.png`` (MLflow's compare view of its agent children: their params, such as the encoder, the sizes and the
loss coefficients, side by side) and ``transcript.png`` (an agent run's HTML transcripts,
``transcripts/test_seed0.html``, as the UI renders them: the newest BC or RL run that logged one, or
``--transcript-run``), and exits non-zero if the server or the browser fails or a screenshot is blank. Without a
finished parent of the experiment only the transcript is taken.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

from mlflow.tracking import MlflowClient

from lq.experiments import latest_parent

CHROMIUM_FLAGS = [  # no sandbox (root), and no background traffic on a closed network
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--run-all-compositor-stages-before-draw",
    "--disable-site-isolation-trials",  # the UI shows an HTML artifact in a sandboxed iframe: paint it in-process
    "--disable-features=site-per-process,IsolateOrigins",
]


SIZES = {"transcript.png": "1600,1400", "compare.png": "1600,2400"}  # compare: its params and metrics tables


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1.0)
    raise TimeoutError(f"the MLflow UI did not answer at {url} within {timeout:.0f} s")


def screenshot(browser: str, url: str, path: Path, size: str = "1600,1000", budget_ms: int = 20000) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                browser,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={size}",
                f"--virtual-time-budget={budget_ms}",
                f"--screenshot={path}",
                url,
            ],
            check=True,
            capture_output=True,
            timeout=180,
        )
    if not path.exists() or path.stat().st_size < 10_000:  # a blank page compresses to a few kB
        raise RuntimeError(f"{path}: no screenshot, or a blank one, of {url}")


def transcript_page(client: MlflowClient, run_id: str | None) -> str | None:
    """The UI page of an agent run's first HTML transcript: ``run_id``'s, or the newest BC or RL run's that has one, in
    any experiment (``make rl``'s ``lq-rl``, a table's children in ``lq-table1``, ...)."""
    if run_id is None:
        experiments = [e.experiment_id for e in client.search_experiments()]
        finished = "attributes.status = 'FINISHED'"
        runs = client.search_runs(experiments, finished, order_by=["attributes.start_time DESC"]) if experiments else []
        candidates = [r.info.run_id for r in runs if r.data.tags.get("lq.stage") in ("rl", "bc")]
    else:
        candidates = [run_id]
    for rid in candidates:
        pages = [a.path for a in client.list_artifacts(rid, "transcripts") if a.path.endswith(".html")]
        if pages:
            return f"#/experiments/{client.get_run(rid).info.experiment_id}/runs/{rid}/artifacts/{sorted(pages)[0]}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    parser.add_argument("--experiment", default="table1", help="table1, table2, table7 or table45")
    parser.add_argument("--out", type=Path, default=Path("outputs/ui"))
    parser.add_argument("--transcript-run", help="the agent run whose HTML transcript to show (default: the newest)")
    parser.add_argument("--browser", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args(argv)
    if not Path(args.browser).exists():
        print(f"error: no browser at {args.browser}: install Debian's chromium (apt-get install chromium)")
        return 1
    client = MlflowClient(args.tracking_uri)
    pages: dict[str, str] = {}
    parent = latest_parent(args.tracking_uri, args.experiment)
    if parent is not None:
        exp_id = client.get_run(parent).info.experiment_id
        table = next(a.path for a in client.list_artifacts(parent, "tables") if a.path.endswith(".md"))
        pages["runs.png"] = f"#/experiments/{exp_id}/runs"
        pages["parent.png"] = f"#/experiments/{exp_id}/runs/{parent}"
        pages["table.png"] = f"#/experiments/{exp_id}/runs/{parent}/artifacts/{table}"
        agents = [
            r.info.run_id
            for r in client.search_runs([exp_id], f"tags.mlflow.parentRunId = '{parent}'")
            if r.data.tags.get("lq.stage") in ("rl", "bc")
        ]
        if agents:  # their params side by side: the encoder, the sizes, the coefficients
            runs, experiments = (quote(json.dumps(ids)) for ids in (agents, [exp_id]))
            pages["compare.png"] = f"#/compare-runs?runs={runs}&experiments={experiments}"
    transcript = transcript_page(client, args.transcript_run)
    if transcript is not None:
        pages["transcript.png"] = transcript
    if not pages:
        print(
            f"error: no finished parent run of {args.experiment} and no agent run with an HTML transcript in "
            f"{args.tracking_uri}: run make ablations, make bc or make rl first"
        )
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", args.tracking_uri, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(base + "/health")
        for name, page in pages.items():
            url = f"{base}/{page}"
            screenshot(
                args.browser,
                url,
                args.out / name,
                size=SIZES.get(name, "1600,1000"),
            )
            print(f"{args.out / name}: {url}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
