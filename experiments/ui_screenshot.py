"""Screenshots of the MLflow UI (as ``make ui`` serves it) showing an experiment's parent run, its children and
its table, taken by a real headless browser (Debian's chromium: ``apt-get install chromium``).

    python experiments/ui_screenshot.py --experiment table1 --out outputs/ui
    python experiments/ui_screenshot.py --links        # the addresses of lq's views of a store's runs (make ui)

Writes each page at the widths of common screens, 1,366 and 1,600 pixels (``runs-1366.png``, ``runs-1600.png``,
...), as tall as such a screen (768, 900), the compare view and the transcript as tall as they read: ``runs`` (the
parent's children in lq's view of them, :func:`lq.experiments.reporting.parent_view`: their test goal rates as
columns, the best act & speech goals first, that column beside their names), ``parent`` (the parent run's page, its
description on top), ``table`` (the parent's table artifact, its columns under short titles), ``compare`` (MLflow's
compare view of the parent's agent children, one per configuration, its first seed's, the RL agents where there are
two or more: "Show diff only" switched on for the params and the metrics, the metrics' table scrolled to the test
goal rates and its box plot drawn of act & speech goals by what tells the runs apart, the encoder: which
configuration won, its labels whole) and ``transcript`` (an agent run's HTML transcripts,
``transcripts/test_seed0.html``, as the UI renders them: the newest BC or RL run that logged one, or
``--transcript-run``), and exits non-zero if the server or the browser fails or a screenshot is blank. Without a
finished parent of the experiment only the transcript is taken.

MLflow 3.17 opens an experiment on its GenAI overview unless the sidebar's workflow switch says *Model training*
(which the browser remembers) or the address asks for it (``?workflowType=machine_learning``): every page is opened
through chromium's DevTools pipe, as a browser that chose *Model training* and closed the assistant's side panel,
and clicked there.
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

from lq.envs.protocol import RANKED_RATES  # plain data, no torch
from lq.tracking import VIEWS  # MLflow's saved views (experiment tags); plain MLflow: make ui's --links stays light

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


WIDTHS = (1366, 1600)  # common screens' widths (a laptop's, a desktop's): every page is taken at each
SCREENS = {1366: 768, 1600: 900}  # their heights: what a person sees without scrolling
TALL = {"compare": 2000, "transcript": 1400}  # pages read down their length: taken as tall as that
GOALS = tuple(f"test/{rate}" for rate in RANKED_RATES)  # the compare view's, the headline first (its box plot's)
# before any page's own script: the browser chose "Model training" in the sidebar's switch, and closed the assistant
PREPARE = """try {
  localStorage.setItem("mlflow.workflowType_v1", JSON.stringify("machine_learning"));
  localStorage.setItem("mlflow.assistant.panelOpen_v1", "false");
  localStorage.setItem("mlflow.assistant.fab.autoOpenedOnFirstLoad_v1", "true");
} catch (e) {}"""  # a sandboxed frame (an HTML artifact) has no storage


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
        self.call("Page.enable", True)  # without it, no script runs before the pages' own
        self.call("Page.addScriptToEvaluateOnNewDocument", True, source=PREPARE)

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
        self.wait_until(f"!!document.body && document.body.innerText.includes({json.dumps(text)})", text, timeout)

    def wait_until(self, expression: str, what: str, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: never on the page")
            time.sleep(0.5)

    def click(self, element: str) -> None:
        """Click the element the JavaScript expression ``element`` finds, as a pointer does (the pressed and released
        events at its centre: Radix's tabs and selects ignore a script's ``click()``)."""
        box = self.evaluate(f"(() => {{const r = ({element}).getBoundingClientRect(); return {{x: r.x + r.width / 2, "
                            "y: r.y + r.height / 2};})()")  # fmt: skip
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", True, type=kind, button="left", clickCount=1, **box)
        time.sleep(0.8)

    def screenshot(self, path: Path, url: str, clip: dict | None = None) -> None:
        """The page as it is now, or the part of it in ``clip`` (x, y, width, height), to ``path``."""
        extra = {"clip": {**clip, "scale": 1}} if clip else {}
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", True, format="png", **extra)["data"]))
        if path.stat().st_size < 10_000:  # a blank page compresses to a few kB
            raise RuntimeError(f"{path}: a blank screenshot of {url}")

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


def page_screenshot(browser: str, url: str, path: Path, size: str, ready: str, prepare=None) -> None:
    """A page opened in a DevTools-driven chromium (:data:`PREPARE` run first), once the JavaScript expression
    ``ready`` holds, after ``prepare(tools)`` where given (its clicks; it may return the part of the page to keep)."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        tools = DevTools(browser, size, profile)
        try:
            tools.call("Page.navigate", True, url=url)
            tools.wait_until(ready, f"{path.name}: {ready}")
            clip = prepare(tools) if prepare is not None else None
            time.sleep(2.0)  # the last requests answered, the tables re-rendered
            tools.screenshot(path, url, clip)
        finally:
            tools.close()


def show_runs(tools: DevTools) -> None:
    """The runs table of lq's view: the shared view's banner hidden, the view's metric columns checked."""
    tools.wait_for_text("matching runs")  # the view's filter applied, its runs counted
    tools.evaluate("document.querySelector('button[aria-label=\"Hide banner\"]')?.click()")
    shown = tools.evaluate("[...document.querySelectorAll('.ag-header-cell')].map(c => c.getAttribute('col-id'))")
    if not any(str(c).startswith("metrics.") for c in shown or []):
        raise RuntimeError(f"the runs table shows no metric column (the view did not apply): {shown}")


def scroll_to(tools: DevTools, name: str) -> None:
    """The compare view's metrics table scrolled down to the row ``name`` (as far as it goes), names and values in
    step (checked); left where it is without that row."""

    def find() -> dict | None:
        return tools.evaluate(FIND_ROW % (GRIDS, json.dumps(name)))

    def scroll(top: int) -> None:
        for grid in ("values", "names"):
            tools.evaluate(SCROLL % (GRIDS, grid, top))
            time.sleep(0.4)

    place, top = find(), 0
    while place is not None and place["row"] is None and top < place["end"]:
        top += 135  # three rows: the names drawn around the view reach further
        scroll(top)
        place = find()
    if place is None or place["row"] is None:
        return
    scroll(place["row"])
    place = find()
    if place["names"] != place["values"] or place["values"] != min(place["row"], place["end"]):
        raise RuntimeError(f"the compare view's metrics did not scroll to {name}, names and values in step: {place}")


def compare_goals(metrics: list[str], by: str):
    """The compare view's clicks: the params' and the metrics' "Show diff only" on, its box plot drawn of the first of
    ``metrics`` (the goal rates the runs logged, the headline first) by the param ``by`` (the encoder where the runs
    differ in it; the parallel-coordinates plot cuts every value to 10 characters, "general_li", the box plot names
    them whole), the metrics' table (a virtualised grid of 300 pixels) scrolled down to the goal rates; returns the
    page down to the end of the metrics' table."""

    def prepare(tools: DevTools) -> dict:
        for table in ("Parameters", "Metrics"):
            switch = f"document.querySelector('button[aria-label=\"{table} - Show diff only\"]')"
            tools.evaluate(f"{switch}.click()")
            if tools.evaluate(f"{switch}.getAttribute('aria-checked')") != "true":
                raise RuntimeError(f"the compare view's {table.lower()} were not diffed (the switch did not turn on)")
        if metrics:  # the plot's tab, then its axes: Radix controls, opened by the pointer's events
            tools.click("[...document.querySelectorAll('button')].find(e => e.textContent.trim() === 'Box Plot')")
            for axis, name in (("x", by), ("y", metrics[0])):
                tools.click(f"document.getElementById('{axis}-axis-selector')")
                option = f"[...document.querySelectorAll('[role=option]')].find(e => e.textContent.trim() === {name!r})"
                if not tools.evaluate(f"!!{option}"):
                    raise RuntimeError(f"the compare view's box plot offers no {name} on its {axis} axis")
                tools.evaluate(f"{option}.scrollIntoView()")
                tools.click(option)
                shown = tools.evaluate(f"document.getElementById('{axis}-axis-selector').textContent.trim()")
                if shown != name:
                    raise RuntimeError(f"the compare view's box plot shows {shown!r} on its {axis} axis, not {name}")
            scroll_to(tools, min(metrics))  # the table's rows are in name order
        return tools.evaluate(METRICS_END)

    return prepare


# the compare view's metrics table: two virtualised grids, the names and the values (which scrolls and takes the
# names along, a scroll late: each is scrolled here, the values first); GRIDS finds them
GRIDS = """const section = [...document.querySelectorAll("[class*=collapse-item]")]
  .find((e) => e.querySelector("[class*=collapse-header]")?.innerText.trim() === "Metrics");
const grids = [...(section?.querySelectorAll(".ReactVirtualized__Grid") || [])];
const names = grids[0], values = grids.find((g) => /(auto|scroll)/.test(getComputedStyle(g).overflowY));"""
# where the row NAME is among the names drawn (null where not drawn), and how far the values scroll
FIND_ROW = "(() => {%s\nif (!names || !values) return null; const a = [...names.querySelectorAll('a')]" \
    ".find((a) => a.textContent.trim() === %s); return {row: a ? a.parentElement.offsetTop : null, " \
    "names: names.scrollTop, values: values.scrollTop, end: values.scrollHeight - values.clientHeight};})()"
SCROLL = "(() => {%s\n%s.scrollTop = %d;})()"
# the part of the page down to the end of the compare view's metrics table
METRICS_END = """(() => {
  const section = [...document.querySelectorAll("[class*=collapse-item]")]
    .find((e) => e.querySelector("[class*=collapse-header]")?.innerText.trim() === "Metrics");
  const end = section ? Math.ceil(section.getBoundingClientRect().bottom) + 16 : window.innerHeight;
  return {x: 0, y: 0, width: window.innerWidth, height: Math.min(window.innerHeight, end)};
})()"""


def transcript_page(client, run_id: str | None) -> str | None:
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


def runs_page(exp_id: str, view: str | None = None) -> str:
    """An experiment's runs table as a page of the UI, as *Model training* (else MLflow 3.17 opens its GenAI
    overview), in the saved view ``view`` where given."""
    return f"#/experiments/{exp_id}/runs?workflowType=machine_learning" + (f"&viewStateShareKey={view}" if view else "")


def compared(client, exp_id: str, parent: str) -> list:
    """The agent children compare.png sets side by side: one per configuration (the newest finished), of the first
    seed; the RL agents where there are two or more (they differ by what the table varies), else RL and BC."""
    kids = client.search_runs([exp_id], f"tags.mlflow.parentRunId = '{parent}' and attributes.status = 'FINISHED'",
                              order_by=["attributes.start_time DESC"])  # fmt: skip
    agents = [r for r in kids if r.data.tags.get("lq.stage") in ("rl", "bc")]
    seeds = sorted({r.data.tags.get("lq.seed", "") for r in agents}, key=lambda s: (len(s), s))
    first = {}
    for run in agents:  # newest first: the newest of each configuration kept
        if run.data.tags.get("lq.seed", "") == seeds[0]:
            first.setdefault(run.data.tags.get("lq.config", run.info.run_id), run)
    runs = list(first.values())
    rl = [r for r in runs if r.data.tags.get("lq.stage") == "rl"]
    chosen = rl if len(rl) >= 2 else runs if len(runs) >= 2 else agents
    return sorted(chosen, key=lambda r: r.data.tags.get("lq.config", ""))


def links(client, base: str) -> str:
    """The addresses ``make ui`` prints: each lq experiment's runs table in lq's view of it (its runs' test goal
    rates, best first), and its three newest parents' children in theirs."""
    lines = [
        f"The MLflow UI at {base}/. MLflow 3.17 opens an experiment on its GenAI overview unless the sidebar's switch "
        "says 'Model training' (click it once: the browser remembers) or the address asks for it, as these do (its "
        "assistant panel opens on a first visit: close it once, it stays closed):"
    ]
    for exp in sorted(client.search_experiments(filter_string="name LIKE 'lq-%'"), key=lambda e: e.name):
        views = {k.removeprefix(VIEWS) for k in exp.tags if k.startswith(VIEWS)}
        page = runs_page(exp.experiment_id, "lq-goals" if "lq-goals" in views else None)
        lines.append(f"  {exp.name}: {base}/{page}")
        parents = client.search_runs([exp.experiment_id], "tags.`lq.role` = 'parent'", max_results=3,
                                     order_by=["attributes.start_time DESC"])  # fmt: skip
        for run in parents:
            if f"lq-{run.info.run_id}" in views:
                page = runs_page(exp.experiment_id, f"lq-{run.info.run_id}")
                lines.append(f"    its children of {run.info.run_name}: {base}/{page}")
    if len(lines) == 1:
        lines.append(f"  (no lq experiment in the store yet) {base}/#/experiments?workflowType=machine_learning")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", default="sqlite:///mlflow.db")
    parser.add_argument("--experiment", default="table1", help="table1, table2, table7 or table45")
    parser.add_argument("--out", type=Path, default=Path("outputs/ui"))
    parser.add_argument("--transcript-run", help="the agent run whose HTML transcript to show (default: the newest)")
    parser.add_argument("--browser", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--links", action="store_true", help="print the addresses of lq's views and take no shot")
    parser.add_argument("--base", default="http://127.0.0.1:5000", help="--links: where the UI is served")
    args = parser.parse_args(argv)
    from mlflow.tracking import MlflowClient

    client = MlflowClient(args.tracking_uri)
    if args.links:
        print(links(client, args.base.rstrip("/")), flush=True)
        return 0
    if not Path(args.browser).exists():
        print(f"error: no browser at {args.browser}: install Debian's chromium (apt-get install chromium)")
        return 1
    from lq.experiments import latest_parent
    from lq.experiments.reporting import parent_view

    pages: dict[str, tuple] = {}  # name: (page, ready, clicks)
    parent = latest_parent(args.tracking_uri, args.experiment)
    if parent is not None:
        run = client.get_run(parent)
        exp_id = run.info.experiment_id
        view = parent_view(client, parent)  # written by lq where it ran or was imported; here where older
        table = next((a.path for a in client.list_artifacts(parent, "tables") if a.path.endswith(".md")), None)
        shown = "!!document.querySelector('.ag-header-cell[col-id^=\"metrics.\"]')"
        pages["runs"] = (runs_page(exp_id, view), f"{shown} && !!document.querySelector('.ag-row')", show_runs)
        title = json.dumps(run.info.run_name or parent)
        pages["parent"] = (f"#/experiments/{exp_id}/runs/{parent}?workflowType=machine_learning",
                           f"!!document.body && document.body.innerText.includes({title})", None)  # fmt: skip
        if table is not None:  # built by lq experiment tables (an imported parent has none before)
            page = f"#/experiments/{exp_id}/runs/{parent}/artifacts/{table}?workflowType=machine_learning"
            pages["table"] = (page, "document.body.innerText.includes('mean ± std over seeds')", None)
        agents = compared(client, exp_id, parent)
        if agents:  # their params side by side (the encoder, ...), their goal rates
            runs, experiments = (quote(json.dumps(ids)) for ids in ([r.info.run_id for r in agents], [exp_id]))
            goals = [m for m in GOALS if any(m in r.data.metrics for r in agents)]
            differ = [k for k in ("encoder", "stage", "ability", "switch")
                      if len({r.data.params.get(k) for r in agents}) > 1]  # fmt: skip
            pages["compare"] = (f"#/compare-runs?runs={runs}&experiments={experiments}",
                                "!!document.body && document.body.innerText.includes('Show diff only')",
                                compare_goals(goals, (differ or ['encoder'])[0]))  # fmt: skip
    transcript = transcript_page(client, args.transcript_run)
    if transcript is not None:  # the HTML in its sandboxed frame, given time to paint
        path = json.dumps(transcript.split("/artifacts/", 1)[1])
        shown = f"!!document.querySelector('iframe') && document.body.innerText.includes({path})"
        pages["transcript"] = (f"{transcript}?workflowType=machine_learning", shown, lambda _: time.sleep(3.0))
    if not pages:
        print(
            f"error: no finished parent run of {args.experiment} and no agent run with an HTML transcript in "
            f"{args.tracking_uri}: run make ablations, make bc or make rl first"
        )
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", args.tracking_uri, "--port", str(port),
         "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(base + "/health")
        for name, (page, ready, clicks) in pages.items():
            url = f"{base}/{page}"
            for width in WIDTHS:
                path = args.out / f"{name}-{width}.png"
                page_screenshot(args.browser, url, path, f"{width},{TALL.get(name, SCREENS[width])}", ready, clicks)
                print(f"{path}: {url}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
