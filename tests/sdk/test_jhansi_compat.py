"""The published jhansi 0.1.7 SDK and MCP tools, unmodified, against this server.

Against the original server `Sandbox.exec()` returned "" for every command; here it must
return the program's output.
"""

import importlib

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


def test_mcp_tools(server_url):
    mcp = importlib.reload(importlib.import_module("jhansi.mcp_server"))
    sandbox_id = mcp.create_sandbox.fn(language="python", agent="claude-code")
    assert sandbox_id.startswith("sb_")
    # The MCP client joins lines without separators (its own bug); it still sees every line.
    assert mcp.exec_code.fn(sandbox_id=sandbox_id, command="echo one; echo two") == "onetwo"
    failed = mcp.exec_code.fn(sandbox_id=sandbox_id, command="echo oops >&2; exit 2")
    assert failed.startswith("FAILED (exit_code=2): oops")
    assert mcp.delete_sandbox.fn(sandbox_id=sandbox_id) == "deleted"
