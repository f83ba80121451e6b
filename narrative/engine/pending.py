"""Events that failed are kept, so nothing a user typed is lost.

When an event cannot be recorded (a bad hand edit, an illegal delta, a diffuser
that failed), its whole request is saved under ``.git/narr/failed/`` together
with the error and, for a model, its raw reply. ``narr event --retry`` runs the
newest one again; ``narr status`` lists them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from narrative.ids import new_event_id
from narrative.model import Change, Delta
from narrative.store.journal import write_atomic
from narrative.store.worldrepo import WorldRepo


class EventRequest(BaseModel):
    """Everything needed to run an event again exactly as it was asked for."""

    content: str
    delta: Delta = Field(default_factory=Delta)
    narrative_text: str | None = None
    timestamp: str | None = None
    close_scene: bool = False
    diffuser: str | None = None
    causes: list[str] = Field(default_factory=list)
    edits: list[Change] = Field(
        default_factory=list,
        description="Hand edits to lay onto the world before the event (a replayed event's own).",
    )
    replay_of: str | None = None
    reverts: str | None = None
    render: bool = Field(default=False, description="Ask the diffuser for the narrative text too.")


class FailedEvent(BaseModel):
    key: str
    saved_at: str
    error: str
    details: list[str] = Field(default_factory=list)
    raw_reply: str | None = None
    request: EventRequest


def _dir(wr: WorldRepo) -> Path:
    return wr.narr_dir / "failed"


def save(wr: WorldRepo, request: EventRequest, error: str, details: list[str] | None = None,
         raw_reply: str | None = None) -> FailedEvent:
    item = FailedEvent(
        key=new_event_id(),
        saved_at=_now(),
        error=error,
        details=details or [],
        raw_reply=raw_reply,
        request=request,
    )
    _write(wr, item)
    return item


def update(wr: WorldRepo, item: FailedEvent, error: str, details: list[str] | None = None,
           raw_reply: str | None = None) -> FailedEvent:
    """The same kept event, failed again: remember the newest error and raw reply."""
    again = item.model_copy(update={"saved_at": _now(), "error": error, "details": details or [],
                                    "raw_reply": raw_reply if raw_reply is not None else item.raw_reply})
    _write(wr, again)
    return again


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _write(wr: WorldRepo, item: FailedEvent) -> None:
    directory = _dir(wr)
    directory.mkdir(parents=True, exist_ok=True)
    write_atomic(directory / f"{item.key}.json",
                 item.model_dump_json(indent=2).encode("utf-8"), wr.narr_dir / "tmp")


def load_all(wr: WorldRepo) -> list[FailedEvent]:
    """Kept failed events, oldest first (unreadable files are skipped, never deleted)."""
    directory = _dir(wr)
    if not directory.is_dir():
        return []
    out = []
    for path in sorted(directory.glob("*.json")):
        try:
            out.append(FailedEvent.model_validate(json.loads(path.read_bytes())))
        except (ValueError, OSError):
            continue
    return out


def discard(wr: WorldRepo, key: str) -> None:
    (_dir(wr) / f"{key}.json").unlink(missing_ok=True)


def summary(item: FailedEvent) -> dict[str, Any]:
    return {"key": item.key, "saved_at": item.saved_at, "content": item.request.content,
            "error": item.error}
