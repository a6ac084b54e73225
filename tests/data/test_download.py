"""`lq data download` against an HTTP server on 127.0.0.1 serving archives the test builds."""

import csv
import hashlib
import io
import json
import socket
import tarfile
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lq.cli import main
from lq.data import load_atomic_csv, load_demos, load_quests
from lq.data.atomic import COLUMNS, RELATIONS, AtomicEvent
from lq.data.dataset import load_dataset
from lq.data.download import RESOURCES, DownloadError, Resource, download_all, download_resource
from tests.samples import demo_json, quest_json


class _Server:
    """Serves ``files`` by name, honours ``Range: bytes=N-``, and can cut a response short."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files
        self.requests: list[dict[str, str]] = []
        self.cut_after: int | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                server.requests.append({"path": self.path, **dict(self.headers)})
                body = server.files.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404)
                    return
                start = 0
                if rng := self.headers.get("Range"):
                    start = int(rng.removeprefix("bytes=").rstrip("-"))
                    if start >= len(body):
                        self.send_error(416)
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                payload = body[start:]
                if server.cut_after is not None:
                    payload, server.cut_after = payload[: server.cut_after], None
                    self.wfile.write(payload)
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _atomic_csv() -> bytes:
    event = AtomicEvent(
        "PersonX gets a sword", {r: ["none"] for r in RELATIONS} | {"xWant": ["to fight"]}, ["gets", "sword"], "trn"
    )
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    writer.writerow(event.to_row())
    return out.getvalue().encode()


def _release() -> dict[str, bytes]:
    """The four downloads, small, with the archives laid out as the real ones (one top folder)."""
    stems = {f"quest_stems/quest_{i}.json": json.dumps(quest_json()).encode() for i in range(20)}
    log = {
        "score": 12,
        "dialogue": [
            {"id": "lair_0", "type": "location", "text": "A cave of gold."},
            {"id": "human", "type": "speech", "text": "Give me my egg!", "score": 1},
            {"id": "knight_2", "type": "speech", "text": "Never.", "score": 1},
            {"id": "human", "type": "action", "text": "hit knight", "score": 5},
        ],
        "human_persona": {
            "name": "dragon",
            "id": "dragon_1",
            "persona": "I am a dragon.",
            "motivation": "m",
            "goal": "hit knight",
        },
        "bot_persona": {"name": "knight", "id": "knight_2", "persona": "I am a knight."},
        "location": {"name": "lair", "description": "A cave of gold.", "quest_file": "quest_3.json"},
    }
    perfect2 = json.dumps([log] * 10).encode()
    return {
        "quest_stems.tar.gz": _tar_gz(stems),
        "rl_quests_resources.tar.gz": _tar_gz({"rl_quests_resources/wild_quest_completions/perfect2.json": perfect2}),
        "formatted_wild_completions.json": json.dumps([demo_json(6, str(i)) for i in range(10)]).encode(),
        "atomic_data.tgz": _tar_gz({"v4_atomic_trn.csv": _atomic_csv()}),
    }


def _resources(files: dict[str, bytes], url: str) -> list[Resource]:
    """lq's own resources (their places in the destination), served from the test's server."""
    out = []
    for r in RESOURCES:
        name = r.url.rsplit("/", 1)[-1]
        out.append(replace(r, url=f"{url}/{name}", sha256=hashlib.sha256(files[name]).hexdigest()))
    return out


def test_downloads_verifies_and_lays_out_lights_data_root(tmp_path):
    files = _release()
    with _Server(files) as server:
        got = download_all(tmp_path, _resources(files, server.url), log=lambda _: None)
        assert got["quest_stems"] == tmp_path / "quests/stems/batch_1"
        assert load_quests(got["quest_stems"]).counts() == {"train": 16, "valid": 2, "test": 2}
        assert len(load_demos(got["wild_completions"]).all()) == 10
        assert load_atomic_csv(got["atomic"] / "v4_atomic_trn.csv")[0].relations["xWant"] == ["to fight"]
        dataset = load_dataset(tmp_path)  # the destination is a LIGHT data root lq reads as it is
        assert dataset.layout == "release" and dataset.report.linked == 10
        assert dataset.demos.train[0].conv_extra["quest_id"] == "quest_3"
        n = len(server.requests)
        download_all(tmp_path, _resources(files, server.url), log=lambda _: None)
        assert len(server.requests) == n  # already there and verified: nothing fetched again
    assert not list(tmp_path.rglob("*.part"))


def test_interrupted_download_resumes_with_a_range_request(tmp_path):
    files = {"big.json": json.dumps([demo_json(13, str(i)) for i in range(300)]).encode()}
    with _Server(files) as server:
        resource = Resource(
            "demos", f"{server.url}/big.json", hashlib.sha256(files["big.json"]).hexdigest(), "big.json"
        )
        server.cut_after = len(files["big.json"]) // 3
        with pytest.raises(DownloadError, match="connection lost"):
            download_resource(resource, tmp_path)
        part = tmp_path / "big.json.part"
        assert part.stat().st_size == len(files["big.json"]) // 3
        assert not (tmp_path / "big.json").exists()
        download_resource(resource, tmp_path)
        assert server.requests[-1]["Range"] == f"bytes={len(files['big.json']) // 3}-"
    assert (tmp_path / "big.json").read_bytes() == files["big.json"] and not part.exists()


def test_checksum_mismatch_removes_the_partial_file(tmp_path):
    files = {"x.json": b"[]"}
    with _Server(files) as server:
        bad = Resource("x", f"{server.url}/x.json", "0" * 64, "x.json")
        with pytest.raises(DownloadError, match="checksum mismatch"):
            download_resource(bad, tmp_path)
    assert list(tmp_path.iterdir()) == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_offline_fails_at_once_with_a_clear_message(tmp_path):
    resource = Resource("x", f"http://127.0.0.1:{_closed_port()}/x.json", "0" * 64, "x.json")
    start = time.monotonic()
    with pytest.raises(DownloadError, match="cannot reach 127.0.0.1") as info:
        download_resource(resource, tmp_path)
    assert time.monotonic() - start < 5
    assert "lq data generate" in str(info.value)


def test_cli_reports_errors_and_exits_nonzero(tmp_path, capsys):
    assert (
        main(["data", "download", str(tmp_path), "--only", "atomic", "--mirror", f"http://127.0.0.1:{_closed_port()}"])
        == 1
    )
    assert "cannot reach" in capsys.readouterr().err
    with _Server({"atomic_data.tgz": b"not the real archive"}) as server:
        assert main(["data", "download", str(tmp_path), "--only", "atomic", "--mirror", server.url]) == 1
        assert server.requests[-1]["path"] == "/atomic_data.tgz"
    assert "checksum mismatch" in capsys.readouterr().err
    assert main(["data", "download", str(tmp_path), "--only", "nope"]) == 2
