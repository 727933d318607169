"""The asyncio twin against a live server."""

import pytest

from jhansi import AsyncSandbox, DoneEvent, NotFoundError, OutputEvent


async def test_async_sandbox_runs_streams_and_files(server_url, tmp_path):
    async with AsyncSandbox("python", agent="async-test", base_url=server_url) as sandbox:
        await sandbox.write_file("main.py", "print('async')\n")
        result = await sandbox.exec("python main.py")
        assert (result.output, result.ok) == ("async\n", True)
        events = [event async for event in sandbox.stream("echo x; exit 2")]
        assert events[0] == OutputEvent("x")
        assert isinstance(events[-1], DoneEvent) and events[-1].result.exit_code == 2
        lines = []
        await sandbox.exec("echo 1; echo 2", on_output=lines.append)
        assert lines == ["1", "2"]
        assert await sandbox.read_text("main.py") == "print('async')\n"
        assert [run["command"] for run in await sandbox.runs()][-1] == "python main.py"
        with pytest.raises(NotFoundError):
            await sandbox.read_file("missing")
        sandbox_id = sandbox.id
    attached = AsyncSandbox(sandbox_id=sandbox_id, base_url=server_url)
    with pytest.raises(NotFoundError):
        await attached.status()
    await attached.close()
