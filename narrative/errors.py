"""Typed errors a user can cause, each with its exit code.

The library raises these and never prints or exits; the CLI turns them into one
message on stderr and the exit code from :data:`EXIT_CODES`. Anything else that
escapes is a bug in narr and keeps its traceback.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Door = Literal["cli", "http", "mcp"]
"""Who reads an error's hint: a person at the command line, an HTTP client, an MCP client."""


@dataclass(frozen=True)
class Step:
    """What to do next, as data: an operation of the table and its arguments.

    The engine names operations, never a command of one door; each door words the step its
    own way (``narr failed retry 1`` on the command line, the ``retry`` tool with
    ``{"which": "1"}`` over MCP), so a client is only ever told of what it can call.
    """

    operation: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    cli: str | None = None
    """The command line's own shorter spelling of the step, where it has one (``narr event
    --retry`` for the newest failed event)."""

    def worded(self, door: Door) -> str:
        """The step as ``door`` names it: in the words :func:`set_wording` was given (each
        transport loads the table, whose :mod:`~narrative.operations.wording` they are); with
        none given, its own command line spelling or the operation and its arguments."""
        if door == "cli" and self.cli is not None:
            return self.cli
        if _wording is not None:
            return _wording(self, door)
        given = {k: v for k, v in self.arguments.items() if v is not None and v is not False}
        return f"the {self.operation} operation" + (f" with {given}" if given else "")


_wording: Callable[[Step, Door], str] | None = None


def set_wording(word: Callable[[Step, Door], str]) -> None:
    """How steps are worded: the operations table sets it when it loads (it knows each row's
    command, route and tool). This module stands below the table and never loads it: a
    transport that shows a hint has the table loaded (the command line loads it before it
    prints an error that has steps)."""
    global _wording
    _wording = word


class NarrError(Exception):
    """Base of every error a user can cause; ``exit_code`` comes from the table below.

    ``hint`` says what to do; where that is an operation, the hint holds ``{0}``, ``{1}``...
    for ``steps``, which each door words its own way (:meth:`hint_for`).
    """

    exit_code = 1
    http_status = 400
    """The HTTP status the API answers it with: 4xx when the caller can fix it, 5xx when the
    world or its machine failed (a request that cannot succeed as sent is never a 5xx)."""

    def __init__(self, message: str, *, hint: str | None = None,
                 details: list[str] | None = None, reason: str | None = None,
                 steps: Sequence[Step] = ()) -> None:
        super().__init__(message)
        self.message = message
        self._hint = hint
        self.steps = list(steps)
        self.details = details or []
        self.reason = reason
        """Which case of its class this is, for code that treats one case apart (one of the
        reasons below); never read from the message, whose words may change."""

    def __str__(self) -> str:
        return self.message

    @property
    def hint(self) -> str | None:
        """The hint as the command line words it."""
        return self.hint_for("cli")

    @hint.setter
    def hint(self, text: str | None) -> None:
        self._hint, self.steps = text, []

    @property
    def hint_template(self) -> str | None:
        """The hint with its steps as ``{0}``, ``{1}``... (:attr:`steps`), unworded."""
        return self._hint

    def hint_for(self, door: Door) -> str | None:
        """The hint, its steps worded for ``door``."""
        text = self._hint
        if text is None:
            return None
        for n, step in enumerate(self.steps):
            text = text.replace(f"{{{n}}}", step.worded(door))
        return text

    def add_hint(self, text: str, *steps: Step) -> None:
        """Add ``text`` (its steps ``{0}``... of its own) to the hint, after what it says."""
        for n in reversed(range(len(steps))):
            text = text.replace(f"{{{n}}}", f"{{{n + len(self.steps)}}}")
        self._hint = f"{self._hint}; {text}" if self._hint else text
        self.steps += steps

    def add_hint_of(self, other: NarrError) -> None:
        """Add ``other``'s hint, steps and all, to this one's."""
        if other._hint:
            self.add_hint(other._hint, *other.steps)

    def to_json(self, door: Door = "cli") -> dict[str, Any]:
        """The error as ``--json`` prints it and the HTTP API and MCP tools answer it, the hint
        worded for ``door``."""
        return error_json(self.message, type(self).__name__, exit_code=self.exit_code,
                          details=self.details, hint=self.hint_for(door),
                          conflicts=getattr(self, "conflicts", None))


def error_json(message: str, kind: str, *, exit_code: int | None = None,
               details: list[str] | None = None, hint: str | None = None,
               conflicts: list[Any] | None = None) -> dict[str, Any]:
    """The ``narr.error/1`` answer, the one shape of every failure on every transport: a
    :class:`NarrError`'s, and those no exception stands behind (a missing token, a bug of ours,
    whose ``kind`` is ``Unauthorized`` or ``InternalError`` and ``exit_code`` None)."""
    payload: dict[str, Any] = {"schema": "narr.error/1", "error": message, "type": kind,
                               "exit_code": exit_code, "details": list(details or []), "hint": hint}
    if conflicts:
        payload["conflicts"] = conflicts
    return payload


PAST_THE_START = "past-the-start"
"""A revision counting back past the start of its story line (``HEAD~9`` of six events)."""


class NotAWorldError(NarrError):
    """The directory holds no narr world (no git repository with a narr.toml)."""

    exit_code = 10
    http_status = 500


class NotFoundError(NarrError):
    """A node, revision, event id, branch, chain or set-aside edit that does not exist."""

    exit_code = 11
    http_status = 404


class InvalidInputError(NarrError):
    """Something typed on the command line or passed in a delta is malformed or illegal."""

    exit_code = 12


class InvalidWorldError(NarrError):
    """A node file in the working tree is not valid JSON or not a valid node."""

    exit_code = 13
    http_status = 422


class ConflictError(NarrError):
    """The world changed in a way that makes the request ambiguous (replay, revert, restore)."""

    exit_code = 14
    http_status = 409

    def __init__(self, message: str, *, conflicts: list[dict[str, object]] | None = None,
                 hint: str | None = None, details: list[str] | None = None,
                 steps: Sequence[Step] = ()) -> None:
        super().__init__(message, hint=hint, details=details, steps=steps)
        self.conflicts = conflicts or []


class MovedError(ConflictError):
    """The story moved (HEAD or its story line) since the caller last looked: a stale page's write."""

    http_status = 412  # HTTP's own word for a precondition (If-Match) that no longer holds


class BusyError(NarrError):
    """Another narr process holds the world's write lock."""

    exit_code = 15
    http_status = 423


class NothingToDoError(NarrError):
    """The request is valid but there is nothing to do (e.g. no failed event to retry)."""

    exit_code = 16
    http_status = 409


class CheckFailedError(NarrError):
    """``narr check`` found a broken event or node."""

    exit_code = 17
    http_status = 409


class DiffuserError(NarrError):
    """A diffuser failed or returned something that is not a valid delta."""

    exit_code = 18
    http_status = 502

    def __init__(self, message: str, *, hint: str | None = None,
                 details: list[str] | None = None, raw_reply: str | None = None,
                 steps: Sequence[Step] = ()) -> None:
        super().__init__(message, hint=hint, details=details, steps=steps)
        self.raw_reply = raw_reply


class StorageError(NarrError):
    """The file system refused a write: the world is read-only, or the disk is full.

    ``recorded`` says whether the story had already moved when it happened (the
    next command finishes the job) or nothing was changed (the request can be
    run again once there is room).
    """

    exit_code = 19
    http_status = 507

    def __init__(self, message: str, *, hint: str | None = None,
                 details: list[str] | None = None, recorded: bool = False,
                 steps: Sequence[Step] = ()) -> None:
        super().__init__(message, hint=hint, details=details, steps=steps)
        self.recorded = recorded


class RepositoryDamagedError(NarrError):
    """git cannot read the repository: a damaged object, a missing commit, a broken ref."""

    exit_code = 17
    http_status = 500


class ContinuityError(NarrError):
    """``narr audit`` found actions in a chapter that the world contradicts."""

    exit_code = 20
    http_status = 422


class OutOfTimeError(NarrError):
    """A reading (``narr audit``, a chapter's review) ran past its time budget: nothing was
    written; a larger budget or a shorter text gets through."""

    exit_code = 22
    http_status = 422


class RequirementError(NarrError):
    """narr cannot run safely here: a too-old pygit2 or libgit2, an SQLite without FTS5 trigram.

    Raised when the store is imported, before anything is read or written, so an
    unsupported library never leaves a world half-changed; ``narr doctor`` names it too.
    """

    exit_code = 21
    http_status = 500


EXIT_CODES: dict[str, int] = {
    cls.__name__: cls.exit_code
    for cls in (
        NarrError,
        NotAWorldError,
        NotFoundError,
        InvalidInputError,
        InvalidWorldError,
        ConflictError,
        BusyError,
        NothingToDoError,
        CheckFailedError,
        DiffuserError,
        StorageError,
        RepositoryDamagedError,
        ContinuityError,
        RequirementError,
        OutOfTimeError,
    )
}


_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
_FULL = (errno.ENOSPC, errno.EDQUOT) if hasattr(errno, "EDQUOT") else (errno.ENOSPC,)


def storage_error(exc: OSError, what: str, *, recorded: bool = False) -> StorageError | None:
    """The typed error for a write the file system refused (None: some other failure)."""
    reason = exc.strerror or str(exc)
    if exc.errno in _FULL or exc.errno == errno.EFBIG:
        said = ("the disk is full" if exc.errno in _FULL else
                "a file may not grow (a file size limit)")
        return StorageError(
            f"{said}: cannot write {what} ({reason})", recorded=recorded,
            hint="free some space and run the command again" + (
                "; the story has moved, the next narr command finishes the job" if recorded else
                "; nothing was changed"))
    if exc.errno in _READ_ONLY:
        refused = StorageError(
            f"the world is read-only: cannot write {what} ({reason})", recorded=recorded,
            hint="narr can read this world (status, log, get, check) but not change it")
        refused.http_status = 503  # not out of room: unavailable for writing
        return refused
    return None


def validation_error(exc: Any, source: str) -> InvalidInputError:
    """pydantic's ``ValidationError`` as narr's error: the first problem with the field it is in
    (``SOURCE: /ops/0/field: ...``), every problem in ``details``."""
    lines = []
    for e in exc.errors(include_url=False):
        loc = "/".join(str(p) for p in e["loc"])
        msg = "unknown field" if e["type"] == "extra_forbidden" else e["msg"]
        lines.append(f"{source}: /{loc}: {msg}" if loc else f"{source}: {msg}")
    return InvalidInputError(lines[0] + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""),
                             details=lines)
