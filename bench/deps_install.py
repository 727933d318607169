#!/usr/bin/env python3
"""Dependency install timings against the real registries, each beside plain pip in the same run.

Usage: deps_install.py PETRI_BINARY [--packages requests pandas]
Prints a Markdown table. Standard library only.
"""

import argparse
import http.client
import json
import os
import subprocess
import tempfile
import time
import uuid

from state_dir import state_dir


class Client:
    def __init__(self, url):
        host, port = url[len("http://"):].split(":")
        self.host, self.port = host, int(port)

    def request(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=900)
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()

    def create(self, language="python"):
        status, body = self.request("POST", "/v1/sandboxes", json.dumps({"language": language}),
                                    {"content-type": "application/json"})
        assert status == 201, body
        return json.loads(body)["id"]

    def upload(self, sandbox, name, content):
        boundary = uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
        status, text = self.request("POST", f"/v1/sandboxes/{sandbox}/files", body,
                                    {"content-type": f"multipart/form-data; boundary={boundary}"})
        assert status == 201, text

    def exec(self, sandbox, command):
        start = time.perf_counter()
        status, body = self.request("POST", f"/v1/sandboxes/{sandbox}/exec",
                                    json.dumps({"command": command, "timeout": 900}),
                                    {"content-type": "application/json"})
        elapsed = (time.perf_counter() - start) * 1000
        assert status == 200, body
        done = json.loads(body.split(b"event: done\ndata: ", 1)[1])
        assert done["exit_code"] == 0, done
        return elapsed, done


def pip_install(package, cache):
    target = tempfile.mkdtemp()
    start = time.perf_counter()
    subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "-q", "--disable-pip-version-check", "--root-user-action=ignore",
                    "--cache-dir", cache, "--target", target, package], check=True)
    return (time.perf_counter() - start) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--packages", nargs="+", default=["requests", "pandas"])
    args = parser.parse_args()
    rows = []
    with state_dir() as root:
        server = subprocess.Popen([args.binary, "serve", "--bind", "127.0.0.1:0"],
                                  env={**os.environ, "PETRI_WORKSPACE_ROOT": root, "PETRI_LOG": "warn"},
                                  stdout=subprocess.PIPE, text=True)
        try:
            url = next(w for w in server.stdout.readline().split() if w.startswith("http://"))
            client = Client(url)
            plain = client.create()
            client.exec(plain, "true")
            base = min(client.exec(plain, "true")[0] for _ in range(10))
            for package in args.packages:
                pip_cache = tempfile.mkdtemp()
                pip_cold = pip_install(package, pip_cache)
                pip_warm = pip_install(package, pip_cache)
                timings = []
                for _ in range(2):
                    sandbox = client.create()
                    client.upload(sandbox, "requirements.txt", f"{package}\n".encode())
                    elapsed, done = client.exec(sandbox, "true")
                    timings.append((elapsed, done["install"]["duration_ms"]))
                unchanged = min(client.exec(sandbox, "true")[0] for _ in range(10))
                rows.append((package, pip_cold, pip_warm, timings, unchanged - base))
        finally:
            server.terminate()
            server.wait(timeout=30)

    print("| Package | plain pip, cold cache | plain pip, warm cache | Petri exec, new sandbox (install) | Petri exec, second sandbox (install) | added latency, unchanged manifest |")
    print("|---|---:|---:|---:|---:|---:|")
    for package, pip_cold, pip_warm, timings, added in rows:
        (first, first_install), (second, second_install) = timings
        print(f"| {package} | {pip_cold / 1000:.2f} s | {pip_warm / 1000:.2f} s | "
              f"{first / 1000:.2f} s ({first_install / 1000:.2f} s, {pip_cold / first:.1f}x faster) | "
              f"{second / 1000:.2f} s ({second_install / 1000:.2f} s) | {added:+.1f} ms |")


if __name__ == "__main__":
    main()
