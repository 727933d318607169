"""Python SDK for Petri, the self-hosted sandbox for AI-generated code.

>>> from jhansi import Sandbox
>>> with Sandbox("python", agent="my-agent") as sandbox:
...     print(sandbox.exec("python -c 'print(6*7)'").output)
42
"""

from .aio import AsyncSandbox
from .errors import HTTPError, NotCreatedError, NotFoundError, PetriError, StreamError
from .models import DoneEvent, Event, ExecResult, InstallEvent, OutputEvent
from .sandbox import Sandbox

__all__ = [
    "AsyncSandbox",
    "DoneEvent",
    "Event",
    "ExecResult",
    "HTTPError",
    "InstallEvent",
    "NotCreatedError",
    "NotFoundError",
    "OutputEvent",
    "PetriError",
    "Sandbox",
    "StreamError",
]
