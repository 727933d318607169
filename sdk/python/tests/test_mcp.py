"""Our MCP server over stdio, driven by the official MCP client library."""

import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def _stdio_server(server_url):
    """`python -m jhansi.mcp_server`, talking to the server at `server_url`."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "jhansi.mcp_server"],
        env={**os.environ, "JHANSI_BASE_URL": server_url},
    )


async def test_mcp_tools_cover_an_agent_loop(server_url, tmp_path):
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "app.py").write_text("print('from the agent machine')\n")
    (folder / "secret.log").write_text("no")
    (folder / ".gitignore").write_text("*.log\n")
    params = _stdio_server(server_url)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools >= {
            "create_sandbox", "exec_code", "delete_sandbox", "write_file", "upload_directory",
            "read_file", "list_files", "run_history", "install_status",
        }

        async def call(name, **arguments):
            result = await session.call_tool(name, arguments)
            assert not result.isError, result
            return result.content[0].text

        sandbox_id = await call("create_sandbox", language="python", agent="claude-code")
        assert sandbox_id.startswith("sb_")
        assert await call("exec_code", sandbox_id=sandbox_id, command="echo one; echo two") == "one\ntwo\n"
        failed = await call("exec_code", sandbox_id=sandbox_id, command="echo oops >&2; exit 2")
        assert failed == "FAILED (exit_code=2): oops\noops\n"
        assert "wrote main.py" in await call("write_file", sandbox_id=sandbox_id, path="main.py", content="print(1 + 1)\n")
        assert await call("exec_code", sandbox_id=sandbox_id, command="python main.py") == "2\n"
        assert "uploaded 2 files" in await call("upload_directory", sandbox_id=sandbox_id, local_path=str(folder))
        assert await call("read_file", sandbox_id=sandbox_id, path="app.py") == "print('from the agent machine')\n"
        listing = await call("list_files", sandbox_id=sandbox_id)
        assert "app.py" in listing and "secret.log" not in listing
        history = await call("run_history", sandbox_id=sandbox_id)
        assert "python main.py" in history and "exit=2" in history
        assert "no dependencies installed" in await call("install_status", sandbox_id=sandbox_id)
        assert await call("delete_sandbox", sandbox_id=sandbox_id) == "deleted"


async def test_mcp_background_processes_over_stdio(server_url):
    import asyncio

    params = _stdio_server(server_url)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def call(name, **arguments):
            result = await session.call_tool(name, arguments)
            assert not result.isError, result
            return result.content[0].text

        sandbox_id = await call("create_sandbox", language="python", agent="claude-code")
        started = await call(
            "start_process", sandbox_id=sandbox_id,
            command="echo serving; exec python3 -m http.server 8080",
        )
        process_id = started.split()[1]
        for _ in range(100):
            page = await call("fetch_port", sandbox_id=sandbox_id, port=8080, path="/")
            if page.startswith("HTTP 200"):
                break
            await asyncio.sleep(0.2)
        assert page.startswith("HTTP 200 OK\n") and "Directory listing" in page, page
        output = await call("process_output", sandbox_id=sandbox_id, process_id=process_id)
        assert output.startswith(f"{process_id}: running\nserving\n"), output
        assert await call("stop_process", sandbox_id=sandbox_id, process_id=process_id) == f"{process_id}: killed"
        closed = await call("fetch_port", sandbox_id=sandbox_id, port=8080)
        assert closed.startswith("FAILED: nothing listens on port 8080"), closed
        await call("delete_sandbox", sandbox_id=sandbox_id)
