"""What a change presumes of the world, checked on the event path before anything is written.

A diffuser reads words; the world may say they cannot be right. The rules diffuser checks
its own rules' preconditions (the giver holds the item, the teller knows the secret, the
actor is alive) and holds back what the world contradicts
(:mod:`narrative.diffusers.rules`). What is checked here holds for every event, whoever
proposed its changes:

- **A relation of a node to itself is never written** (:func:`self_relation`): "X trusts X"
  says nothing a graph can hold; a diffuser's such change is refused, the user's own is an
  invalid event.
- **Two changes to one field in one event are refused, naming both** (:func:`same_field`):
  the last would win silently, and which one the writer meant cannot be known. A field
  inside another (``/state`` and ``/state/mood``) is the same field; an append to a list
  (``/aliases/-``) is not.
- **The user's own changes are the writer's authority**: they are written, but each one that
  the world contradicts is named with the fact that contradicts it, as a typed
  :class:`Contradiction` the answer carries (:func:`contradicted`). The checks are those of
  the generic conventions every shipped rule set follows: a character dead when the event
  began does not act (gains no relation, has nothing of its state changed but where its
  body lies), and an item whose holder the world names is not given to another while that
  holder keeps it.

Each check reads the world as the event found it and as the event's earlier changes left
it (the draft), so it costs a few dictionary reads per operation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.model import ExpireOp, Op, RelateOp, SetOp, UnrelateOp, UnsetOp

if TYPE_CHECKING:
    from narrative.delta.draft import Draft

DEAD = "dead"
# what may change of a character dead when the event began: where the body lies
_BODY_FIELDS = ("/state/location",)


@dataclass(frozen=True)
class Contradiction:
    """One of the user's changes, and the fact of the world that contradicts it."""

    where: str  # "op 2 (relate)"
    change: str  # "relate ray-dunn:holds:narcotics-key"
    node: str
    field: str  # a JSON pointer into ``node``
    value: Any  # what the world holds there (fields.ABSENT: nothing)
    wanted: str  # what the change presumes, in words

    @property
    def fact(self) -> str:
        """``zhou-min /relations/holds/narcotics-key is {}, but ...``."""
        held = "absent" if self.value is fields.ABSENT else json.dumps(self.value, ensure_ascii=False)
        return f"{self.node} {self.field} is {held}, but {self.wanted}"

    def describe(self) -> str:
        return f"{self.change}: the world contradicts it: {self.fact}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "contradicted", "where": self.where, "change": self.change,
                               "node": self.node, "field": self.field, "wanted": self.wanted,
                               "fact": self.fact}
        if self.value is not fields.ABSENT:
            out["value"] = self.value
        return out


def self_relation(op: Op) -> str | None:
    """Why ``op`` is refused when it relates a node to itself (None: it does not)."""
    if isinstance(op, RelateOp) and op.source == op.target:
        return (f"{op.source} {op.type} {op.target}: a node is never related to itself "
                "(a relation joins two nodes)")
    return None


def _pointer(op: Op) -> tuple[str, str] | None:
    """The node and the field ``op`` changes (an edge is the field /relations/TYPE/TARGET)."""
    if isinstance(op, SetOp | UnsetOp):
        return op.target, op.field
    if isinstance(op, RelateOp | UnrelateOp):
        return op.source, fields.pointer("relations", op.type, op.target)
    return None


def _overlap(a: str, b: str) -> bool:
    if a.endswith("/-") or b.endswith("/-"):
        return False  # appends to a list: each adds its own element
    return a == b or a.startswith(b + "/") or b.startswith(a + "/") or "" in (a, b)


def same_field(ops: Sequence[Op], where: Iterable[str] | None = None) -> list[str]:
    """Problems of a delta that changes one field twice: ``op 1 (set lin-yuan state.mood) and op 3
    (unset lin-yuan state.mood) both change lin-yuan /state/mood: ...``; ``where`` labels the
    operations (``op N`` by default)."""
    labels = list(where) if where is not None else [f"op {i}" for i in range(1, len(ops) + 1)]
    seen: dict[str, list[tuple[str, int]]] = {}  # node -> (field, index)
    problems: list[str] = []
    for i, op in enumerate(ops):
        found = _pointer(op)
        if found is None:
            continue
        node, ptr = found
        earlier = seen.setdefault(node, [])
        clash = next(((f, j) for f, j in earlier if _overlap(f, ptr)), None)
        if clash is not None:
            shared, j = clash
            if ops[j] == op:
                continue  # the same change twice (an import naming one edge in two notes): one change
            problems.append(f"{labels[j]} ({_said(ops[j])}) and {labels[i]} ({_said(op)}) both "
                            f"change {node} {min(shared, ptr, key=len) or '(the whole node)'}: "
                            "an event changes a field once; keep the change you mean")
            continue
        earlier.append((ptr, i))
    return problems


def _said(op: Op) -> str:
    from narrative.delta.draft import describe

    return describe(op)


def _health(node: Any) -> Any:
    if not isinstance(node, dict):
        return fields.ABSENT
    state = node.get("state")
    return state.get("health", fields.ABSENT) if isinstance(state, dict) else fields.ABSENT


def contradicted(draft: Draft, ops: Sequence[tuple[str, Op]]) -> list[Contradiction]:
    """The user's changes (``(where, op)``, applied already) that the world contradicts."""
    out: list[Contradiction] = []
    for where, op in ops:
        out.extend(_dead_actor(draft, where, op))
    for where, op in ops:
        out.extend(_held_by_another(draft, where, op))
    return out


def _dead_actor(draft: Draft, where: str, op: Op) -> list[Contradiction]:
    """A character dead when the event began, made to act: a relation of its own, a change of
    its state beyond where its body lies."""
    if isinstance(op, UnrelateOp | UnsetOp | ExpireOp):
        return []  # the dead lose what they had
    found = _pointer(op)
    if found is None:
        return []
    node_id, ptr = found
    before = draft.world.get(node_id)
    if before is None or before.get("layer") != "character" or _health(before) != DEAD:
        return []
    if isinstance(op, SetOp) and (ptr in _BODY_FIELDS or (ptr == "/state/health"
                                  and op.value == DEAD)):
        return []
    if isinstance(op, SetOp) and fields.same(fields.get(before, ptr), op.value):
        return []  # nothing changes
    return [Contradiction(where, _said(op), node_id, "/state/health", DEAD,
                          f"must not be {json.dumps(DEAD)}: the dead do not act")]


def _held_by_another(draft: Draft, where: str, op: Op) -> list[Contradiction]:
    """An item given to someone while the holder the world names keeps it."""
    if not isinstance(op, RelateOp) or op.type != "holds":
        return []
    item = draft.world.get(op.target)
    holder = (item or {}).get("state", {}).get("holder") if isinstance((item or {}).get("state"),
                                                                         dict) else None
    if not isinstance(holder, str) or holder == op.source:
        return []
    keeps = draft.current(holder)
    if keeps is None:
        return []
    held = ((keeps.get("relations") or {}).get("holds") or {})
    if not isinstance(held, dict) or op.target not in held:
        return []
    return [Contradiction(where, _said(op), holder, fields.pointer("relations", "holds", op.target),
                          held[op.target],
                          f"must not be there: {op.target} is {holder}'s, and this event does not "
                          f"take it from {holder}")]
