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
    # ``joined`` is written only by the merges that join nodes, ``chapter`` and ``in_chapter``
    # only by chapters, so every other record reads the same in a narr that predates them.
    left_out = {name for name, empty in (("joined", not record.joined),
                                         ("chapter", record.chapter is None),
                                         ("in_chapter", record.in_chapter is None)) if empty}
    return record.model_dump(mode="json", exclude=left_out or None)


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
    "explicit": [], "joined": {}, "chapter": None, "in_chapter": None,
}


ONLY_WHEN_SET = frozenset({"chapter", "in_chapter"})
"""Fields a record shows only when it has them: a record that is no chapter's reads as before."""


def has_marker(message: str) -> bool:
    """Whether a commit message carries a record (read or not): cheaper than decoding one,
    which may be a bulk event of megabytes."""
    return f"\n\n{MARKER}\n" in message


def decode_raw(message: str) -> dict[str, Any] | None:
    """The record as plain JSON, all fields present (but those only chapters write, when it
    has none: :data:`ONLY_WHEN_SET`), without validation, or None.

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
    return {key: data.get(key, default) for key, default in RECORD_FIELDS.items()
            if key in data or key not in ONLY_WHEN_SET}


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


def decode_checked(message: str) -> dict[str, Any] | None:
    """The record in a commit message as the model's JSON (``EventRecord.model_dump(mode="json")``),
    validated, or None when the commit is not a narr event (no record, or one the model rejects).

    What reset and the abandoned chains need of a record: it is read plainly
    (:func:`plain_record`) when it plainly holds, so they never load pydantic; anything
    else goes to the model, which decides as :func:`decode` does.
    """
    data = decode_raw(message)
    if data is None:
        return None
    if not _SURROGATE.search(message):
        plain = plain_record(data)
        if plain is not None:
            return plain
    record = _validated(data)
    if record is None:
        return None
    try:
        return record.model_dump(mode="json")
    except ValueError:  # text UTF-8 cannot encode (an escaped lone surrogate): not readable
        return None


def decode(message: str) -> EventRecord | None:
    """The record in a commit message, or None when the commit is not a narr event."""
    data = decode_raw(message)
    if data is None:
        return None
    return _validated(data)


def _validated(data: dict[str, Any]) -> EventRecord | None:
    from narrative.model import EventRecord

    try:
        return EventRecord.model_validate(data)
    except ValueError:
        return None


# What the plain reading accepts, field by field: JSON's own types and nothing the model
# would coerce or reject; everything else is left to the model.
_KINDS = ("genesis", "event", "merge", "chapter")
# An escaped UTF-16 surrogate: JSON can spell text UTF-8 cannot encode, and how the model
# takes such text differs from field to field, so a record spelling one is the model's.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SIDES = (None, "theirs", "resolved")
_CHANGE_KEYS = frozenset({"target", "field", "old_value", "new_value", "side"})
_OPTIONAL_TEXT = ("parent", "narrative_text", "timestamp", "diffuser", "reverts", "replay_of",
                  "merged")


def _text(value: object) -> bool:
    return type(value) is str


def _text_or_none(value: object) -> bool:
    return value is None or type(value) is str


def _plain_change(obj: object) -> dict[str, Any] | None:
    """A change as the Change model dumps it (``old_value``/``new_value`` only when present,
    ``side`` only when set), or None."""
    if type(obj) is not dict or not obj.keys() <= _CHANGE_KEYS or "target" not in obj \
            or "field" not in obj:
        return None
    from narrative.ids import id_problem

    field, side = obj["field"], obj.get("side")
    if id_problem(obj["target"]) is not None or type(field) is not str \
            or (field and field[0] != "/") or side not in _SIDES \
            or not (side is None or type(side) is str):
        return None
    row = {"target": obj["target"], "field": field}
    for key in ("old_value", "new_value"):
        if key in obj:
            row[key] = obj[key]
    if side is not None:
        row["side"] = side
    return row


def _plain_op(obj: object) -> dict[str, Any] | None:
    """An explicit op as its model dumps it, or None (an op the model must read)."""
    if type(obj) is not dict:
        return None
    from narrative.ids import id_problem

    op = obj.get("op")
    keys = set(obj)
    if op in ("set", "unset") and type(op) is str:
        want = {"op", "target", "field", "value"} if op == "set" else {"op", "target", "field"}
        field = obj.get("field")
        if keys != want or id_problem(obj["target"]) is not None or type(field) is not str \
                or len(field) < 2 or field[0] != "/":
            return None
        row = {"op": op, "target": obj["target"], "field": field}
        if op == "set":
            row["value"] = obj["value"]
        return row
    if op == "expire" and type(op) is str:
        if keys != {"op", "target"} or id_problem(obj["target"]) is not None:
            return None
        return {"op": op, "target": obj["target"]}
    if op in ("relate", "unrelate") and type(op) is str:
        from narrative.nodefile import PLAIN_REL_TYPE

        want = {"op", "source", "type", "target"}
        if not (keys == want or (op == "relate" and keys == want | {"attrs"})):
            return None
        rtype, attrs = obj["type"], obj.get("attrs", {})
        if id_problem(obj["source"]) is not None or id_problem(obj["target"]) is not None \
                or type(rtype) is not str or not PLAIN_REL_TYPE.fullmatch(rtype) \
                or type(attrs) is not dict or not all(type(k) is str for k in attrs):
            return None
        row = {"op": op, "source": obj["source"], "type": rtype, "target": obj["target"]}
        if op == "relate":
            row["attrs"] = attrs
        return row
    if op == "create" and type(op) is str:
        from narrative.nodefile import plain_node

        node = plain_node(obj.get("node")) if keys == {"op", "node"} else None
        return {"op": "create", "node": dict(node)} if node is not None else None
    return None


def _plain_place(obj: object) -> bool:
    """An event's place in a chapter as its model dumps it."""
    return (type(obj) is dict and obj.keys() == {"chapter", "number", "sentence", "scene"}
            and _text(obj["chapter"]) and all(type(obj[k]) is int and obj[k] >= 1
                                               for k in ("number", "sentence", "scene")))


def plain_record(data: dict[str, Any]) -> dict[str, Any] | None:
    """A record (as :func:`decode_raw` gives it: every field present) that is plainly valid,
    in the form the model dumps it (``EventRecord.model_validate(data).model_dump(mode="json")``);
    None when the model must decide: something is wrong, or would be coerced. Text is
    taken to be text UTF-8 can encode (:func:`decode_checked` gives the model the rest).

    A record was validated when it was sealed, and the commit's hash seals it; but a
    hand-made commit may carry anything, so only what plainly holds is read here.
    """
    if not data.keys() <= RECORD_FIELDS.keys():
        return None
    narr, kind = data["narr"], data["kind"]
    if type(narr) is not int or type(kind) is not str or kind not in _KINDS \
            or not _text(data["id"]) or not _text(data["content"]) \
            or not _text(data["created_at"]) or type(data["close_scene"]) is not bool \
            or not all(_text_or_none(data[f]) for f in _OPTIONAL_TEXT):
        return None
    if data.get("chapter") is not None:
        return None  # a chapter's own record: rare, and the model reads it whole
    place = data.get("in_chapter")
    if place is not None and not _plain_place(place):
        return None
    causes, joined = data["causes"], data["joined"]
    if type(causes) is not list or not all(_text(c) for c in causes) \
            or type(joined) is not dict or not all(_text(v) for v in joined.values()):
        return None
    lists: dict[str, list[dict[str, Any]]] = {}
    for name, read in (("diffusions", _plain_change), ("edits", _plain_change),
                       ("explicit", _plain_op)):
        items = data[name]
        if type(items) is not list:
            return None
        rows = []
        for item in items:
            row = read(item)
            if row is None:
                return None
            rows.append(row)
        lists[name] = rows
    out = {key: data.get(key) for key in RECORD_FIELDS}
    out.update(lists)
    out["causes"], out["joined"] = list(causes), dict(joined)
    if place is not None:
        out["in_chapter"] = dict(place)
    return out


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
