"""What the sync and async clients share: configuration, error mapping, the SSE parser and
folder zipping. No I/O on the network here."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any, Iterable

import httpx
import pathspec

from .errors import HTTPError, NotFoundError
from .models import DoneEvent, Event, ExecResult, InstallEvent, OutputEvent

DEFAULT_BASE_URL = "http://localhost:8000"
#: Never sent from a folder: version control and the CLI's state file.
ALWAYS_EXCLUDED = (".git/", ".petri-sandbox")


def base_url(explicit: str | None) -> str:
    """``explicit``, else ``JHANSI_BASE_URL`` / ``PETRI_URL``, else localhost:8000."""
    return (
        explicit
        or os.environ.get("JHANSI_BASE_URL")
        or os.environ.get("PETRI_URL")
        or DEFAULT_BASE_URL
    ).rstrip("/")


def raise_for(what: str, response: httpx.Response) -> None:
    """Raises ``HTTPError`` (``NotFoundError`` for 404) unless the response is a success."""
    if response.is_success:
        return
    code, detail = None, response.text
    try:
        body = response.json()
        code = body.get("code")
        detail = body.get("detail", detail)
        if not isinstance(detail, str):
            detail = json.dumps(detail)
    except (ValueError, AttributeError):
        pass
    error = NotFoundError if response.status_code == 404 else HTTPError
    raise error(what, response.status_code, code, detail)


def exec_body(command: str, timeout: float | None) -> dict[str, Any]:
    body: dict[str, Any] = {"command": command, "output_format": "raw"}
    if timeout is not None:
        body["timeout"] = timeout
    return body


class SSEParser:
    """Turns the exec stream's lines into events (`:` lines are keepalives)."""

    def __init__(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, line: str) -> Event | None:
        if line == "":
            name, data = self._event, "\n".join(self._data)
            self._event, self._data = None, []
            if name == "output":
                return OutputEvent(data)
            if name == "install":
                return InstallEvent(data)
            if name == "done":
                return DoneEvent(ExecResult.from_done(json.loads(data)))
            return None
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        return None


def folder_files(root: Path, exclude: Iterable[str] = ()) -> list[Path]:
    """Files of ``root`` to send: everything but what ``.gitignore`` / ``.petriignore`` at the
    root, ``exclude`` (gitignore syntax) or ``ALWAYS_EXCLUDED`` name. Symlinks are skipped."""
    patterns = list(ALWAYS_EXCLUDED) + list(exclude)
    for name in (".gitignore", ".petriignore"):
        ignore_file = root / name
        if ignore_file.is_file():
            patterns.extend(ignore_file.read_text(errors="replace").splitlines())
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        rel_dir = here.relative_to(root)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not (here / d).is_symlink()
            and not spec.match_file(f"{(rel_dir / d).as_posix()}/")
        )
        for name in sorted(filenames):
            path = here / name
            rel = (rel_dir / name).as_posix()
            if path.is_symlink() or not path.is_file() or spec.match_file(rel):
                continue
            files.append(path)
    return files


def zip_folder(root: Path, exclude: Iterable[str] = ()) -> bytes:
    """A zip (in memory) of ``folder_files(root, exclude)``, paths relative to ``root``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in folder_files(root, exclude):
            archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()
