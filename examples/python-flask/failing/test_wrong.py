"""The failing variant: run with test_command "python3 -m pytest -v failing"."""

import json
from urllib.request import urlopen


def test_add_is_wrong_on_purpose():
    with urlopen("http://127.0.0.1:5000/add/2/2", timeout=5) as response:
        assert json.load(response) == {"sum": 5}


def test_health_still_passes():
    with urlopen("http://127.0.0.1:5000/health", timeout=5) as response:
        assert json.load(response)["status"] == "ok"
