"""The server's own MCP endpoint (`/mcp`, streamable HTTP), driven by the official MCP client:
what `claude mcp add --transport http petri http://localhost:8000/mcp` connects to."""

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def test_the_server_speaks_mcp_over_http(server_url):
    async with streamable_http_client(f"{server_url}/mcp") as (read, write, _), ClientSession(read, write) as session:
        info = await session.initialize()
        assert info.serverInfo.name == "petri"
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools >= {
            "create_sandbox", "exec_code", "delete_sandbox", "write_file",
            "read_file", "list_files", "run_history", "install_status",
        }

        async def call(name, **arguments):
            result = await session.call_tool(name, arguments)
            return result.isError, result.content[0].text

        error, sandbox_id = await call("create_sandbox", language="python", agent="claude-code")
        assert not error and sandbox_id.startswith("sb_"), sandbox_id
        assert await call("write_file", sandbox_id=sandbox_id, path="app/main.py", content="print('via http')\nprint(2)\n") == (
            False,
            "wrote app/main.py (27 bytes)",
        )
        assert await call("exec_code", sandbox_id=sandbox_id, command="python app/main.py") == (False, "via http\n2\n")
        error, failed = await call("exec_code", sandbox_id=sandbox_id, command="echo bad >&2; exit 3")
        assert failed == "FAILED (exit_code=3): bad\nbad\n"
        assert await call("read_file", sandbox_id=sandbox_id, path="app/main.py") == (False, "print('via http')\nprint(2)\n")
        error, listing = await call("list_files", sandbox_id=sandbox_id)
        assert "app/main.py  27 bytes" in listing, listing
        error, history = await call("run_history", sandbox_id=sandbox_id)
        assert "exit=3" in history and "python app/main.py" in history
        error, status = await call("install_status", sandbox_id=sandbox_id)
        assert "no dependencies installed" in status
        # Errors come back as tool errors the agent can read.
        error, missing = await call("read_file", sandbox_id=sandbox_id, path="nope.txt")
        assert error and "nope.txt" in missing
        error, escape = await call("write_file", sandbox_id=sandbox_id, path="../x", content="x")
        assert error and "FAILED" in escape
        assert await call("delete_sandbox", sandbox_id=sandbox_id) == (False, "deleted")
        error, gone = await call("exec_code", sandbox_id=sandbox_id, command="true")
        assert error and "not found" in gone.lower()


async def test_agents_run_and_look_at_servers_over_mcp(server_url):
    import asyncio

    async with streamable_http_client(f"{server_url}/mcp") as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()

        async def call(name, **arguments):
            result = await session.call_tool(name, arguments)
            return result.isError, result.content[0].text

        _, sandbox_id = await call("create_sandbox", language="python", agent="claude-code")
        error, started = await call(
            "start_process", sandbox_id=sandbox_id,
            command="echo serving; exec python3 -m http.server 8080",
        )
        assert not error and started.startswith("started run_"), started
        process_id = started.split()[1]
        for _ in range(100):
            error, page = await call("fetch_port", sandbox_id=sandbox_id, port=8080, path="/")
            if not error:
                break
            await asyncio.sleep(0.2)
        assert not error and page.startswith("HTTP 200 OK\n") and "Directory listing" in page, page
        error, output = await call("process_output", sandbox_id=sandbox_id, process_id=process_id)
        assert output.startswith(f"{process_id}: running\nserving\n"), output
        error, stopped = await call("stop_process", sandbox_id=sandbox_id, process_id=process_id)
        assert (error, stopped) == (False, f"{process_id}: killed")
        error, output = await call("process_output", sandbox_id=sandbox_id, process_id=process_id)
        assert "killed (exit_code=137)" in output, output
        error, closed = await call("fetch_port", sandbox_id=sandbox_id, port=8080)
        assert error and "nothing listens on port 8080" in closed, closed
        await call("delete_sandbox", sandbox_id=sandbox_id)
