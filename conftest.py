"""A real `petri serve` for the Python tests (the published jhansi client in tests/sdk, our SDK
in sdk/python/tests), run against the full isolation a root server gives."""

import os
import subprocess
import tempfile

import pytest


@pytest.fixture(scope="session")
def server_url():
    binary = os.environ.get("PETRI_BIN", "target/debug/petri")
    with tempfile.TemporaryDirectory() as root:
        # Traversable by other users, like a real state directory: as root each sandbox then
        # runs as its own uid.
        os.chmod(root, 0o711)
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
        # Sandboxes' disk filesystems outlive the server by design; take them down.
        with open("/proc/self/mountinfo") as table:
            points = [line.split()[4] for line in table]
        for point in points:
            if point.startswith(root + "/"):
                subprocess.run(["umount", "-l", point], check=False)
