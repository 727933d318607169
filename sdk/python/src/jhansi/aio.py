"""The asynchronous client: the same API as ``Sandbox``, awaited."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterable

import httpx

from . import _core
from .errors import NotCreatedError, StreamError
from .models import DoneEvent, Event, ExecResult, InstallEvent, OutputEvent


class AsyncSandbox:
    """A sandbox on a Petri server, for asyncio code.

    >>> async with AsyncSandbox("python") as sandbox:
    ...     result = await sandbox.exec("echo hi")

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
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=timeout)

    # Lifecycle -----------------------------------------------------------------------------

    @classmethod
    async def attach(cls, sandbox_id: str, *, base_url: str | None = None) -> "AsyncSandbox":
        """A handle on an existing sandbox."""
        sandbox = cls(base_url=base_url, sandbox_id=sandbox_id)
        sandbox.language = (await sandbox.status())["language"]
        return sandbox

    @property
    def id(self) -> str:
        if self._id is None:
            raise NotCreatedError("the sandbox has not been created yet")
        return self._id

    async def create(self) -> "AsyncSandbox":
        body: dict[str, Any] = {"language": self.language}
        for key, value in [("agent", self.agent), ("created_by", self.created_by), *self._limits.items()]:
            if value is not None:
                body[key] = value
        self._id = (await self._json("creating a sandbox", "POST", "/v1/sandboxes", json=body))["id"]
        return self

    async def status(self) -> dict[str, Any]:
        return await self._json("reading the sandbox", "GET", f"/v1/sandboxes/{self.id}")

    async def delete(self) -> None:
        """Deletes the sandbox (its run history stays on the server)."""
        await self._request("deleting the sandbox", "DELETE", f"/v1/sandboxes/{self.id}")
        self._id = None

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncSandbox":
        if self._id is None:
            await self.create()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._id is not None:
                await self.delete()
        finally:
            await self.close()

    # Commands ------------------------------------------------------------------------------

    def stream(self, command: str, *, timeout: float | None = None) -> AsyncIterator[Event]:
        """Runs ``command`` (``sh -c``), yielding events as they arrive; the last is a
        ``DoneEvent``."""
        return self._events(
            "running the command",
            "POST",
            f"/v1/sandboxes/{self.id}/exec",
            json=_core.exec_body(command, timeout),
        )

    async def _events(
        self, what: str, method: str, path: str, **kwargs: Any
    ) -> AsyncIterator[Event]:
        parser = _core.SSEParser()
        async with self._http.stream(
            method, path, timeout=httpx.Timeout(30.0, read=None), **kwargs
        ) as response:
            if not response.is_success:
                await response.aread()
                _core.raise_for(what, response)
            async for line in response.aiter_lines():
                event = parser.feed(line)
                if event is not None:
                    yield event
                    if isinstance(event, DoneEvent):
                        return
        raise StreamError("the stream ended without a done event")

    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = None,
        on_output: Callable[[str], None] | None = None,
        on_install: Callable[[str], None] | None = None,
    ) -> ExecResult:
        """Runs ``command`` and returns its result; ``on_output`` / ``on_install`` get each
        line as it is printed."""
        async for event in self.stream(command, timeout=timeout):
            if isinstance(event, OutputEvent) and on_output:
                on_output(event.line)
            elif isinstance(event, InstallEvent) and on_install:
                on_install(event.line)
            elif isinstance(event, DoneEvent):
                return event.result
        raise StreamError("the stream ended without a done event")

    # Files ---------------------------------------------------------------------------------

    async def write_file(self, name: str, content: bytes | str) -> dict[str, Any]:
        """Creates ``name`` (nested paths make directories) with ``content``."""
        data = content.encode() if isinstance(content, str) else content
        return await self._upload(f"uploading {name}", "files", name, data)

    async def upload_file(self, path: str | Path, *, name: str | None = None) -> dict[str, Any]:
        path = Path(path)
        return await self._upload(f"uploading {path}", "files", name or path.name, path.read_bytes())

    async def upload_zip(self, path: str | Path) -> dict[str, Any]:
        """Uploads a zip archive, extracted into the workspace."""
        path = Path(path)
        return await self._upload(f"uploading {path}", "upload", path.name, path.read_bytes())

    async def upload_dir(self, path: str | Path, *, exclude: Iterable[str] = ()) -> dict[str, Any]:
        """Uploads a folder, zipped on the fly without what its ``.gitignore`` /
        ``.petriignore`` or ``exclude`` (gitignore patterns) name, nor ``.git``."""
        archive = _core.zip_folder(Path(path), exclude)
        return await self._upload(f"uploading {path}", "upload", "folder.zip", archive)

    async def list_files(self, path: str | None = None) -> list[dict[str, Any]]:
        route = f"/v1/sandboxes/{self.id}/files" + (f"/{path}" if path else "")
        return await self._json("listing files", "GET", route)

    async def read_file(self, path: str) -> bytes:
        return (await self._request(f"reading {path}", "GET", f"/v1/sandboxes/{self.id}/files/{path}")).content

    async def read_text(self, path: str) -> str:
        return (await self.read_file(path)).decode()

    async def download(self, path: str, destination: str | Path) -> Path:
        destination = Path(destination)
        destination.write_bytes(await self.read_file(path))
        return destination

    async def delete_file(self, path: str) -> None:
        await self._request(f"deleting {path}", "DELETE", f"/v1/sandboxes/{self.id}/files/{path}")

    # Background processes and port preview -------------------------------------------------

    async def start(self, command: str, *, timeout: float | None = None) -> dict[str, Any]:
        """Starts ``command`` detached and returns the process at once."""
        body = {**_core.exec_body(command, timeout), "background": True}
        return await self._json(
            "starting the process", "POST", f"/v1/sandboxes/{self.id}/exec", json=body
        )

    async def processes(self) -> list[dict[str, Any]]:
        return await self._json(
            "listing processes", "GET", f"/v1/sandboxes/{self.id}/processes"
        )

    async def process(self, process_id: str) -> dict[str, Any]:
        return await self._json(
            "reading the process", "GET", f"/v1/sandboxes/{self.id}/processes/{process_id}"
        )

    def follow(self, process_id: str) -> AsyncIterator[Event]:
        """A background process's output from its start, then live until it ends."""
        return self._events(
            "following the process",
            "GET",
            f"/v1/sandboxes/{self.id}/processes/{process_id}/output",
        )

    async def signal(self, process_id: str, signal: str | int = "TERM") -> dict[str, Any]:
        return await self._json(
            "signalling the process",
            "POST",
            f"/v1/sandboxes/{self.id}/processes/{process_id}/signal",
            json={"signal": signal},
        )

    async def kill(self, process_id: str) -> dict[str, Any]:
        return await self._json(
            "killing the process", "DELETE", f"/v1/sandboxes/{self.id}/processes/{process_id}"
        )

    # History -------------------------------------------------------------------------------

    async def runs(self) -> list[dict[str, Any]]:
        """This sandbox's runs, newest first."""
        return await self._json("listing runs", "GET", f"/v1/sandboxes/{self.id}/runs")

    async def run(self, run_id: str) -> dict[str, Any]:
        return await self._json("reading the run", "GET", f"/v1/runs/{run_id}")

    async def run_output(self, run_id: str) -> str:
        return (await self._request("reading the run's output", "GET", f"/v1/runs/{run_id}/output")).text

    async def sbom(self, run_id: str) -> dict[str, Any]:
        """The CycloneDX bill of materials of the dependencies ``run_id`` ran with."""
        return await self._json("reading the SBOM", "GET", f"/v1/runs/{run_id}/sbom")

    async def metrics(self) -> dict[str, Any]:
        return await self._json("reading metrics", "GET", "/v1/metrics")

    # Plumbing ------------------------------------------------------------------------------

    async def _request(self, what: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = await self._http.request(method, path, **kwargs)
        _core.raise_for(what, response)
        return response

    async def _json(self, what: str, method: str, path: str, **kwargs: Any) -> Any:
        return (await self._request(what, method, path, **kwargs)).json()

    async def _upload(self, what: str, route: str, name: str, data: bytes) -> dict[str, Any]:
        return await self._json(
            what, "POST", f"/v1/sandboxes/{self.id}/{route}", files={"file": (name, data)}
        )
