"""Events that failed are kept, so nothing a user typed is lost.

When an event cannot be recorded (a bad hand edit, an illegal delta, a diffuser
that failed), its whole request is kept in the world's private state
(:class:`~narrative.store.private.PrivateState`) together with the error and, for a model,
its raw reply. ``narr event --retry`` runs the
newest one again, ``narr failed`` lists them all (``narr failed retry N`` and
``narr failed drop N``), and an event recorded later with the same words makes its
kept copy redundant, so that copy is forgotten: the same changes (it was run again
once the world was fixed), or other ones (the writer fixed them and typed the event
again, as the error told them to). The words are in the story either way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from narrative import safejson
from narrative.delta.request import EventRequest
from narrative.engine.failed_answers import FailedDropped, FailedEvents
from narrative.errors import InvalidInputError, NotFoundError
from narrative.ids import new_event_id
from narrative.store import WorldRepo


class FailedEvent(BaseModel):
    key: str
    saved_at: str
    error: str
    details: list[str] = Field(default_factory=list)
    raw_reply: str | None = None
    kind: str | None = None  # the error's class (narrative.errors): its exit code; None in older files
    request: EventRequest
    # The change flags as typed when narr could not read them (a --delta file that is not
    # there): the words are kept, and a retry asks for the changes to be typed again.
    unread: list[str] = Field(default_factory=list)


def save(wr: WorldRepo, request: EventRequest, error: str, details: list[str] | None = None,
         raw_reply: str | None = None, kind: str | None = None,
         unread: list[str] | None = None) -> FailedEvent:
    """Keep a failed request; the same request failing again updates its kept copy."""
    if wr.private.has_failed():
        wanted = _same_key(request)
        for earlier in load_all(wr):
            if _same_key(earlier.request) == wanted and earlier.unread == (unread or []):
                return update(wr, earlier, error, details, raw_reply, kind)
    item = FailedEvent(
        key=new_event_id(),
        saved_at=_now(),
        error=error,
        details=details or [],
        raw_reply=raw_reply,
        kind=kind,
        request=request,
        unread=unread or [],
    )
    _write(wr, item)
    return item


def update(wr: WorldRepo, item: FailedEvent, error: str, details: list[str] | None = None,
           raw_reply: str | None = None, kind: str | None = None) -> FailedEvent:
    """The same kept event, failed again: remember the newest error and raw reply."""
    again = item.model_copy(update={"saved_at": _now(), "error": error, "details": details or [],
                                    "kind": kind or item.kind,
                                    "raw_reply": raw_reply if raw_reply is not None else item.raw_reply})
    _write(wr, again)
    return again


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write(wr: WorldRepo, item: FailedEvent) -> None:
    wr.private.keep_failed(item.key, item.model_dump_json(indent=2).encode("utf-8"))


def load_all(wr: WorldRepo) -> list[FailedEvent]:
    """Kept failed events, oldest failure first (unreadable files are skipped, never deleted)."""
    out = []
    for _key, data in wr.private.failed():
        try:
            out.append(FailedEvent.model_validate(safejson.loads(data)))
        except ValueError:
            continue
    return sorted(out, key=lambda item: (item.saved_at, item.key))


def discard(wr: WorldRepo, key: str) -> None:
    wr.private.drop_failed(key)


def pick(wr: WorldRepo, which: str | None = None) -> FailedEvent:
    """A kept event by number (1 = the newest, as ``narr failed`` lists them) or key prefix."""
    kept = load_all(wr)[::-1]
    if not kept:
        raise NotFoundError("no failed event is kept")
    if which is None:
        return kept[0]
    if which.isdigit() and 1 <= int(which) <= len(kept):
        return kept[int(which) - 1]
    matches = [item for item in kept if len(which) >= 4 and item.key.startswith(which)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise InvalidInputError(f"{which!r} matches {len(matches)} failed events; give its number "
                                "(narr failed lists them)")
    raise NotFoundError(f"no failed event {which!r} (1..{len(kept)}; narr failed lists them)")


def forget_same(wr: WorldRepo, request: EventRequest) -> list[FailedEvent]:
    """Forget kept events with the words of ``request`` (spaces aside): it is recorded now,
    with the same changes or with the ones the writer fixed."""
    if not wr.private.has_failed():
        return []
    words = _words(request.content)
    gone = [item for item in load_all(wr) if _words(item.request.content) == words]
    for item in gone:
        discard(wr, item.key)
    return gone


def same_changes(item: FailedEvent, request: EventRequest) -> bool:
    """Whether ``request`` asked what the kept ``item`` asked, changes included."""
    return _same_key(item.request) == _same_key(request)


def _words(content: str) -> str:
    return " ".join(content.split())


def _same_key(request: EventRequest) -> str:
    return request.model_dump_json(include={"content", "delta", "narrative_text", "timestamp",
                                            "close_scene", "causes", "diffuser", "render"})


def drop(wr: WorldRepo, which: str) -> FailedDropped:
    """Forget one kept failed event for good (by number or key), under the world's lock; its
    words are in the answer, one last time."""
    with wr.lock:
        item = pick(wr, which)
        discard(wr, item.key)
    return FailedDropped.model_validate({"dropped": summary(item)})


def summary(item: FailedEvent) -> dict[str, Any]:
    return {"key": item.key, "saved_at": item.saved_at, "content": item.request.content,
            "error": item.error}


def listing(wr: WorldRepo) -> FailedEvents:
    """Kept events newest first, numbered as a retry or a drop names them."""
    return FailedEvents.model_validate({"items": [
        {"n": n, **summary(item), "details": item.details, "diffuser": item.request.diffuser,
         "raw_reply": item.raw_reply, "unread": item.unread}
        for n, item in enumerate(load_all(wr)[::-1], 1)]})
