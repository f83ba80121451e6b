"""A node edited as a form: only the fields the writer changed are written.

A page (or any program) that loaded a node some time ago and saves it whole writes back
every field it loaded, so another writer's change to a field this one never touched is
silently undone. :func:`patch_node` takes the changes instead, each with the value the
writer saw (``old``) and the one they want (``new``), and applies them to the node's file
as it stands now: a field nobody else changed takes the new value; a field someone else
changed meanwhile to something else is a conflict, reported with both values, and nothing
is written (``force`` names the fields whose new value wins anyway). A field changed
elsewhere to the very value wanted is no conflict.

:func:`form_offer` is what a form offers beside a node's own fields: the state and trait
keys other nodes of the same layer and kind have (a sample of them, ``SAMPLE``, so a world
of ten thousand persons costs what a world of forty does), the fields among them that hold
a node's id (a name picker, not a text box), and the relation types the world uses.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from narrative import fields
from narrative.errors import ConflictError, InvalidInputError, NotFoundError
from narrative.store import WorldRepo, scan_for_reader

EDITABLE = frozenset({"name", "aliases", "kind", "summary", "lifecycle", "traits", "state",
                      "relations", "tags", "sections", "always_in_view"})
"""The fields a form may change: ``id`` and ``layer`` place the file, ``created_by_event``
is the engine's, ``extensions`` other tools'."""
UNSAFE_KEYS = frozenset({"__proto__", "constructor", "prototype"})
"""Field names a browser's scripts read as something else than a field (JavaScript objects'
own machinery): a page could neither show nor save them faithfully, so none is written."""
SAMPLE = 24  # nodes of the same kind read for the fields they have
MAX_CHANGES = 1000


@dataclass(frozen=True)
class FieldChange:
    """One field as the writer changed it: ``old`` the value they saw, ``new`` the value they
    want (:data:`narrative.fields.ABSENT` for none); ``named``: ``new`` is a node's name or
    alias, to be stored as its id (a reference field filled from a name picker)."""

    field: str
    old: Any = fields.ABSENT
    new: Any = fields.ABSENT
    named: bool = False


def parse_changes(items: Any) -> list[FieldChange]:
    """Changes as JSON gives them: ``[{"field": "/state/mood", "old": ..., "new": ...}]``, a
    key left out meaning the field was (or is to be) absent."""
    if not isinstance(items, list) or not items:
        raise InvalidInputError("\"changes\" must be a list of {\"field\", \"old\", \"new\"}")
    if len(items) > MAX_CHANGES:
        raise InvalidInputError(f"at most {MAX_CHANGES} changes at once, not {len(items)}")
    out = []
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("field"), str) \
                or not set(item) <= {"field", "old", "new", "named"}:
            raise InvalidInputError(f"change {n + 1}: must be {{\"field\", \"old\", \"new\"}} "
                                    "(a key left out: absent)")
        named = item.get("named", False)
        if named and not isinstance(item.get("new"), str):
            raise InvalidInputError(f"change {n + 1}: a node named by name needs the name as text")
        out.append(FieldChange(item["field"], item.get("old", fields.ABSENT),
                               item.get("new", fields.ABSENT), bool(named)))
    return out


def changes_between(node_id: str, base: Mapping[str, Any], edited: Mapping[str, Any]) -> list[FieldChange]:
    """The field-level changes that turn ``base`` into ``edited`` (as an event records them):
    what a whole node edited in a text box amounts to."""
    rows = fields.node_change_json(node_id, base, edited)
    return [FieldChange(r["field"], r.get("old_value", fields.ABSENT), r.get("new_value", fields.ABSENT))
            for r in rows]


def field_problem(ptr: str) -> str | None:
    """Why a form may not change the field at ``ptr``, or None."""
    problem = fields.escape_problem(ptr)
    if problem:
        return problem
    try:
        tokens = fields.split(ptr)
    except ValueError:
        return f"field {ptr!r} is not a JSON pointer (it starts with '/')"
    if not tokens or any(t == "" for t in tokens):
        return f"field {ptr!r}: an empty field name"
    unsafe = next((t for t in tokens if t in UNSAFE_KEYS), None)
    if unsafe is not None:
        return (f"field {ptr!r}: a field cannot be called {unsafe!r} (a browser reads that name as "
                "part of its own machinery); choose another name")
    if tokens[0] not in EDITABLE:
        return f"field {ptr!r}: the {tokens[0]!r} of a node is not changed from a form"
    return None


def patch_node(wr: WorldRepo, node: str, changes: Iterable[FieldChange], *,
               force: Iterable[str] = ()) -> dict[str, Any]:
    """Apply ``changes`` to the node's file as it stands now (hand edits included), a hand
    edit the next event records; see the module docstring. Refused, nothing written, when a
    change is not the writer's to make, when a field changed meanwhile (:class:`ConflictError`
    with each field's three values), or when the node would not be valid."""
    from narrative.engine.handedit import check_new_relations
    from narrative.engine.naming import Names
    from narrative.ids import node_path
    from narrative.nodefile import parse_node_file
    from narrative.store import WorldView, file_digest, write_node

    wanted = list(changes)
    forced = set(force)
    for ch in wanted:
        problem = field_problem(ch.field)
        if problem:
            raise InvalidInputError(problem)
    with wr.lock:
        names = Names(wr)
        node_id = names.resolve(node, context="node")
        head = wr.head_commit()
        tree = head.tree if head else None
        current = WorldView(wr, tree, scan_for_reader(wr, tree)).get(node_id)
        if current is None:
            raise NotFoundError(f"no node {node_id!r} in the world")
        wanted = [FieldChange(ch.field, ch.old, names.resolve(ch.new, context=ch.field), False)
                  if ch.named else ch for ch in wanted]
        conflicts = []
        for ch in wanted:
            now = fields.get(current, ch.field)
            if fields.same(now, ch.new) or fields.same(now, ch.old) or ch.field in forced:
                continue
            row: dict[str, Any] = {"node": node_id, "field": ch.field}
            for key, value in (("was", ch.old), ("yours", ch.new), ("now", now)):
                if value is not fields.ABSENT:
                    row[key] = value
            conflicts.append(row)
        if conflicts:
            first = conflicts[0]
            raise ConflictError(
                f"{node_id}: {first['field']} changed since it was loaded (now "
                f"{fields.show(first.get('now', fields.ABSENT))}, yours "
                f"{fields.show(first.get('yours', fields.ABSENT))})"
                + (f", and {len(conflicts) - 1} more field{'s' if len(conflicts) > 2 else ''}"
                   if len(conflicts) > 1 else "") + "; nothing was written",
                conflicts=conflicts,
                hint="keep your value or the one now in the file, field by field, and save again")
        new: Any = copy.deepcopy(dict(current))
        changed = []
        for ch in wanted:
            if fields.same(fields.get(new, ch.field), ch.new):
                continue
            changed.append(ch.field)
            if ch.new is fields.ABSENT:
                fields.drop(new, ch.field)
            else:
                fields.put(new, ch.field, ch.new)
        path = node_path(node_id, current["layer"], wr.config.layout)
        if not changed:
            return {"path": path, "node": current, "file": file_digest(wr, path), "changed": []}
        data = json.dumps(new, ensure_ascii=False).encode("utf-8")
        parsed = parse_node_file(data, path, wr.config.layout)
        check_new_relations(wr, parsed, path)
        path = write_node(wr, parsed)
    return {"path": path, "node": parsed, "file": file_digest(wr, path), "changed": changed}


def form_offer(wr: WorldRepo, node: Mapping[str, Any], view: Any, kin: Iterable[str]) -> dict[str, Any]:
    """What a form offers beside ``node``'s own fields: ``fields`` the state and trait keys the
    nodes ``kin`` have (others of its layer and kind, read through ``view``, the world now:
    ``{"state": {key: how many}, "traits": ...}``), ``references`` the pointers among those and
    the node's own that hold a node's id, ``relation_types`` the types the world's relations
    use, most used first."""
    from narrative.engine.studio import relation_types
    from narrative.ids import id_problem

    offered: dict[str, dict[str, int]] = {"state": {}, "traits": {}}
    references = set(wr.config.reference_labels)
    for other in [node, *filter(None, (view.get(n) for n in kin))]:
        for group in ("state", "traits"):
            part = other.get(group)
            if not isinstance(part, Mapping):
                continue
            for key, value in part.items():
                if other is not node:
                    offered[group][key] = offered[group].get(key, 0) + 1
                if isinstance(value, str) and id_problem(value) is None and value != other.get("id") \
                        and view.exists(value):
                    references.add(fields.pointer(group, key))
    return {"fields": offered, "references": sorted(references), "relation_types": relation_types(wr)}
