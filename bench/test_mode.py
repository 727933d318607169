#!/usr/bin/env python3
"""Test mode on the four examples: request to `done` through Petri (first run, which
installs the dependencies, and a second one), beside the same steps by hand on the host
(dependencies already installed there: start the server, wait for its port, run the tests,
stop it).

Usage: test_mode.py PETRI_BINARY
Prints a Markdown table. Standard library only.
"""

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

from state_dir import state_dir

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = [
    # name, language, server command, port, host setup, host runner
    ("python-flask", "python", "python3 app.py", 5000,
     "python3 -m pip install -q --target .deps -r requirements.txt", "python3 -m pytest -q"),
    ("node-express", "node", "node server.js", 3000, "npm install -q --no-audit --no-fund", "npm test"),
    ("go-http", "go", "go run .", 8080, "go build ./...", "go test ./..."),
    ("java-httpserver", "java", "java -cp target/classes example.Server", 8080,
     "mvn -B -q test '-Dtest=*#none' -Dsurefire.failIfNoSpecifiedTests=false", "mvn -B -q -o test"),
]


def request(url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=900) as response:
        return response.read()


def upload_zip(url, folder):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in folder.rglob("*"):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    boundary = "petribench"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p.zip\"\r\n"
            "Content-Type: application/zip\r\n\r\n").encode() + buffer.getvalue() + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(url, data=body, headers={"content-type": f"multipart/form-data; boundary={boundary}"})
    urllib.request.urlopen(req, timeout=60).read()


def petri_run(base, sandbox, command):
    start = time.perf_counter()
    body = request(f"{base}/v1/sandboxes/{sandbox}/exec",
                   {"command": command, "test": True, "ready_path": "/health", "timeout": 900})
    elapsed = time.perf_counter() - start
    done = json.loads(body.split(b"event: done\ndata: ", 1)[1])
    assert done["exit_code"] == 0, done
    return elapsed, done


def by_hand(folder, command, port, setup, runner):
    env = {**os.environ, "PYTHONPATH": str(folder / ".deps")}
    subprocess.run(setup, shell=True, cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL)
    start = time.perf_counter()
    server = subprocess.Popen(command, shell=True, cwd=folder, env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        subprocess.run(runner, shell=True, cwd=folder, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.killpg(server.pid, 15)
        server.wait()
    return time.perf_counter() - start


def main():
    binary = sys.argv[1]
    rows = []
    with state_dir() as root:
        server = subprocess.Popen([binary, "serve", "--bind", "127.0.0.1:0"],
                                  env={**os.environ, "PETRI_WORKSPACE_ROOT": root, "PETRI_LOG": "warn"},
                                  stdout=subprocess.PIPE, text=True)
        try:
            base = next(w for w in server.stdout.readline().split() if w.startswith("http://"))
            for name, language, command, port, setup, runner in EXAMPLES:
                created = json.loads(request(f"{base}/v1/sandboxes",
                                             {"language": language, "memory_mb": 1024, "pids": 512}))
                upload_zip(f"{base}/v1/sandboxes/{created['id']}/upload", ROOT / "examples" / name)
                first, done = petri_run(base, created["id"], command)
                second, done = petri_run(base, created["id"], command)
                with tempfile.TemporaryDirectory() as scratch:
                    folder = Path(scratch) / name
                    shutil.copytree(ROOT / "examples" / name, folder)
                    host = by_hand(folder, command, port, setup, runner)
                rows.append((name, done["test"], first, second, host))
        finally:
            server.terminate()
            server.wait(timeout=30)
    print("| Example | tests | Petri, first run (installs) | Petri, next run | by hand on the host | next run vs host |")
    print("|---|---|---:|---:|---:|---:|")
    for name, test, first, second, host in rows:
        print(f"| {name} | {test['passed']} passed ({test['runner']}) | {first:.2f} s | {second:.2f} s | "
              f"{host:.2f} s | {second / host:.2f}x |")


if __name__ == "__main__":
    main()
