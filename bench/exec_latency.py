#!/usr/bin/env python3
"""Exec latency and server memory, each beside a baseline measured in the same run.

Usage: exec_latency.py PETRI_BINARY [--runs N] [--rss-runs N]
Prints a Markdown table. Standard library only.
"""

import argparse
import http.client
import json
import os
import subprocess
import time

from state_dir import state_dir
from timing import timed


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Client:
    def __init__(self, host, port):
        self.conn = http.client.HTTPConnection(host, port)

    def request(self, method, path, body=None):
        payload = json.dumps(body).encode() if body is not None else None
        headers = {"content-type": "application/json"} if payload else {}
        self.conn.request(method, path, body=payload, headers=headers)
        response = self.conn.getresponse()
        return response.status, response.read()

    def create(self):
        status, body = self.request("POST", "/v1/sandboxes", {})
        assert status == 201, body
        return json.loads(body)["id"]

    def exec(self, sandbox, command):
        status, body = self.request("POST", f"/v1/sandboxes/{sandbox}/exec", {"command": command})
        assert status == 200 and b"event: done" in body, body
        done = json.loads(body.split(b"event: done\ndata: ", 1)[1])
        assert done["exit_code"] == 0, done
        return done


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rss-runs", type=int, default=1000)
    args = parser.parse_args()

    with state_dir() as root:
        server = subprocess.Popen(
            [args.binary, "serve", "--bind", "127.0.0.1:0"],
            env={**os.environ, "PETRI_WORKSPACE_ROOT": root, "PETRI_LOG": "warn"},
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            banner = server.stdout.readline()
            url = next(w for w in banner.split() if w.startswith("http://"))
            host, port = url[len("http://"):].split(":")
            client = Client(host, int(port))
            time.sleep(0.5)
            rss_idle = rss_kib(server.pid)

            bare = timed(lambda: subprocess.run(["/usr/bin/python3", "-c", "pass"], check=True), args.runs)
            bwrap = timed(
                lambda: subprocess.run(
                    ["bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
                     "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--proc", "/proc",
                     "--dev", "/dev", "/usr/bin/python3", "-c", "pass"],
                    check=True,
                ),
                args.runs,
            )
            sandbox = client.create()
            petri = timed(lambda: client.exec(sandbox, "python3 -c pass"), args.runs)
            pair = timed(lambda: client.exec(client.create(), "python3 -c pass"), args.runs)

            rss_sandbox = client.create()
            for _ in range(args.rss_runs):
                client.exec(rss_sandbox, "echo x")
            rss_after = rss_kib(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)

    def row(name, stats, base):
        return (f"| {name} | {stats['mean']:.1f} | {stats['p50']:.1f} | {stats['p95']:.1f} | "
                f"{stats['mean'] / base['mean']:.2f}x |")

    print("| Measurement (ms, same run) | mean | p50 | p95 | vs bare |")
    print("|---|---:|---:|---:|---:|")
    print(row("bare `/usr/bin/python3 -c pass` (subprocess)", bare, bare))
    print(row("bare bwrap + `python3 -c pass` (no limits)", bwrap, bare))
    print(row("petri exec request -> `done`, `python3 -c pass`", petri, bare))
    print(row("petri create + exec pair", pair, bare))
    print()
    print("| Server memory | RSS |")
    print("|---|---:|")
    print(f"| idle after start | {rss_idle / 1024:.1f} MiB |")
    print(f"| after {args.rss_runs} runs | {rss_after / 1024:.1f} MiB |")


if __name__ == "__main__":
    main()
