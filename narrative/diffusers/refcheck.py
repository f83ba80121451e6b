"""Values that must name a node: a model's ``state.location`` is checked like an id.

A node's ``state.location`` holds the id of a place, an item's ``state.holder`` the id
of whoever holds it, and a world declares more such fields in ``narr.toml``
(``[references]``, :mod:`narrative.config`). Small models fill them with words
("the ferry", "Lin Yuan's room"); written as they are, the world graph loses the
edge and every later event reads a place that is not there. So each value a
proposal puts in such a field must be a node's id, a node the same proposal (or
the writer's explicit changes) creates, or the value already there. A value that
is a node's exact name or alias, and only one node's, is taken as that node's id,
as ``--set`` does; anything else is a problem for the repair turn, which names the
nodes the words could mean, and is never written.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.ids import normalize_name
from narrative.model import CreateOp, Delta, Op, SetOp
from narrative.nodefile import NodeDict

if TYPE_CHECKING:
    from narrative.delta.world import World

MAX_CANDIDATES = 5


def check(world: World, delta: Delta, explicit: Delta, references: Collection[str],
          shown: Mapping[str, NodeDict]) -> tuple[Delta, list[str], list[str]]:
    """``delta`` with names in reference fields turned into ids, the problems left, and notes."""
    created = {op.node.id for op in [*delta.ops, *explicit.ops] if isinstance(op, CreateOp)}
    problems: list[str] = []
    notes: list[str] = []
    ops: list[Op] = []
    for n, op in enumerate(delta.ops, 1):
        ops.append(_op(world, op, n, references, created, shown, problems, notes))
    return delta.model_copy(update={"ops": ops}), problems, notes


def _op(world: World, op: Op, n: int, references: Collection[str], created: set[str],
        shown: Mapping[str, NodeDict], problems: list[str], notes: list[str]) -> Op:
    if isinstance(op, CreateOp):
        node = op.node.model_dump(mode="json")
        changed = False
        for ref in references:
            value = fields.get(node, ref)
            if value is fields.ABSENT:
                continue
            fixed = _value(world, value, fields.ABSENT, created)
            if fixed is None:
                problems.append(_problem(world, f"op {n} (create {op.node.id})", ref, value, shown))
            elif fixed != value:
                fields.put(node, ref, fixed)
                notes.append(f"op {n}: took {value!r} in {ref} for {fixed}")
                changed = True
        return CreateOp.model_validate({"op": "create", "node": node}) if changed else op
    if not isinstance(op, SetOp):
        return op
    current = world.get(op.target)
    value = op.value
    changed = False
    for ref in references:
        if ref == op.field:
            found = value
        elif ref.startswith(op.field.rstrip("/") + "/") and isinstance(value, Mapping):
            found = fields.get(value, ref[len(op.field.rstrip("/")):])
        else:
            continue
        if found is fields.ABSENT:
            continue
        before = fields.get(current, ref) if current is not None else fields.ABSENT
        fixed = _value(world, found, before, created)
        if fixed is None:
            problems.append(_problem(world, f"op {n} (set {op.target})", ref, found, shown))
        elif fixed != found:
            notes.append(f"op {n}: took {found!r} in {ref} for {fixed}")
            if ref == op.field:
                value = fixed
            else:
                value = _copy(value)
                fields.put(value, ref[len(op.field.rstrip("/")):], fixed)
            changed = True
    return op.model_copy(update={"value": value}) if changed else op


def _copy(value: Any) -> Any:
    import copy

    return copy.deepcopy(value)


def _value(world: World, value: Any, before: Any, created: set[str]) -> Any:
    """The id ``value`` stands for, or None when it names no node."""
    if before is not fields.ABSENT and fields.same(value, before):
        return value  # left as it was: not this proposal's claim
    if not isinstance(value, str) or not value.strip():
        return None
    if value in created or world.exists(value):
        return value
    hits = world.ids_by_name({normalize_name(value)}).get(normalize_name(value), set())
    return next(iter(hits)) if len(hits) == 1 else None


def _problem(world: World, where: str, ref: str, value: Any, shown: Mapping[str, NodeDict]) -> str:
    found = candidates(world, value, shown)
    could = ("it could mean " + ", ".join(f"{i} ({name})" for i, name in found) if found else
             "no node is called anything like it: use the id of a node shown, create the node in "
             "the same reply, or leave the field alone")
    return f"{where} {ref}: {fields.show(value)} names no node; {ref} holds a node's id; {could}"


def candidates(world: World, value: Any, shown: Mapping[str, NodeDict]) -> list[tuple[str, str]]:
    """Nodes the words could mean: those whose names the value contains (the whole world's
    names, as an event's words are read), then the nodes shown whose names are close to it."""
    from narrative.diffusers.context import find_mentions

    if not isinstance(value, str) or not value.strip():
        return []
    out: dict[str, str] = {}
    for mention in find_mentions(world, value[:200]):
        for node_id in mention.ids:
            node = shown.get(node_id) or world.get(node_id)
            if node is not None:
                out.setdefault(node_id, str(node.get("name", node_id)))
    names = {normalize_name(str(n.get("name", i))): i for i, n in shown.items()}
    names.update({i: i for i in shown})
    for close in difflib.get_close_matches(normalize_name(value), list(names), n=MAX_CANDIDATES,
                                           cutoff=0.6):
        node_id = names[close]
        out.setdefault(node_id, str(shown[node_id].get("name", node_id)))
    return list(out.items())[:MAX_CANDIDATES]
