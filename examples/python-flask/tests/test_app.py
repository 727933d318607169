"""Runs against the server Petri started (it listens on 127.0.0.1:5000 in the same sandbox)."""

import json
from urllib.request import urlopen

BASE = "http://127.0.0.1:5000"


def get(path):
    with urlopen(BASE + path, timeout=5) as response:
        return json.load(response)


def test_health():
    assert get("/health") == {"status": "ok"}


def test_add():
    assert get("/add/2/3") == {"sum": 5}
