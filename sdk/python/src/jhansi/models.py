"""What the API returns, as typed objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one command (the stream's ``done`` event)."""

    output: str
    exit_code: int
    error: str | None
    duration_ms: int
    run_id: str | None
    status: str = "succeeded"
    timed_out: bool = False
    truncated: bool = False
    oom_killed: bool = False
    install: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """True when the command exited with 0."""
        return self.exit_code == 0

    @classmethod
    def from_done(cls, done: dict[str, Any]) -> "ExecResult":
        return cls(
            output=done.get("output") or "",
            exit_code=int(done.get("exit_code", -1)),
            error=done.get("error"),
            duration_ms=int(done.get("duration_ms") or 0),
            run_id=done.get("run_id"),
            status=done.get("status", "succeeded" if done.get("exit_code") == 0 else "failed"),
            timed_out=bool(done.get("timed_out", False)),
            truncated=bool(done.get("truncated", False)),
            oom_killed=bool(done.get("oom_killed", False)),
            install=done.get("install"),
            raw=done,
        )


@dataclass(frozen=True)
class OutputEvent:
    """One line the program printed (without its newline)."""

    line: str


@dataclass(frozen=True)
class InstallEvent:
    """One line of the dependency installer."""

    line: str


@dataclass(frozen=True)
class DoneEvent:
    """The end of the stream."""

    result: ExecResult


Event = Union[OutputEvent, InstallEvent, DoneEvent]
