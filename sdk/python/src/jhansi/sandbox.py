"""The synchronous client."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import httpx

from . import _core
from .errors import NotCreatedError, StreamError
from .models import DoneEvent, Event, ExecResult, InstallEvent, OutputEvent


class Sandbox:
    """A sandbox on a Petri server.

    >>> with Sandbox("python", agent="my-agent") as sandbox:
    ...     sandbox.write_file("main.py", "print('hi')")
    ...     result = sandbox.exec("python main.py")
    ...     result.output, result.ok
    ('hi\\n', True)

    ``base_url`` defaults to ``JHANSI_BASE_URL`` (or ``PETRI_URL``), else
    ``http://localhost:8000``. Every failed request raises an ``HTTPError``.
    """

    def __init__(
        self,
        language: str = "python",
        *,
        agent: str | None = None,
        created_by: str | None = None,
        base_url: str | None = None,
        memory_mb: int | None = None,
        disk_mb: int | None = None,
        sandbox_id: str | None = None,
        timeout: float = 300.0,
    ) -> None:
        self.language = language
        self.agent = agent
        self.created_by = created_by
        self.base_url = _core.base_url(base_url)
        self._limits = {"memory_mb": memory_mb, "disk_mb": disk_mb}
        self._id = sandbox_id
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout)

    # Lifecycle -----------------------------------------------------------------------------

    @classmethod
    def attach(cls, sandbox_id: str, *, base_url: str | None = None) -> "Sandbox":
        """A handle on an existing sandbox."""
        sandbox = cls(base_url=base_url, sandbox_id=sandbox_id)
        sandbox.language = sandbox.status()["language"]
        return sandbox

    @property
    def id(self) -> str:
        if self._id is None:
            raise NotCreatedError("the sandbox has not been created yet")
        return self._id

    def create(self) -> "Sandbox":
        body: dict[str, Any] = {"language": self.language}
        for key, value in [("agent", self.agent), ("created_by", self.created_by), *self._limits.items()]:
            if value is not None:
                body[key] = value
        self._id = self._json("creating a sandbox", "POST", "/v1/sandboxes", json=body)["id"]
        return self

    def status(self) -> dict[str, Any]:
        return self._json("reading the sandbox", "GET", f"/v1/sandboxes/{self.id}")

    def delete(self) -> None:
        """Deletes the sandbox (its run history stays on the server)."""
        self._request("deleting the sandbox", "DELETE", f"/v1/sandboxes/{self.id}")
        self._id = None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Sandbox":
        if self._id is None:
            self.create()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._id is not None:
                self.delete()
        finally:
            self.close()

    # Commands ------------------------------------------------------------------------------

    def stream(self, command: str, *, timeout: float | None = None) -> Iterator[Event]:
        """Runs ``command`` (``sh -c``), yielding events as they arrive; the last is a
        ``DoneEvent``."""
        return self._events(
            "running the command",
            "POST",
            f"/v1/sandboxes/{self.id}/exec",
            json=_core.exec_body(command, timeout),
        )

    def _events(self, what: str, method: str, path: str, **kwargs: Any) -> Iterator[Event]:
        parser = _core.SSEParser()
        with self._http.stream(
            method, path, timeout=httpx.Timeout(30.0, read=None), **kwargs
        ) as response:
            if not response.is_success:
                response.read()
                _core.raise_for(what, response)
            for line in response.iter_lines():
                event = parser.feed(line)
                if event is not None:
                    yield event
                    if isinstance(event, DoneEvent):
                        return
        raise StreamError("the stream ended without a done event")

    def exec(
        self,
        command: str,
        *,
        timeout: float | None = None,
        on_output: Callable[[str], None] | None = None,
        on_install: Callable[[str], None] | None = None,
    ) -> ExecResult:
        """Runs ``command`` and returns its result; ``on_output`` / ``on_install`` get each
        line as it is printed."""
        for event in self.stream(command, timeout=timeout):
            if isinstance(event, OutputEvent) and on_output:
                on_output(event.line)
            elif isinstance(event, InstallEvent) and on_install:
                on_install(event.line)
            elif isinstance(event, DoneEvent):
                return event.result
        raise StreamError("the stream ended without a done event")

    # Background processes and port preview -------------------------------------------------

    def start(self, command: str, *, timeout: float | None = None) -> dict[str, Any]:
        """Starts ``command`` detached and returns the process at once (``id``, ``status``...).
        It lives until it exits, is killed, or the sandbox goes."""
        body = {**_core.exec_body(command, timeout), "background": True}
        return self._json("starting the process", "POST", f"/v1/sandboxes/{self.id}/exec", json=body)

    def processes(self) -> list[dict[str, Any]]:
        """Background processes of this sandbox, running and ended, newest first."""
        return self._json("listing processes", "GET", f"/v1/sandboxes/{self.id}/processes")

    def process(self, process_id: str) -> dict[str, Any]:
        return self._json(
            "reading the process", "GET", f"/v1/sandboxes/{self.id}/processes/{process_id}"
        )

    def follow(self, process_id: str) -> Iterator[Event]:
        """A background process's output from its start, then live until it ends; the last
        event is a ``DoneEvent`` with its exit code."""
        return self._events(
            "following the process",
            "GET",
            f"/v1/sandboxes/{self.id}/processes/{process_id}/output",
        )

    def signal(self, process_id: str, signal: str | int = "TERM") -> dict[str, Any]:
        return self._json(
            "signalling the process",
            "POST",
            f"/v1/sandboxes/{self.id}/processes/{process_id}/signal",
            json={"signal": signal},
        )

    def kill(self, process_id: str) -> dict[str, Any]:
        """Kills the process's whole tree; returns it once recorded as killed."""
        return self._json(
            "killing the process", "DELETE", f"/v1/sandboxes/{self.id}/processes/{process_id}"
        )

    def port_url(self, port: int, path: str = "/") -> str:
        """The URL at which the server serves what listens on ``port`` in the sandbox."""
        return f"{self._http.base_url}".rstrip("/") + f"/v1/sandboxes/{self.id}/ports/{port}/" + path.lstrip("/")

    # Files ---------------------------------------------------------------------------------

    def write_file(self, name: str, content: bytes | str) -> dict[str, Any]:
        """Creates ``name`` (nested paths make directories) with ``content``."""
        data = content.encode() if isinstance(content, str) else content
        return self._upload(f"uploading {name}", "files", name, data)

    def upload_file(self, path: str | Path, *, name: str | None = None) -> dict[str, Any]:
        path = Path(path)
        return self._upload(f"uploading {path}", "files", name or path.name, path.read_bytes())

    def upload_zip(self, path: str | Path) -> dict[str, Any]:
        """Uploads a zip archive, extracted into the workspace."""
        path = Path(path)
        return self._upload(f"uploading {path}", "upload", path.name, path.read_bytes())

    def upload_dir(self, path: str | Path, *, exclude: Iterable[str] = ()) -> dict[str, Any]:
        """Uploads a folder, zipped on the fly without what its ``.gitignore`` /
        ``.petriignore`` or ``exclude`` (gitignore patterns) name, nor ``.git``."""
        archive = _core.zip_folder(Path(path), exclude)
        return self._upload(f"uploading {path}", "upload", "folder.zip", archive)

    def list_files(self, path: str | None = None) -> list[dict[str, Any]]:
        route = f"/v1/sandboxes/{self.id}/files" + (f"/{path}" if path else "")
        return self._json("listing files", "GET", route)

    def read_file(self, path: str) -> bytes:
        return self._request(f"reading {path}", "GET", f"/v1/sandboxes/{self.id}/files/{path}").content

    def read_text(self, path: str) -> str:
        return self.read_file(path).decode()

    def download(self, path: str, destination: str | Path) -> Path:
        destination = Path(destination)
        destination.write_bytes(self.read_file(path))
        return destination

    def delete_file(self, path: str) -> None:
        self._request(f"deleting {path}", "DELETE", f"/v1/sandboxes/{self.id}/files/{path}")

    # History -------------------------------------------------------------------------------

    def runs(self) -> list[dict[str, Any]]:
        """This sandbox's runs, newest first."""
        return self._json("listing runs", "GET", f"/v1/sandboxes/{self.id}/runs")

    def run(self, run_id: str) -> dict[str, Any]:
        return self._json("reading the run", "GET", f"/v1/runs/{run_id}")

    def run_output(self, run_id: str) -> str:
        return self._request("reading the run's output", "GET", f"/v1/runs/{run_id}/output").text

    def sbom(self, run_id: str) -> dict[str, Any]:
        """The CycloneDX bill of materials of the dependencies ``run_id`` ran with."""
        return self._json("reading the SBOM", "GET", f"/v1/runs/{run_id}/sbom")

    def metrics(self) -> dict[str, Any]:
        return self._json("reading metrics", "GET", "/v1/metrics")

    # Plumbing ------------------------------------------------------------------------------

    def _request(self, what: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self._http.request(method, path, **kwargs)
        _core.raise_for(what, response)
        return response

    def _json(self, what: str, method: str, path: str, **kwargs: Any) -> Any:
        return self._request(what, method, path, **kwargs).json()

    def _upload(self, what: str, route: str, name: str, data: bytes) -> dict[str, Any]:
        return self._json(
            what, "POST", f"/v1/sandboxes/{self.id}/{route}", files={"file": (name, data)}
        )
