"""MCP server for Petri, over stdio: ``python -m jhansi.mcp_server``.

Configure the server it talks to with ``JHANSI_BASE_URL`` (default ``http://localhost:8000``).
Claude Code: ``claude mcp add petri -e JHANSI_BASE_URL=http://localhost:8000 -- python -m
jhansi.mcp_server``. Besides the three tools of the original (``create_sandbox``,
``exec_code``, ``delete_sandbox``) it offers what an agent needs for a real loop: writing and
uploading files, reading and listing them, run history and install status, and background
processes (start, output, stop) with a look at what they serve (``fetch_port``).
"""

from __future__ import annotations

from pathlib import Path

from mcp.server.fastmcp import FastMCP

from .errors import NotFoundError
from .sandbox import Sandbox

#: Most bytes of a file returned to the agent (its context is precious).
READ_LIMIT = 256 * 1024

mcp = FastMCP("petri")


def _sandbox(sandbox_id: str) -> Sandbox:
    return Sandbox(sandbox_id=sandbox_id)


@mcp.tool()
def create_sandbox(language: str = "python", agent: str = "unknown") -> str:
    """Create a new isolated sandbox (python, node, go or java). Returns the sandbox ID. Pass
    the agent name to identify the calling agent, e.g. 'claude-code', 'cursor', 'codex'."""
    sandbox = Sandbox(language, agent=agent, created_by=agent)
    try:
        return sandbox.create().id
    finally:
        sandbox.close()


@mcp.tool()
def exec_code(sandbox_id: str, command: str, timeout: int | None = None) -> str:
    """Run a shell command in the sandbox and return its output (newlines kept). Dependencies
    named in requirements.txt / package.json / go.mod / pom.xml install themselves first. A
    failed command starts with 'FAILED (exit_code=N): <reason>'."""
    sandbox = _sandbox(sandbox_id)
    try:
        result = sandbox.exec(command, timeout=timeout)
    finally:
        sandbox.close()
    if result.ok:
        return result.output
    reason = result.error or f"exit code {result.exit_code}"
    return f"FAILED (exit_code={result.exit_code}): {reason}\n{result.output}"


@mcp.tool()
def delete_sandbox(sandbox_id: str) -> str:
    """Delete a sandbox and free its resources (its run history stays)."""
    sandbox = _sandbox(sandbox_id)
    try:
        sandbox.delete()
    finally:
        sandbox.close()
    return "deleted"


@mcp.tool()
def write_file(sandbox_id: str, path: str, content: str) -> str:
    """Create or replace a file in the sandbox (nested paths create directories)."""
    sandbox = _sandbox(sandbox_id)
    try:
        answer = sandbox.write_file(path, content)
    finally:
        sandbox.close()
    return f"wrote {path} ({answer['size']} bytes)"


@mcp.tool()
def upload_directory(sandbox_id: str, local_path: str) -> str:
    """Upload a folder from this machine into the sandbox, without what its .gitignore or
    .petriignore excludes (and never .git)."""
    folder = Path(local_path).expanduser()
    if not folder.is_dir():
        return f"FAILED: {local_path} is not a directory on this machine"
    sandbox = _sandbox(sandbox_id)
    try:
        answer = sandbox.upload_dir(folder)
    finally:
        sandbox.close()
    return f"uploaded {answer.get('files', 0)} files from {folder}"


@mcp.tool()
def read_file(sandbox_id: str, path: str) -> str:
    """Read a text file from the sandbox (at most 256 KiB are returned)."""
    sandbox = _sandbox(sandbox_id)
    try:
        data = sandbox.read_file(path)
    finally:
        sandbox.close()
    text = data[:READ_LIMIT].decode(errors="replace")
    if len(data) > READ_LIMIT:
        text += f"\n[... {len(data) - READ_LIMIT} more bytes not shown]"
    return text


@mcp.tool()
def list_files(sandbox_id: str, path: str = "") -> str:
    """List the files of the sandbox (or of one directory of it), one per line with its size."""
    sandbox = _sandbox(sandbox_id)
    try:
        entries = sandbox.list_files(path or None)
    finally:
        sandbox.close()
    lines = [
        f"{entry['path']}/" if entry.get("type") == "dir" else f"{entry['path']}  {entry.get('size', 0)} bytes"
        for entry in entries
    ]
    return "\n".join(lines) or "(empty)"


@mcp.tool()
def run_history(sandbox_id: str, limit: int = 20) -> str:
    """The sandbox's latest runs: status, exit code, duration and command."""
    sandbox = _sandbox(sandbox_id)
    try:
        runs = sandbox.runs()[: max(1, limit)]
    finally:
        sandbox.close()
    lines = [
        f"{run['id']}  {run['status']}  exit={run['exit_code']}  {run['duration_ms']} ms  {run['command']}"
        for run in runs
    ]
    return "\n".join(lines) or "no runs yet"


@mcp.tool()
def install_status(sandbox_id: str) -> str:
    """What the sandbox's latest run had installed: each dependency with its version."""
    sandbox = _sandbox(sandbox_id)
    try:
        runs = sandbox.runs()
        if not runs:
            return "no runs yet: dependencies install before the first command"
        try:
            bom = sandbox.sbom(runs[0]["id"])
        except NotFoundError:
            return "no dependencies installed (no manifest and no third-party imports found)"
    finally:
        sandbox.close()
    components = bom.get("components", [])
    lines = [f"{c['name']} {c['version']}" for c in components]
    return f"{len(lines)} installed:\n" + "\n".join(lines) if lines else "no dependencies installed"


@mcp.tool()
def start_process(sandbox_id: str, command: str, timeout: int | None = None) -> str:
    """Start a long-running command (a dev server, a worker) in the background and return its
    process id at once. Later commands reach it on 127.0.0.1; fetch_port shows what it serves.
    It stops when stopped or when the sandbox goes."""
    sandbox = _sandbox(sandbox_id)
    try:
        process = sandbox.start(command, timeout=timeout)
    finally:
        sandbox.close()
    return f"started {process['id']} (read it with process_output, stop it with stop_process)"


@mcp.tool()
def process_output(sandbox_id: str, process_id: str) -> str:
    """A background process's status and its output so far (the last 256 KiB)."""
    sandbox = _sandbox(sandbox_id)
    try:
        process = sandbox.process(process_id)
        output = sandbox.run_output(process_id)
    finally:
        sandbox.close()
    state = "running" if process["running"] else f"{process['status']} (exit_code={process['exit_code']})"
    return f"{process_id}: {state}\n{output[-READ_LIMIT:]}"


@mcp.tool()
def stop_process(sandbox_id: str, process_id: str, signal: str | None = None) -> str:
    """Stop a background process: kill its whole tree, or send `signal` (TERM for a graceful
    stop)."""
    sandbox = _sandbox(sandbox_id)
    try:
        process = sandbox.signal(process_id, signal) if signal else sandbox.kill(process_id)
    finally:
        sandbox.close()
    return f"{process_id}: " + ("signalled, still running" if process["running"] else process["status"])


@mcp.tool()
def fetch_port(sandbox_id: str, port: int, path: str = "/") -> str:
    """GET a path from an app listening on a port inside the sandbox; returns the status line
    and the body (at most 256 KiB)."""

    sandbox = _sandbox(sandbox_id)
    try:
        response = sandbox._http.get(sandbox.port_url(port, path))
    finally:
        sandbox.close()
    if response.status_code == 502 and response.headers.get("content-type", "").startswith("application/json"):
        return f"FAILED: {response.json().get('detail')}"
    body = response.content[:READ_LIMIT].decode(errors="replace")
    return f"HTTP {response.status_code} {response.reason_phrase}\n{body}"


def main() -> None:
    mcp.run()


if __name__ == "__main__":
    main()
