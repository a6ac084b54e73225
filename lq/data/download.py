"""``lq data download``: the public LIGHT-Quests and ATOMIC releases, checksummed and resumable.

Each resource downloads to ``<name>.part`` beside its final name, resuming from the bytes already
there with an HTTP Range request; the file takes its final name only once its SHA-256 matches.
Archives are unpacked into a temporary folder that is renamed into place when complete.
Offline, the first connection fails at once with a message that says what to do instead.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import tarfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlparse

from lq.data.io import atomic_dir

CHUNK = 1 << 16


class DownloadError(RuntimeError):
    """A resource could not be fetched or did not match its checksum."""


@dataclass(frozen=True)
class Resource:
    name: str
    url: str
    sha256: str
    filename: str  # where the download goes, relative to the destination
    extract: bool = False
    description: str = ""
    into: str | None = None  # an archive's folder, relative to the destination (default: the resource's name)
    strip: str | None = None  # the archive's one top folder, left out when unpacking


# Checksums and places as pinned by the LIGHT project's own build scripts (facebookresearch/LIGHT): the destination is
# laid out as LIGHT's data root (LIGHT_DATAPATH), which lq reads as it is (`DATA=<destination>`).
RESOURCES: tuple[Resource, ...] = (
    Resource(
        "quest_stems",
        "http://parl.ai/downloads/light_project/quests/quest_stems.tar.gz",
        "743d9a9dc85e9fd7737c6cb51762deae684382de326bf724cde5b72bcf7c7c7d",
        "quests/stems/batch_1.tar.gz",
        extract=True,
        description="LIGHT-Quests stems, one JSON per quest (7486)",
        into="quests/stems/batch_1",
        strip="quest_stems",
    ),
    Resource(
        "rl_quests_resources",
        "http://parl.ai/downloads/light_project/quests/rl_quests_resources.tar.gz",
        "baf958329e04d7366900b4c02f5af3d4b9e2db731fa24a72d2c3d2f0d0643f95",
        "quests/rl_quests_resources.tar.gz",
        extract=True,
        description="the paper's RL resources: raw game logs (wild_quest_completions/perfect2.json)",
        into="quests/rl_quests_resources",
        strip="rl_quests_resources",
    ),
    Resource(
        "wild_completions",
        "http://parl.ai/downloads/light_project/quests/wild_chats/formatted_wild_completions.json",
        "2ea8ae86a8f1f935d50055205a7d2cab243d8d01b34662cd7368cb2d578f5b8b",
        "quests/wild_chats/formatted_wild_completions.json",
        description="processed human demonstrations (2111)",
    ),
    Resource(
        "atomic",
        "https://storage.googleapis.com/ai2-mosaic/public/atomic/v1.0/atomic_data.tgz",
        "f22779944e6613044d530875dd9592a333be2e3cb83d25493b36bba7c59b2ba9",
        "atomic_data.tgz",
        extract=True,
        description="ATOMIC v1.0 (v4_atomic_*.csv)",
    ),
)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _offline_error(url: str, reason: object) -> DownloadError:
    host = urlparse(url).netloc
    return DownloadError(
        f"cannot reach {host} ({reason}). `lq data download` needs internet access. On an offline machine, "
        f"copy the release files into the destination folder by hand (they are resumed and checksummed from "
        f"there), or run `lq data generate` for the embedded default data."
    )


def _fetch(url: str, part: Path, timeout: float, progress: Callable[[int, int | None], None] | None) -> None:
    """Download ``url`` into ``part``, resuming from its current size."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "lq-data-download"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # nothing left to fetch: the part file is complete
            return
        raise DownloadError(f"{url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        raise _offline_error(url, getattr(err, "reason", err)) from None
    with response:
        resumed = have and response.status == 206
        total = response.headers.get("Content-Length")
        total_bytes = int(total) + (have if resumed else 0) if total else None
        done = have if resumed else 0
        try:
            with part.open("ab" if resumed else "wb") as out:
                while block := response.read(CHUNK):
                    out.write(block)
                    done += len(block)
                    if progress:
                        progress(done, total_bytes)
        except (TimeoutError, OSError, http.client.HTTPException) as err:
            raise DownloadError(
                f"{url}: connection lost after {done} bytes ({err}); run the command again to resume from {part}"
            ) from None
        # http.client returns a short body without complaint when the server closes early.
        if total_bytes is not None and done < total_bytes:
            raise DownloadError(
                f"{url}: connection lost after {done} of {total_bytes} bytes; run the command "
                f"again to resume from {part}"
            )


def download_resource(
    resource: Resource,
    dest: str | Path,
    *,
    timeout: float = 30.0,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Fetch one resource into ``dest``; returns the file, or the unpacked folder for archives."""
    dest = Path(dest)
    final = dest / resource.filename
    final.parent.mkdir(parents=True, exist_ok=True)
    if not (final.exists() and sha256_of(final) == resource.sha256):
        part = final.with_name(final.name + ".part")
        _fetch(resource.url, part, timeout, progress)
        got = sha256_of(part)
        if got != resource.sha256:
            part.unlink()
            raise DownloadError(
                f"{resource.url}: checksum mismatch (expected sha256 {resource.sha256}, got {got}); "
                f"the partial file was removed, run the command again"
            )
        os.replace(part, final)
    if not resource.extract:
        return final
    target = dest / (resource.into or resource.name)
    if target.is_dir():
        return target
    try:
        with atomic_dir(target) as tmp, tarfile.open(final) as archive:
            archive.extractall(tmp, filter="data")
            top = list(tmp.iterdir())
            if resource.strip and len(top) == 1 and top[0].name == resource.strip and top[0].is_dir():
                for entry in list(top[0].iterdir()):
                    os.replace(entry, tmp / entry.name)
                top[0].rmdir()
    except tarfile.TarError as err:
        raise DownloadError(f"{final}: cannot unpack ({err})") from None
    return target


def mirrored(resource: Resource, mirror: str) -> Resource:
    """The same resource fetched from ``mirror/<filename>`` (a team's own copy), checksum unchanged."""
    return replace(resource, url=f"{mirror.rstrip('/')}/{Path(urlparse(resource.url).path).name}")


def download_all(
    dest: str | Path,
    resources: Iterable[Resource] = RESOURCES,
    *,
    timeout: float = 30.0,
    mirror: str | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Path]:
    out = {}
    for r in resources:
        if mirror:
            r = mirrored(r, mirror)
        log(f"[{r.name}] {r.description or r.url}")
        last = [-1]

        def progress(done: int, total: int | None, _last: list[int] = last) -> None:
            step = done * 20 // total if total else done >> 24
            if step != _last[0] and sys.stderr.isatty():
                _last[0] = step
                shown = f"{done / 1e6:.1f} MB" + (f" / {total / 1e6:.1f} MB" if total else "")
                print(f"\r  {shown}", end="", file=sys.stderr, flush=True)

        out[r.name] = download_resource(r, dest, timeout=timeout, progress=progress)
        log(f"  -> {out[r.name]}")
    return out
