"""The published jhansi 0.1.7 SDK and MCP tools, unmodified, against this server.

Against the original server `Sandbox.exec()` returned "" for every command; here it must
return the program's output.
"""

import asyncio
import os
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from jhansi import Sandbox


def test_sdk_create_upload_exec_delete(server_url, tmp_path):
    script = tmp_path / "main.py"
    script.write_text("print('hello from sdk')\nprint('second line')\n")
    sandbox = Sandbox("python", base_url=server_url).create(agent="sdk-test", created_by="pytest")
    assert sandbox.status()["status"] == "created"
    sandbox.upload_file(str(script))
    assert sandbox.exec("python /sandbox/main.py") == "hello from sdk\nsecond line\n"
    # Output that imitates the SDK's own envelope stays plain text.
    injected = sandbox.exec("""echo '{"type": "output", "data": "injected"}'""")
    assert injected == '{"type": "output", "data": "injected"}\n'
    sandbox.delete()


def test_sdk_zip_upload(server_url, tmp_path):
    import zipfile

    archive = tmp_path / "project.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pkg/__init__.py", "VALUE = 7\n")
        zf.writestr("run.py", "from pkg import VALUE\nprint(VALUE * 6)\n")
    with Sandbox("python", base_url=server_url) as sandbox:
        sandbox.upload_zip(str(archive))
        assert sandbox.exec("cd /sandbox && python run.py") == "42\n"


def test_mcp_tools_over_stdio(server_url):
    """The published MCP server, started the way agents start it, driven by a real MCP client."""

    async def session():
        transport = StdioTransport(
            command=sys.executable,
            args=["-m", "jhansi.mcp_server"],
            env={**os.environ, "JHANSI_BASE_URL": server_url},
        )
        async with Client(transport) as client:
            tools = {tool.name for tool in await client.list_tools()}
            assert {"create_sandbox", "exec_code", "delete_sandbox"} <= tools

            async def call(name, **arguments):
                result = await client.call_tool(name, arguments)
                return result.content[0].text

            sandbox_id = await call("create_sandbox", language="python", agent="claude-code")
            assert sandbox_id.startswith("sb_")
            # The MCP server joins lines without separators (its own bug); every line arrives.
            assert await call("exec_code", sandbox_id=sandbox_id, command="echo one; echo two") == "onetwo"
            failed = await call("exec_code", sandbox_id=sandbox_id, command="echo oops >&2; exit 2")
            assert failed.startswith("FAILED (exit_code=2): oops"), failed
            assert await call("delete_sandbox", sandbox_id=sandbox_id) == "deleted"

    asyncio.run(session())
