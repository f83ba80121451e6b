"""Event records inside commit messages.

The subject is the event's content, so ``git log --oneline`` reads as the story;
the body carries the record as JSON after a marker line, so the commit hash seals
it and ``git show`` displays it above the node-file diff.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from narrative import safejson

if TYPE_CHECKING:
    from narrative.model import EventRecord

MARKER = "narr-event-record v1"
_WS = re.compile(r"\s+")
SUBJECT_LIMIT = 200


def subject_of(content: str) -> str:
    line = _WS.sub(" ", content).strip()
    if len(line) > SUBJECT_LIMIT:
        line = line[: SUBJECT_LIMIT - 1] + "…"
    return line or "(untitled event)"


def record_json(record: EventRecord) -> dict[str, Any]:
    # ``joined`` is written only by the merges that join nodes, so every other record reads
    # the same in a narr that predates it.
    return record.model_dump(mode="json", exclude=None if record.joined else {"joined"})


def encode(record: EventRecord) -> str:
    return f"{subject_of(record.content)}\n\n{MARKER}\n{_layout(record_json(record))}\n"


def _layout(data: dict[str, Any]) -> str:
    """JSON with one top-level key per line and one change per line, so ``git show`` stays legible."""
    lines = []
    items = list(data.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        name = json.dumps(key)
        if isinstance(value, list) and value:
            inner = ",\n".join(f"    {json.dumps(v, ensure_ascii=False)}" for v in value)
            lines.append(f"  {name}: [\n{inner}\n  ]{comma}")
        else:
            lines.append(f"  {name}: {json.dumps(value, ensure_ascii=False)}{comma}")
    return "{\n" + "\n".join(lines) + "\n}"


# Every field of the record in the model's order, with its default: a record written
# before a field existed reads with that field's default (a test keeps this in step
# with narrative.model.EventRecord).
RECORD_FIELDS: dict[str, Any] = {
    "narr": 1, "kind": "event", "id": None, "parent": None, "content": "",
    "diffusions": [], "edits": [], "narrative_text": None, "timestamp": None,
    "created_at": None, "close_scene": False, "diffuser": None, "causes": [],
    "reverts": None, "replay_of": None, "merged": None,
    "explicit": [], "joined": {},
}


def has_marker(message: str) -> bool:
    """Whether a commit message carries a record (read or not): cheaper than decoding one,
    which may be a bulk event of megabytes."""
    return f"\n\n{MARKER}\n" in message


def decode_raw(message: str) -> dict[str, Any] | None:
    """The record as plain JSON, all fields present, without validation, or None.

    Readers that only show a record (log, show, status) use this and never load
    pydantic: the record was validated when it was sealed, and the hash seals it.
    """
    _, sep, rest = message.partition(f"\n\n{MARKER}\n")
    if not sep:
        return None
    try:
        data = safejson.loads(rest)
    except ValueError:  # not JSON, or beyond the bounds (a stranger's commit): not a record
        return None
    if not isinstance(data, dict) or "id" not in data or "content" not in data:
        return None
    return {key: data.get(key, default) for key, default in RECORD_FIELDS.items()}


def unreadable(message: str) -> str | None:
    """Why a commit message that carries a record marker holds no record narr can read
    (JSON beyond the reader's bounds, not JSON, not a record), or None."""
    _, sep, rest = message.partition(f"\n\n{MARKER}\n")
    if not sep:
        return None
    try:
        data = safejson.loads(rest)
    except ValueError as exc:
        return str(exc).split(": line ")[0]
    if not isinstance(data, dict) or "id" not in data or "content" not in data:
        return "not an event record"
    return None


def decode(message: str) -> EventRecord | None:
    """The record in a commit message, or None when the commit is not a narr event."""
    data = decode_raw(message)
    if data is None:
        return None
    from narrative.model import EventRecord

    try:
        return EventRecord.model_validate(data)
    except ValueError:
        return None


class Summary(NamedTuple):
    """What a one-line listing shows of a commit (the catalog keeps it for large records).

    A commit without a record (a plain git commit) has kind ``commit``, no event id, and
    its message as content.
    """

    commit: str
    parent: str | None
    kind: str
    id: str | None
    content: str
    timestamp: str | None
    created_at: str | None
    changes: int
    edits: int

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def summary_row(commit: str, parent: str | None, message: str,
                raw: dict[str, Any] | None = None) -> Summary:
    """The :class:`Summary` of a commit from its message (``raw``: the record, decoded already)."""
    if raw is None:
        raw = decode_raw(message)
    if raw is None:
        return Summary(commit, parent, "commit", None, message.strip(), None, None, 0, 0)
    changes, edits = raw.get("diffusions"), raw.get("edits")
    return Summary(commit, parent, raw["kind"], raw["id"], raw["content"] or "", raw["timestamp"],
                   raw["created_at"], len(changes) if isinstance(changes, list) else 0,
                   len(edits) if isinstance(edits, list) else 0)


def record_summary_row(commit: str, parent: str | None, record: EventRecord) -> Summary:
    """:func:`summary_row` of a record in hand (no JSON is made or parsed)."""
    return Summary(commit, parent, record.kind, record.id, record.content or "", record.timestamp,
                   record.created_at, len(record.diffusions), len(record.edits))
