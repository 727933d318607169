#!/usr/bin/env python3
"""Background processes and port preview, each beside a baseline measured in the same run.

- starting a background process (request -> 202) beside a foreground exec of `true`;
- a GET through the port preview beside the same GET straight to the same app run on the host
  (a new connection per request, as a browser's first request; and the preview's own overhead
  over keep-alive on the client side);
- reading 64 MiB streamed through the preview beside reading it from the host app.

Usage: port_preview.py PETRI_BINARY [--runs N]
Prints a Markdown table. Standard library only.
"""

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time

from state_dir import state_dir
from timing import timed

APP = r'''
import http.server, sys
BLOCK = b"x" * (1 << 20)
class App(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        if self.path == "/big":
            self.send_response(200)
            self.send_header("Content-Length", str(64 * len(BLOCK)))
            self.end_headers()
            for _ in range(64):
                self.wfile.write(BLOCK)
            return
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), App).serve_forever()
'''


def get(host, port, path):
    conn = http.client.HTTPConnection(host, port)
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    assert response.status == 200, (response.status, body[:200])
    conn.close()
    return body


def api(host, port, method, path, body=None):
    conn = http.client.HTTPConnection(host, port)
    payload = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=payload, headers={"content-type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(host, port, path, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            get(host, port, path)
            return
        except (OSError, AssertionError):
            time.sleep(0.1)
    raise SystemExit(f"nothing answered {path} on {host}:{port}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()

    with state_dir() as root:
        app_file = os.path.join(root, "app.py")
        with open(app_file, "w") as f:
            f.write(APP)
        host_port = free_port()
        host_app = subprocess.Popen([sys.executable, app_file, str(host_port)])
        server = subprocess.Popen(
            [args.binary, "serve", "--bind", "127.0.0.1:0"],
            env={**os.environ, "PETRI_WORKSPACE_ROOT": root + "/state", "PETRI_LOG": "warn",
                 "PETRI_BACKGROUND_MAX": "64"},
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            banner = server.stdout.readline()
            url = next(w for w in banner.split() if w.startswith("http://"))
            host, port = url[len("http://"):].split(":")
            port = int(port)
            status, body = api(host, port, "POST", "/v1/sandboxes", {})
            assert status == 201, body
            sandbox = json.loads(body)["id"]
            conn = http.client.HTTPConnection(host, port)
            conn.request("POST", f"/v1/sandboxes/{sandbox}/files",
                         body=b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"app.py\"\r\n\r\n"
                         + APP.encode() + b"\r\n--b--\r\n",
                         headers={"content-type": "multipart/form-data; boundary=b"})
            assert conn.getresponse().status in (200, 201)
            conn.close()

            def foreground():
                status, body = api(host, port, "POST", f"/v1/sandboxes/{sandbox}/exec",
                                   {"command": "true"})
                assert status == 200 and b"event: done" in body, body

            def background():
                status, body = api(host, port, "POST", f"/v1/sandboxes/{sandbox}/exec",
                                   {"command": "true", "background": True})
                assert status == 202, body

            fg = timed(foreground, 30)
            bg = timed(background, 30)
            status, body = api(host, port, "POST", f"/v1/sandboxes/{sandbox}/exec",
                               {"command": "python app.py 8080", "background": True})
            assert status == 202, body
            preview = f"/v1/sandboxes/{sandbox}/ports/8080"
            wait_for(host, port, preview + "/")
            wait_for("127.0.0.1", host_port, "/")

            direct_small = timed(lambda: get("127.0.0.1", host_port, "/"), args.runs)
            preview_small = timed(lambda: get(host, port, preview + "/"), args.runs)
            direct_big = timed(lambda: get("127.0.0.1", host_port, "/big"), 10, warmup=1)
            preview_big = timed(lambda: get(host, port, preview + "/big"), 10, warmup=1)
        finally:
            server.terminate()
            server.wait(timeout=30)
            host_app.terminate()
            host_app.wait(timeout=10)

    def row(name, stats, base):
        return (f"| {name} | {stats['mean']:.2f} | {stats['p50']:.2f} | {stats['p95']:.2f} | "
                f"{stats['mean'] / base['mean']:.2f}x |")

    print("| Measurement (ms, same run) | mean | p50 | p95 | vs baseline |")
    print("|---|---:|---:|---:|---:|")
    print(row("foreground exec `true`, request -> `done` (baseline)", fg, fg))
    print(row("background exec, request -> 202 with its id", bg, fg))
    print(row("GET / straight to the app on the host (baseline)", direct_small, direct_small))
    print(row("GET / through the port preview", preview_small, direct_small))
    print(row("64 MiB straight from the app on the host (baseline)", direct_big, direct_big))
    print(row("64 MiB through the port preview", preview_big, direct_big))
    mib_s = lambda stats: 64 / (stats["mean"] / 1000)
    print()
    print(f"Throughput: {mib_s(direct_big):.0f} MiB/s direct, {mib_s(preview_big):.0f} MiB/s through the preview.")


if __name__ == "__main__":
    main()
