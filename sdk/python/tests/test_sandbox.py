"""The synchronous SDK against a live server."""

import zipfile

import pytest

from jhansi import (
    DoneEvent,
    HTTPError,
    InstallEvent,
    NotCreatedError,
    NotFoundError,
    OutputEvent,
    Sandbox,
)


def test_exec_results_streaming_and_callbacks(server_url):
    with Sandbox("python", agent="sdk-test", created_by="pytest", base_url=server_url) as sandbox:
        assert sandbox.status()["agent"] == "sdk-test"
        ok = sandbox.exec("echo one; echo two")
        assert (ok.output, ok.exit_code, ok.error, ok.ok) == ("one\ntwo\n", 0, None, True)
        assert ok.run_id.startswith("run_") and ok.duration_ms >= 0

        failed = sandbox.exec("echo out; echo boom >&2; exit 4")
        assert (failed.exit_code, failed.ok, failed.status) == (4, False, "failed")
        assert failed.error == "boom"

        seen = []
        sandbox.exec("for i in 1 2 3; do echo line $i; done", on_output=seen.append)
        assert seen == ["line 1", "line 2", "line 3"]

        events = list(sandbox.stream("echo a; echo b"))
        assert events[:2] == [OutputEvent("a"), OutputEvent("b")]
        assert isinstance(events[-1], DoneEvent) and events[-1].result.output == "a\nb\n"

        timed_out = sandbox.exec("sleep 10", timeout=1)
        assert timed_out.timed_out and timed_out.exit_code == 124


def test_files_folders_runs_and_sbom(server_url, tmp_path):
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("VALUE = 6\n")
    (project / "main.py").write_text("from pkg import VALUE\nimport six\nprint(VALUE * 7, six.__name__)\n")
    (project / "requirements.txt").write_text("six==1.16.0\n")
    (project / ".gitignore").write_text("*.log\nbuild/\n")
    (project / "debug.log").write_text("noise")
    (project / "build").mkdir()
    (project / "build" / "out.bin").write_bytes(b"\0")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("x")

    with Sandbox("python", base_url=server_url) as sandbox:
        assert sandbox.upload_dir(project)["files"] == 4
        names = sorted(entry["path"] for entry in sandbox.list_files() if entry["type"] == "file")
        assert names == [".gitignore", "main.py", "pkg/__init__.py", "requirements.txt"]

        installs = []
        result = sandbox.exec("python main.py", on_install=installs.append)
        assert result.output == "42 six\n", result
        assert result.install["packages"] == ["six"] and installs
        bom = sandbox.sbom(result.run_id)
        assert [c["name"] for c in bom["components"]] == ["six"]

        sandbox.write_file("notes/todo.txt", "write tests\n")
        assert sandbox.read_text("notes/todo.txt") == "write tests\n"
        single = tmp_path / "data.csv"
        single.write_text("a,b\n1,2\n")
        sandbox.upload_file(single, name="in/data.csv")
        assert sandbox.download("in/data.csv", tmp_path / "back.csv").read_text() == "a,b\n1,2\n"
        archive = tmp_path / "extra.zip"
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("extra/x.txt", "x")
        assert sandbox.upload_zip(archive)["files"] == 1
        sandbox.delete_file("extra")
        with pytest.raises(NotFoundError):
            sandbox.read_file("extra/x.txt")

        runs = sandbox.runs()
        assert runs[0]["id"] == result.run_id
        assert sandbox.run(result.run_id)["status"] == "succeeded"
        assert sandbox.run_output(result.run_id) == "42 six\n"
        assert sandbox.metrics()["runs_total"] >= 1


def test_errors_are_raised_never_swallowed(server_url):
    with pytest.raises(NotCreatedError):
        Sandbox(base_url=server_url).exec("true")
    with pytest.raises(HTTPError) as invalid:
        Sandbox("cobol", base_url=server_url).create()
    assert invalid.value.status == 422 and invalid.value.code == "unsupported_language"
    sandbox = Sandbox(base_url=server_url).create()
    with pytest.raises(NotFoundError) as missing:
        sandbox.read_file("nope.txt")
    assert missing.value.code == "path_not_found"
    with pytest.raises(HTTPError) as escape:
        sandbox.write_file("../escape.txt", "x")
    assert escape.value.status == 400
    sandbox.delete()
    with pytest.raises(NotCreatedError):
        sandbox.status()
    sandbox.close()
    with pytest.raises(NotFoundError):
        Sandbox.attach("sb_00000000000000000000000000000000", base_url=server_url)


def test_background_processes_and_port_preview(server_url):
    import time

    import httpx

    with Sandbox("python", base_url=server_url) as sandbox:
        process = sandbox.start("echo up; exec python3 -m http.server 8080")
        assert process["running"] and process["id"].startswith("run_")
        assert [p["id"] for p in sandbox.processes()] == [process["id"]]

        url = sandbox.port_url(8080, "/")
        deadline = time.time() + 20
        while True:
            try:
                if httpx.get(url).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.time() < deadline, "the server never answered through the preview"
            time.sleep(0.2)

        assert sandbox.signal(process["id"], "TERM")["id"] == process["id"]
        events = list(sandbox.follow(process["id"]))
        assert events[0] == OutputEvent("up")
        assert isinstance(events[-1], DoneEvent) and events[-1].result.exit_code != 0
        assert not sandbox.process(process["id"])["running"]
        with pytest.raises(HTTPError) as ended:
            sandbox.signal(process["id"], "TERM")
        assert (ended.value.status, ended.value.code) == (409, "process_ended")

        sleeper = sandbox.start("sleep 600")
        assert sandbox.kill(sleeper["id"])["status"] == "killed"
