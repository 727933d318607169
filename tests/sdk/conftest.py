"""Starts a real `petri serve` for the compatibility tests against the published jhansi SDK."""

import os
import subprocess
import tempfile

import pytest


@pytest.fixture(scope="session")
def server_url():
    binary = os.environ.get("PETRI_BIN", "target/debug/petri")
    with tempfile.TemporaryDirectory() as root:
        proc = subprocess.Popen(
            [binary, "serve", "--bind", "127.0.0.1:0"],
            env={**os.environ, "PETRI_WORKSPACE_ROOT": root, "PETRI_LOG": "warn"},
            stdout=subprocess.PIPE,
            text=True,
        )
        banner = proc.stdout.readline()
        url = next(word for word in banner.split() if word.startswith("http://"))
        os.environ["JHANSI_BASE_URL"] = url
        yield url
        proc.terminate()
        proc.wait(timeout=20)
