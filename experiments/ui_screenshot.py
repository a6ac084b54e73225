"""Screenshots of the MLflow UI (as ``make ui`` serves it) showing an experiment's parent run, its children and
its table, taken by a real headless browser (Debian's chromium: ``apt-get install chromium``).

    python experiments/ui_screenshot.py --experiment table1 --out outputs/ui

Writes ``runs.png`` (the experiment's runs: the parent, its children nested under it), ``parent.png`` (the
parent run's page, listing its child runs: one per configuration and seed) and ``table.png`` (the parent's
table artifact), and exits non-zero if the server or the browser fails or a screenshot is blank.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

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
]


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    parser.add_argument("--experiment", default="table1", help="table1, table2, table7 or table45")
    parser.add_argument("--out", type=Path, default=Path("outputs/ui"))
    parser.add_argument("--browser", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args(argv)
    if not Path(args.browser).exists():
        print(f"error: no browser at {args.browser}: install Debian's chromium (apt-get install chromium)")
        return 1
    parent = latest_parent(args.tracking_uri, args.experiment)
    if parent is None:
        print(f"error: no finished parent run of {args.experiment} in {args.tracking_uri}: run make ablations first")
        return 1
    client = MlflowClient(args.tracking_uri)
    exp_id = client.get_run(parent).info.experiment_id
    table = next(a.path for a in client.list_artifacts(parent, "tables") if a.path.endswith(".md"))
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
        shots = {
            "runs.png": f"{base}/#/experiments/{exp_id}/runs",
            "parent.png": f"{base}/#/experiments/{exp_id}/runs/{parent}",
            "table.png": f"{base}/#/experiments/{exp_id}/runs/{parent}/artifacts/{table}",
        }
        for name, url in shots.items():
            screenshot(args.browser, url, args.out / name)
            print(f"{args.out / name}: {url}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
