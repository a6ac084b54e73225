"""Screenshots of the MLflow UI (as ``make ui`` serves it) showing an experiment's parent run, its children and
its table, taken by a real headless browser (Debian's chromium: ``apt-get install chromium``).

    python experiments/ui_screenshot.py --experiment table1 --out outputs/ui

Writes ``runs.png`` (the experiment's runs: the parent, its children nested under it), ``parent.png`` (the parent
run's page, listing its child runs: one per configuration and seed), ``table.png`` (the parent's table artifact),
``compare.png`` (MLflow's compare view of its agent children with its "Show diff only" switched on for the params: what
tells them apart, such as the encoder, the stage and the loss coefficients, side by side; the switch is clicked through
chromium's DevTools pipe) and ``transcript.png`` (an agent run's HTML transcripts,
``transcripts/test_seed0.html``, as the UI renders them: the newest BC or RL run that logged one, or
``--transcript-run``), and exits non-zero if the server or the browser fails or a screenshot is blank. Without a
finished parent of the experiment only the transcript is taken.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
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


SIZES = {"transcript.png": "1600,1400", "compare.png": "1600,2000"}  # compare: its params and metrics tables


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


class DevTools:
    """A headless chromium driven through its DevTools pipe (``--remote-debugging-pipe``: JSON messages ended by NUL,
    read on fd 3, written on fd 4), for a page that must be clicked before its screenshot."""

    def __init__(self, browser: str, size: str, profile: str):
        width, height = (int(v) for v in size.split(","))
        ours_in, chrome_out = os.pipe()
        chrome_in, ours_out = os.pipe()

        def wire() -> None:  # in the child: its ends of the pipes on fds 3 and 4, kept across exec
            os.dup2(chrome_in, 3)
            os.dup2(chrome_out, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.process = subprocess.Popen(
            [
                browser,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={size}",
                "--remote-debugging-pipe",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=wire,
        )
        for fd in (chrome_in, chrome_out):
            os.close(fd)
        self.write, self.read, self.pending, self.sent = ours_out, ours_in, b"", 0
        page = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        self.call(
            "Emulation.setDeviceMetricsOverride", True, width=width, height=height, deviceScaleFactor=1, mobile=False
        )

    def call(self, method: str, on_page: bool = False, **params) -> dict:
        self.sent += 1
        message = {"id": self.sent, "method": method, "params": params}
        if on_page:
            message["sessionId"] = self.session
        os.write(self.write, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.pending:
                chunk = os.read(self.read, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium closed its DevTools pipe during {method}")
                self.pending += chunk
            raw, self.pending = self.pending.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.sent:
                if "error" in reply:
                    raise RuntimeError(f"chromium: {method}: {reply['error']}")
                return reply["result"]

    def evaluate(self, expression: str):
        return self.call("Runtime.evaluate", True, expression=expression, returnByValue=True)["result"].get("value")

    def wait_for_text(self, text: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"!!document.body && document.body.innerText.includes({json.dumps(text)})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"'{text}' never appeared on the page")
            time.sleep(0.5)

    def close(self) -> None:
        """Chromium asked to quit (its helpers too, which a kill of the launcher script would leave writing)."""
        try:
            self.call("Browser.close")
            self.process.wait(timeout=30)
        except (OSError, RuntimeError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        for fd in (self.write, self.read):
            os.close(fd)


def compare_screenshot(browser: str, url: str, path: Path, size: str) -> None:
    """The compare view with its params diffed: "Show diff only" switched on, the assistant's side panel closed."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        tools = DevTools(browser, size, profile)
        try:
            tools.call("Page.navigate", True, url=url)
            tools.wait_for_text("Show diff only")
            switch = "document.querySelector('button[aria-label=\"Parameters - Show diff only\"]')"
            tools.evaluate(f"{switch}.click()")
            if tools.evaluate(f"{switch}.getAttribute('aria-checked')") != "true":
                raise RuntimeError(f"the compare view's params were not diffed (its switch did not turn on): {url}")
            tools.evaluate("document.querySelector('button[aria-label=\"Close\"]')?.click()")
            time.sleep(2.0)  # the table re-renders, the panel slides away
            shot = tools.call("Page.captureScreenshot", True, format="png")["data"]
        finally:
            tools.close()
    path.write_bytes(base64.b64decode(shot))
    if path.stat().st_size < 10_000:
        raise RuntimeError(f"{path}: a blank screenshot of {url}")


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
            take = compare_screenshot if name == "compare.png" else screenshot
            take(args.browser, url, args.out / name, size=SIZES.get(name, "1600,1000"))
            print(f"{args.out / name}: {url}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
