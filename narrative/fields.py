"""Field-level changes between JSON documents, addressed by JSON pointers.

One diff function serves hand edits, diffusions and ``narr check``, so the three
can never disagree about what "a field changed" means: objects are compared key
by key, everything else (strings, numbers, lists) is one value. A key that is
missing is *absent*, which is not ``null``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple

# a pointer's tokens are escaped below the model, which names fields too
from narrative.ids import escape as escape
from narrative.ids import pointer as pointer

if TYPE_CHECKING:
    from narrative.model import Change

ABSENT: Any = ...  # marks a value that is not there (distinct from JSON null)

REFERENCE_LABELS: Final = {"/state/location": "at", "/state/holder": "held by"}
"""What a reference field says of the node holding it, as an edge of the world graph draws it."""

REFERENCE_FIELDS: Final = frozenset(REFERENCE_LABELS)
"""Fields whose value is the id of another node, by the conventions the sample world and
the generic rules keep: a node's ``state.location`` is the id of a place, an item's
``state.holder`` the id of whoever holds it. ``--set`` resolves a name or an alias typed
there to the id, as it does for the node before the field, and the world graph has an
edge for each (drawn "at" and "held by"). A world declares more in ``narr.toml``
(``[references]``, see :mod:`narrative.config`)."""

REFERENCE_ROOTS: Final = ("state", "traits")
"""Where a reference field may live: what events change, and the user's baseline."""
REFERENCE_DEPTH: Final = 3


def reference_candidates(node: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(pointer, value)`` of every string under a node's state and traits (at most
    ``REFERENCE_DEPTH`` keys deep) that could be a node's id.

    The catalog keeps these, not only the fields the world declares today, so a
    field declared later needs no rebuild; which of them are edges is asked at read time.
    """
    from narrative.ids import id_problem

    out: list[tuple[str, str]] = []

    def walk(value: Any, ptr: str, depth: int) -> None:
        if isinstance(value, str):
            if id_problem(value) is None:
                out.append((ptr, value))
        elif isinstance(value, Mapping) and depth < REFERENCE_DEPTH:
            for key in sorted(value):
                walk(value[key], ptr + "/" + escape(str(key)), depth + 1)

    for root in REFERENCE_ROOTS:
        part = node.get(root)
        if isinstance(part, Mapping):
            walk(part, "/" + root, 0)
    return out


def reference_edges(node: Mapping[str, Any] | None,
                    labels: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """``(field, label, target)`` of the reference fields (``labels``: pointer -> label) a
    node holds; the caller keeps those whose target is a node of the world."""
    if node is None:
        return []
    out = []
    for ptr in sorted(labels):
        value = get(node, ptr)
        if isinstance(value, str) and value and value != node.get("id"):
            out.append((ptr, labels[ptr], value))
    return out


def make_change(target: str, field: str, old: Any = ..., new: Any = ...) -> Change:
    # The model (and pydantic with it) loads on first use, so reading paths that never
    # build a change start faster.
    from narrative.model import make_change as make

    return make(target, field, old, new)


def canonical(value: Any) -> str:
    """A string that two JSON values share exactly when they are equal *as JSON*.

    Python says ``True == 1``; JSON does not, and a story where a flag became the
    number one has changed.
    """
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# Values equal as JSON exactly when equal in Python, if both are of one of these types (not
# float: -0.0 == 0.0, which JSON writes apart).
_PLAIN = (str, int, bool, type(None))


def same(a: Any, b: Any) -> bool:
    if a is ABSENT or b is ABSENT:
        return a is b
    if type(a) is type(b) and type(a) in _PLAIN:
        return bool(a == b)
    return canonical(a) == canonical(b)


def split(ptr: str) -> list[str]:
    """The unescaped tokens of a JSON pointer (``""`` is the whole document)."""
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise ValueError(f"{ptr!r} is not a JSON pointer")
    return [t.replace("~1", "/").replace("~0", "~") for t in ptr[1:].split("/")]


_BAD_ESCAPE = re.compile(r"~(?![01])")


def escape_problem(ptr: str) -> str | None:
    """Why ``ptr`` is no valid JSON pointer (RFC 6901: ``~`` only as ``~0`` or ``~1``), or None.

    :func:`split` reads any other ``~`` literally (history written before this
    check must stay readable), but other JSON-pointer tools refuse it, so input
    is checked here: the same field must not have two spellings.
    """
    if _BAD_ESCAPE.search(ptr):
        return (f"field {ptr!r}: '~' must be written '~0' in a JSON pointer ('~1' is '/'); "
                "other escapes are not valid")
    return None


def get(doc: Any, ptr: str) -> Any:
    """The value at ``ptr`` in ``doc``, or :data:`ABSENT`."""
    cur = doc
    for token in split(ptr):
        if isinstance(cur, Mapping):
            if token not in cur:
                return ABSENT
            cur = cur[token]
        elif isinstance(cur, list):
            if not token.isdigit() or int(token) >= len(cur):
                return ABSENT
            cur = cur[int(token)]
        else:
            return ABSENT
    return cur


# Objects whose members are containers that exist implicitly: a node's relation types.
# ``/relations/holds`` appearing or vanishing is never itself a change; its edges are.
CONTAINERS = frozenset({"/relations"})


def diff(target: str, old: Any, new: Any, base: str = "") -> list[Change]:
    """Field-level changes turning ``old`` into ``new`` (either may be :data:`ABSENT`)."""
    return [make_change(target, field, a, b) for field, a, b in _diff(old, new, base)]


def _diff(old: Any, new: Any, base: str) -> Iterator[tuple[str, Any, Any]]:
    if old is ABSENT and new is ABSENT:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        implicit: Any = {} if base in CONTAINERS else ABSENT
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key, implicit), new.get(key, implicit)
            if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
                a, b = old.get(key, ABSENT), new.get(key, ABSENT)
            yield from _diff(a, b, base + "/" + escape(key))
        return
    if same(old, new):
        return
    yield base, old, new


def _node_diff(old: Mapping[str, Any] | None,
               new: Mapping[str, Any] | None) -> Iterator[tuple[str, Any, Any]]:
    if old is None and new is None:
        return
    if old is None:
        yield "", ABSENT, dict(new or {})
    elif new is None:
        yield "", dict(old), ABSENT
    else:
        yield from _diff(old, new, "")


def node_changes(node_id: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[Change]:
    """Changes from one version of a node to another; ``None`` means the node does not exist.

    Creation and removal are one change on the whole node (field ``""``), so a
    record says "this node appeared" rather than listing every field.
    """
    return [make_change(node_id, field, a, b) for field, a, b in _node_diff(old, new)]


def node_change_json(node_id: str, old: Mapping[str, Any] | None,
                     new: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """:func:`node_changes` as their JSON (a :class:`Change`'s ``model_dump(mode="json")``),
    without building the model: what a reader that only prints the changes needs."""
    rows = []
    for field, a, b in _node_diff(old, new):
        row: dict[str, Any] = {"target": node_id, "field": field}
        if a is not ABSENT:
            row["old_value"] = a
        if b is not ABSENT:
            row["new_value"] = b
        rows.append(row)
    return rows


def apply_changes(
    nodes: MutableMapping[str, Any],
    changes: Iterable[Change],
    *,
    verify_old: bool = True,
) -> list[str]:
    """Apply changes to ``nodes`` (id -> node, ``None`` = absent) in place.

    Returns one line per change whose recorded ``old_value`` does not match what
    is there (only when ``verify_old``); such a change is still applied, so the
    caller sees every mismatch at once.
    """
    import jsonpatch  # loaded by what applies changes, not by every reader of fields
    import jsonpointer

    problems: list[str] = []
    for ch in changes:
        node = nodes.get(ch.target)
        if ch.field == "":
            current: Any = ABSENT if node is None else node
            if verify_old and not same(current, ch.old):
                problems.append(_mismatch(ch, current))
            nodes[ch.target] = dict(ch.new_value) if ch.has_new else None
            continue
        if node is None:
            problems.append(f"{ch.target} {ch.field}: node does not exist")
            continue
        current = get(node, ch.field)
        if verify_old and not same(current, ch.old):
            problems.append(_mismatch(ch, current))
        ops: list[dict[str, Any]] = []
        container = _container_of(ch.field)
        if ch.has_new:
            if container is not None and get(node, container) is ABSENT:
                ops.append({"op": "add", "path": container, "value": {}})
            ops.append({"op": "add", "path": ch.field, "value": ch.new_value})
        elif current is ABSENT:
            continue
        else:
            ops.append({"op": "remove", "path": ch.field})
        try:
            updated = jsonpatch.apply_patch(node, ops, in_place=False)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            problems.append(f"{ch.target} {ch.field}: cannot apply: {exc}")
            continue
        if container is not None and get(updated, container) == {}:
            updated = jsonpatch.apply_patch(updated, [{"op": "remove", "path": container}])
        nodes[ch.target] = updated
    return problems


def _container_of(ptr: str) -> str | None:
    """The implicit container a pointer lives in (``/relations/holds`` for an edge), or None."""
    for prefix in CONTAINERS:
        if ptr.startswith(prefix + "/"):
            rest = ptr[len(prefix) + 1 :]
            if "/" in rest:
                return prefix + "/" + rest.split("/", 1)[0]
    return None


def invert(changes: Iterable[Change]) -> list[Change]:
    """The changes that undo ``changes``, in reverse order."""
    out = []
    for ch in reversed(list(changes)):
        out.append(
            make_change(
                ch.target,
                ch.field,
                ch.new,
                ch.old,
            )
        )
    return out


def _mismatch(ch: Change, current: Any) -> str:
    expected = ch.old
    return (
        f"{ch.target} {ch.field or '(whole node)'}: expected {show(expected)}, found {show(current)}"
    )


def show(value: Any, limit: int = 60) -> str:
    """A short one-line rendering of a JSON value for messages (``absent`` for ABSENT)."""
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def put(doc: Any, ptr: str, value: Any) -> None:
    """Set ``value`` at ``ptr`` in place, creating missing objects on the way.

    For carrying a user's edit onto a world that may lack the objects around it;
    a non-object in the way is replaced, because the user's value wins.
    """
    tokens = split(ptr)
    cur: Any = doc
    for token in tokens[:-1]:
        if isinstance(cur, list) and token.isdigit() and int(token) < len(cur):
            cur = cur[int(token)]
            continue
        if not isinstance(cur.get(token), dict | list):
            cur[token] = {}
        cur = cur[token]
    last = tokens[-1]
    if isinstance(cur, list):
        if last.isdigit() and int(last) < len(cur):
            cur[int(last)] = value
        else:
            cur.append(value)
    else:
        cur[last] = value


def drop(doc: Any, ptr: str) -> bool:
    """Remove ``ptr`` in place (and an emptied relation type with it); False if it was absent."""
    tokens = split(ptr)
    parent = get(doc, pointer(*tokens[:-1]))
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        return False
    container = _container_of(ptr)
    if container is not None and get(doc, container) == {}:
        drop(doc, container)
    return True


def value_in(node: Any, field: str) -> Any:
    """The value a change's ``field`` addresses in ``node`` (None: no node); ABSENT if none.

    Field ``""`` is the whole node, the way creations and removals are recorded.
    """
    if node is None:
        return ABSENT
    return node if field == "" else get(node, field)


def parse_field(text: str, *, what: str | None = None) -> str:
    """The JSON pointer a user means by ``text``: ``/state/mood`` as it is, the dotted
    ``state.mood`` made one (``""`` is the whole node). Every command reads a field with
    this, so no command takes one spelling and refuses the other.

    A field with an empty name in it (``state..mood``, ``/state/``) is refused; the message
    starts with ``what`` (default: the field as typed).
    """
    if text == "":
        return ""
    ptr = text if text.startswith("/") else pointer(*text.split("."))
    if any(token == "" for token in split(ptr)):
        from narrative.errors import InvalidInputError

        raise InvalidInputError(f"{what or f'field {text!r}'}: empty field name in the path")
    return ptr


class Spelling(NamedTuple):
    """How one command has always written a field conflict in JSON: ``(key, attribute)`` pairs
    in order (a value that is absent, or a context that is None, is left out), and the
    line its text output shows."""

    keys: tuple[tuple[str, str], ...]
    line: Callable[[FieldConflict], str]


class FieldConflict(NamedTuple):
    """One field two changes disagree on, in the words of a three-way merge.

    ``base`` is what the incoming change expected to find there, ``ours`` what the world
    holds now, ``theirs`` what the change would write; any of them may be
    :data:`ABSENT`. A merge's conflict (base, this story line, the merged branch), a
    replayed event's (its recorded old value, the world now, its recorded new value), a
    revert's (what the event wrote, the world now, what was there before) and a set-aside
    edit's (what it was edited from, the world now, the edit) are all one. The context
    fields say which event or why, where one applies.
    """

    node: str
    field: str
    base: Any = ABSENT
    ours: Any = ABSENT
    theirs: Any = ABSENT
    event: str | None = None  # the event whose recorded change it is (replay)
    content: str | None = None  # that event's content
    kind: str | None = None  # "edit" or "diffusion": which part of the record (replay)
    note: str | None = None  # why there is no value to compare (a set-aside edit's node is gone)

    def to_json(self, spelling: Spelling) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, attr in spelling.keys:
            value = getattr(self, attr)
            if value is not ABSENT and not (value is None and attr in _CONTEXT):
                out[key] = value
        return out

    @classmethod
    def from_json(cls, spelling: Spelling, data: Mapping[str, Any]) -> FieldConflict:
        return cls(**{attr: data[key] for key, attr in spelling.keys if key in data})

    def line(self, spelling: Spelling) -> str:
        return spelling.line(self)

    @property
    def where(self) -> str:
        return f"{self.node} {self.field or '(whole node)'}"


_CONTEXT = frozenset({"event", "content", "kind", "note"})


MERGE_SPELLING = Spelling(
    (("node", "node"), ("field", "field"), ("base", "base"), ("ours", "ours"), ("theirs", "theirs")),
    lambda c: f"{c.where}: base {show(c.base)}, ours {show(c.ours)}, theirs {show(c.theirs)}")
REPLAY_SPELLING = Spelling(
    (("event", "event"), ("content", "content"), ("kind", "kind"), ("target", "node"),
     ("field", "field"), ("recorded_old", "base"), ("recorded_new", "theirs"), ("current", "ours")),
    lambda c: f"{c.where}: recorded {show(c.base)} → {show(c.theirs)}, now {show(c.ours)}")
REVERT_SPELLING = Spelling(
    (("target", "node"), ("field", "field"), ("event_wrote", "base"), ("current", "ours")),
    lambda c: f"{c.where}: the event wrote {show(c.base)}, now {show(c.ours)}")
SET_ASIDE_SPELLING = Spelling(
    (("target", "node"), ("field", "field"), ("base", "base"), ("current", "ours"),
     ("yours", "theirs"), ("note", "note")),
    lambda c: f"{c.where}: {c.note}" if c.note else
    f"{c.where}: was {show(c.base)}, now {show(c.ours)}, set aside {show(c.theirs)}")


def nearest(doc: Any, ptr: str, limit: int = 3) -> list[str]:
    """The fields of ``doc`` nearest to the missing ``ptr``, dotted (``state.mood`` for ``state.moood``).

    A typo in a field name is as common as in a node's name, and the node is at
    hand: every field path it holds is compared with rapidfuzz, as names are.
    """
    from rapidfuzz import fuzz, process

    paths: list[str] = []

    def walk(value: Any, tokens: list[str]) -> None:
        if tokens:
            paths.append(".".join(tokens))
        if isinstance(value, dict) and len(paths) < 5000:
            for key, child in value.items():
                walk(child, [*tokens, str(key)])

    walk(doc, [])
    wanted = ".".join(split(ptr))
    hits = process.extract(wanted, paths, scorer=fuzz.ratio, limit=limit, score_cutoff=75)
    return [choice for choice, _score, _ in hits]


def hint_for_missing(doc: Any, ptr: str) -> str | None:
    """``did you mean state.mood?`` for a field ``doc`` does not have, or None when nothing is near."""
    near = nearest(doc, ptr)
    return f"did you mean {' or '.join(near)}?" if near else None
