"""Exceptions: every failed request raises; none is silently ignored."""

from __future__ import annotations


class PetriError(Exception):
    """Base class of everything this SDK raises."""


class NotCreatedError(PetriError):
    """The sandbox has not been created (use it as a context manager, or call ``create()``)."""


class HTTPError(PetriError):
    """The server answered with an error status.

    ``status`` is the HTTP status, ``code`` the server's stable error code (for example
    ``sandbox_not_found``) and ``detail`` its message.
    """

    def __init__(self, what: str, status: int, code: str | None, detail: str) -> None:
        self.what = what
        self.status = status
        self.code = code
        self.detail = detail
        super().__init__(f"{what}: HTTP {status} {code or ''}: {detail}".replace("  ", " "))


class NotFoundError(HTTPError):
    """The sandbox, run or file does not exist (or the sandbox was deleted)."""


class StreamError(PetriError):
    """The exec stream broke before its ``done`` event."""
