"""A state directory for a benchmark server, set up like a real one and cleaned up after."""

import contextlib
import os
import subprocess
import tempfile


@contextlib.contextmanager
def state_dir():
    """Yields a fresh state root. Other users may traverse it (as a real state directory's
    parents allow), so a root server gives each sandbox its own uid: the full isolation is
    what is measured. Sandboxes' disk filesystems outlive the server by design; they are
    unmounted before the directory goes."""
    with tempfile.TemporaryDirectory() as root:
        os.chmod(root, 0o711)
        try:
            yield root
        finally:
            with open("/proc/self/mountinfo") as table:
                points = [line.split()[4] for line in table]
            for point in points:
                if point.startswith(root + "/"):
                    subprocess.run(["umount", "-l", point], check=False)
