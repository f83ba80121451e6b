"""Applying a delta to the world, in memory, with every rule checked before anything is written.

A :class:`Draft` holds only the nodes an event touches. Operations are applied
in order; problems are collected (not raised one by one) so a user or a model
sees everything wrong with a delta at once. Lifecycle expiry and the removal of
relations that would dangle happen here too (:meth:`Draft.finish`), so they are
recorded as ordinary diffusions and a reset brings them back.

The draft owns its state: :meth:`Draft.trial` tries one operation and undoes
everything it did when it is refused, so screening a proposal op by op never
leaves a refused operation's traces for the next one to trip over.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from narrative import fields
from narrative.delta.preconditions import Contradiction, contradicted, self_relation
from narrative.delta.world import World
from narrative.errors import InvalidWorldError
from narrative.ids import id_problem
from narrative.model import (
    Change,
    CreateOp,
    Delta,
    ExpireOp,
    Op,
    RelateOp,
    SetOp,
    UnrelateOp,
    UnsetOp,
)
from narrative.nodefile import NodeDict, as_node_dict, edges_of, json_problem
from narrative.nodefile import validate as validate_node

BY_EVENT = "expired by the event"  # an expire operation, as opposed to a lifecycle
SETTABLE = ("name", "kind", "aliases", "summary", "lifecycle", "state", "relations", "tags",
            "sections", "always_in_view", "extensions")
_FORBIDDEN = {
    "traits": "traits are the node's baseline: only the user changes them, by editing the file "
              "(narr edit {id}); the next event records that edit",
    "id": "a node's id cannot change (it is the file name); create a new node instead",
    "layer": "a node's layer cannot change through a delta; move the file by hand if you must",
    "created_by_event": "created_by_event is set by narr",
}


@dataclass(frozen=True)
class Checkpoint:
    """Everything a draft holds at one moment, to go back to."""

    nodes: dict[str, NodeDict | None]
    order: list[str]
    created: set[str]
    expired: dict[str, str]
    changed: dict[str, str]
    changed_proposed: dict[str, str]
    relates: list[tuple[str, RelateOp]]
    problems: int
    warnings: int


class Draft:
    def __init__(self, world: World, event_id: str) -> None:
        self.world = world
        self.event_id = event_id
        self.nodes: dict[str, NodeDict | None] = {}
        self.order: list[str] = []
        self.created: set[str] = set()
        self.expired: dict[str, str] = {}  # id -> why
        self.changed: dict[str, str] = {}  # id -> the first explicit operation that changed it
        self.changed_proposed: dict[str, str] = {}  # the same, for a diffuser's operations
        self._proposing = False
        self.problems: list[str] = []
        self.warnings: list[str] = []
        # Hand-edited files whose relations point at nodes gone after the event: the
        # world is what is wrong there, not the delta (found by finish()).
        self.edit_problems: list[str] = []
        self.relates: list[tuple[str, RelateOp]] = []  # checked whatever becomes of the source
        # the user's own changes that the world contradicts: written, and named in the answer
        self.contradictions: list[Contradiction] = []
        # "op 6 (unset)" -> "unset lin-yuan state.mood": a warning names what a writer sees
        # (the node and field), where an error keeps the op's number for a program's delta.
        self._said: dict[str, str] = {}

    # --- checkpoints --------------------------------------------------------------------

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(copy.deepcopy(self.nodes), list(self.order), set(self.created),
                          dict(self.expired), dict(self.changed), dict(self.changed_proposed),
                          list(self.relates), len(self.problems), len(self.warnings))

    def rollback(self, cp: Checkpoint) -> None:
        """Back to ``cp``: nodes, bookkeeping, and the problems and warnings raised since."""
        self.nodes, self.order, self.created = cp.nodes, cp.order, cp.created
        self.expired, self.changed, self.changed_proposed = cp.expired, cp.changed, cp.changed_proposed
        self.relates = cp.relates
        del self.problems[cp.problems:]
        del self.warnings[cp.warnings:]

    def trial(self, op: Op, where: str, check: Callable[[], str | None] | None = None) -> str | None:
        """Apply ``op``; if it raises a problem, or ``check()`` then names one, undo all
        it did and return that problem (None: the operation stays applied)."""
        cp = self.checkpoint()
        self.apply_op(op, where)
        if len(self.problems) > cp.problems:
            reason: str | None = self.problems[cp.problems].removeprefix(f"{where}: ")
        else:
            reason = check() if check is not None else None
        if reason is not None:
            self.rollback(cp)
        return reason

    # --- state ------------------------------------------------------------------------

    def current(self, node_id: str) -> NodeDict | None:
        if node_id in self.nodes:
            return self.nodes[node_id]
        return self.world.get(node_id)

    def exists(self, node_id: str) -> bool:
        """Whether the node exists after the event so far (cheap: no file is parsed)."""
        if node_id in self.nodes:
            return self.nodes[node_id] is not None
        return self.world.exists(node_id)

    def _touch(self, node_id: str) -> NodeDict | None:
        if node_id not in self.nodes:
            base = self.world.get(node_id)
            self.nodes[node_id] = copy.deepcopy(base) if base is not None else None
            self.order.append(node_id)
        return self.nodes[node_id]

    def _live(self, node_id: str, where: str) -> NodeDict | None:
        problem = id_problem(node_id)
        if problem:
            self.problems.append(f"{where}: {problem}")
            return None
        if node_id in self.expired:
            self.problems.append(f"{where}: node {node_id!r} is expired by this same event")
            return None
        if self.current(node_id) is None:
            self.problems.append(f"{where}: no node {node_id!r} in the world{self._why_missing(node_id)}")
            return None
        return self._touch(node_id)

    def _changing(self, node_id: str, where: str) -> NodeDict | None:
        node = self._live(node_id, where)
        if node is not None:
            (self.changed_proposed if self._proposing else self.changed).setdefault(node_id, where)
        return node

    def _why_missing(self, node_id: str) -> str:
        edit = self.world.edits.get(node_id)
        if edit is not None and edit.new is None:
            return f" (its file {edit.old_path} was deleted by hand)"
        return ""

    # --- operations -------------------------------------------------------------------

    def apply(self, delta: Delta, proposed: int = 0) -> None:
        """Apply every operation; the first ``proposed`` ones came from a diffuser.

        A diffuser's change to a node that ends in this same event is dropped with
        a warning; the user's own is refused, because what they typed would vanish.
        """
        explicit: list[tuple[str, Op]] = []
        for i, op in enumerate(delta.ops, 1):
            self._proposing = i <= proposed
            where = f"op {i} ({op.op})"
            self._said[where] = describe(op)
            self.apply_op(op, where)
            if not self._proposing:
                explicit.append((where, op))
        self._proposing = False
        if explicit and not self.problems:
            self.contradictions = contradicted(self, explicit)

    def said(self, where: str) -> str:
        """The change ``where`` names, in a writer's words (``unset lin-yuan state.mood``)."""
        return self._said.get(where, where)

    def apply_op(self, op: Op, where: str) -> None:
        if isinstance(op, SetOp | UnsetOp):
            self._set_or_unset(op, where)
        elif isinstance(op, RelateOp):
            self._relate(op, where)
        elif isinstance(op, UnrelateOp):
            self._unrelate(op, where)
        elif isinstance(op, CreateOp):
            self._create(op, where)
        elif isinstance(op, ExpireOp):
            self._expire_op(op, where)

    def _set_or_unset(self, op: SetOp | UnsetOp, where: str) -> None:
        tokens = fields.split(op.field)
        head = tokens[0]
        if head in _FORBIDDEN:
            self.problems.append(f"{where}: {op.target} {op.field}: " +
                                 _FORBIDDEN[head].format(id=op.target))
            return
        if head not in SETTABLE:
            near = fields.hint_for_missing({key: None for key in SETTABLE}, fields.pointer(head))
            self.problems.append(
                f"{where}: {op.target} {op.field}: {head!r} is not a node field "
                f"({near + '; ' if near else ''}a delta may change {', '.join(SETTABLE)})"
            )
            return
        node = self._changing(op.target, where)
        if node is None:
            return
        if isinstance(op, SetOp):
            problem = _set(node, tokens, copy.deepcopy(op.value))
        else:
            problem = None
            if not fields.drop(node, op.field):
                near = fields.hint_for_missing(node, op.field)
                self.warnings.append(f"{self.said(where)}: it was already absent, nothing to unset"
                                     + (f" ({near})" if near else ""))
        if problem:
            self.problems.append(f"{where}: {op.target} {op.field}: {problem}")

    def _relate(self, op: RelateOp, where: str) -> None:
        if op.source == op.target:
            self.problems.append(f"{where}: {self_relation(op)}")
            return
        node = self._changing(op.source, where)
        if node is None:
            return
        # Whether op.target is live is checked in validate(): it may be created later on.
        self.relates.append((where, op))
        # An existing edge keeps its attributes; the op's are merged over them.
        targets = node.setdefault("relations", {}).setdefault(op.type, {})
        targets[op.target] = {**targets.get(op.target, {}), **copy.deepcopy(op.attrs)}

    def _unrelate(self, op: UnrelateOp, where: str) -> None:
        node = self._changing(op.source, where)
        if node is None:
            return
        targets = node.get("relations", {}).get(op.type, {})
        if op.target not in targets:
            self.warnings.append(
                f"{self.said(where)}: {op.source} has no {op.type!r} relation to {op.target}; "
                "nothing to remove"
            )
            return
        del targets[op.target]
        if not targets:
            del node["relations"][op.type]

    def _create(self, op: CreateOp, where: str) -> None:
        node = as_node_dict(op.node.model_dump(mode="json"))
        node_id = node["id"]
        if node_id in self.created:
            self.problems.append(f"{where}: node {node_id!r} is created twice in this event")
            return
        existing = self.current(node_id)
        if existing is not None:
            self.problems.append(
                f"{where}: node {node_id!r} already exists ({self.world.path(existing)})"
            )
            return
        if node_id in self.expired:
            self.problems.append(f"{where}: node {node_id!r} is expired by this same event")
            return
        node["created_by_event"] = self.event_id
        self._touch(node_id)
        self.nodes[node_id] = node
        self.created.add(node_id)

    def _expire_op(self, op: ExpireOp, where: str) -> None:
        if op.target in self.created:
            self.problems.append(f"{where}: node {op.target!r} is created and expired in one event")
            return
        if op.target in self.changed:
            self.problems.append(f"{where}: node {op.target!r} is changed by {self.changed[op.target]} "
                                 "and expired in the same event: the change would be lost")
            return
        if self._live(op.target, where) is None:
            return
        if op.target in self.changed_proposed:
            self.warnings.append(f"{self.said(self.changed_proposed[op.target])}: dropped, {op.target} "
                                 f"is expired by {self.said(where)}")
        self.expire(op.target, BY_EVENT)

    def expire(self, node_id: str, why: str) -> None:
        self._touch(node_id)
        self.nodes[node_id] = None
        self.expired[node_id] = why

    # --- the end of the event -------------------------------------------------------------

    def finish(self, *, close_scene: bool, lifecycles: bool = True) -> None:
        """Everything an event does after its operations: expire what it outlives, drop
        relations that would dangle, validate every touched node, check hand-edited files.
        ``lifecycles`` False ends nothing: a chapter's own commit, which records the hand
        edits before the chapter's events, is no event of the story.

        Problems land in :attr:`problems` (the delta is wrong) and :attr:`edit_problems`
        (a hand-edited file is).
        """
        if lifecycles:
            self.expire_lifecycles(close_scene)
        self.drop_dangling()
        self.validate()
        self.edit_problems = self._edit_relation_problems()

    def finals(self) -> dict[str, NodeDict | None]:
        """Every node whose committed state the event changes: hand edits it absorbs, then its own."""
        out: dict[str, NodeDict | None] = {i: e.new for i, e in self.world.edits.items()}
        out.update(self.nodes)
        return out

    def _edit_relation_problems(self) -> list[str]:
        """Hand-edited relations must point at nodes that exist after the event."""
        problems = []
        for node_id, e in self.world.edits.items():
            if e.new is None or node_id in self.nodes:
                continue  # touched nodes were validated by the draft
            for rtype, dst in edges_of(e.new):
                if not self.exists(dst):
                    problems.append(f"{e.new_path}: field /relations/{rtype}/{dst}: "
                                    "points at a node that does not exist")
        return problems

    # --- lifecycles and dangling relations ---------------------------------------------

    def expire_lifecycles(self, close_scene: bool) -> None:
        """End the transient nodes this event outlives.

        ``event`` nodes committed before this event end now; ``scene`` nodes end when
        the event closes the scene. Nodes entering the world in this event (created by
        it, or made by hand since the last one) live on into the next, and so does a
        node whose lifecycle this event changed to something that does not end now.
        """
        lifecycles = {"event", "scene"} if close_scene else {"event"}
        # Committed with a lifecycle that ends now; a lifecycle set during this event
        # (by hand or by the delta) takes effect from the next one.
        for node_id in sorted(self.world.transient(lifecycles)):
            if node_id in self.expired or node_id in self.created:
                continue
            node = self.current(node_id)
            if node is None or node.get("lifecycle") not in lifecycles:
                continue
            if self.world.committed_path(node_id) is None:
                continue
            why = "scene closed" if node["lifecycle"] == "scene" else "event lifecycle"
            first = self.changed.get(node_id) or self.changed_proposed.get(node_id)
            if first is not None:
                self.warnings.append(f"{self.said(first)}: dropped, {node_id} ends with this event ({why})")
            self.expire(node_id, why)

    def drop_dangling(self) -> None:
        """Remove relations that point at nodes this event removed (or the user deleted)."""
        gone = set(self.expired)
        gone.update(i for i, e in self.world.edits.items() if e.new is None)
        if not gone:
            return
        sources = {src for src, _, _ in self.world.incoming(gone)} | set(self.nodes)
        for src in sorted(sources):
            if src in gone:
                continue
            node = self.current(src)
            if node is None:
                continue
            rels = node.get("relations", {})
            if not isinstance(rels, dict):
                continue  # not relations at all: validation names the field
            hits = [(t, d) for t, targets in rels.items() if isinstance(targets, dict)
                    for d in targets if d in gone]
            if not hits:
                continue
            node = self._touch(src)
            assert node is not None
            for rtype, dst in hits:
                del node["relations"][rtype][dst]
                if not node["relations"][rtype]:
                    del node["relations"][rtype]

    # --- final validation -------------------------------------------------------------

    def validate(self) -> None:
        """Every touched node valid, unchanged in id and layer, with live relations."""
        for node_id in self.order:
            node = self.nodes[node_id]
            if node is None:
                continue
            problem = json_problem(node)  # the file must read back: depth counts from the node
            if problem:
                self.problems.append(f"node {node_id}: {problem}")
                continue
            before = self.world.get(node_id)
            try:
                canonical = validate_node(node, f"node {node_id}")
            except InvalidWorldError as exc:  # reported as a problem of the delta
                self.problems.extend(exc.details or [exc.message])
                continue
            self.nodes[node_id] = canonical
            if canonical["id"] != node_id:
                self.problems.append(f"node {node_id}: field /id cannot change")
            if before is not None and canonical["layer"] != before["layer"]:
                self.problems.append(f"node {node_id}: field /layer cannot change through a delta")
            for rtype, targets in canonical["relations"].items():
                for dst in targets:
                    if dst in self.expired:
                        self.problems.append(
                            f"node {node_id}: relation {rtype}->{dst} points at a node this event expires"
                        )
                    elif not self.exists(dst):
                        self.problems.append(
                            f"node {node_id}: relation {rtype}->{dst} points at a node that does not exist"
                        )

        for where, op in self.relates:
            # A relation asked for must make sense even when its source ends with this
            # event: it would otherwise vanish with the source, unnoticed.
            what = f"{where}: {op.source} {op.type}->{op.target}"
            why = self.expired.get(op.target)
            if why == BY_EVENT:
                self.problems.append(f"{what}: points at a node this event expires")
            elif why is not None:
                self.warnings.append(f"{self.said(where)}: dropped, {op.target} ends with this event ({why})")
            elif op.source in self.expired and not self.exists(op.target):
                self.problems.append(f"{what}: points at a node that does not exist")

    def diffusions(self) -> list[Change]:
        out: list[Change] = []
        for node_id in self.order:
            out.extend(fields.node_changes(node_id, self.world.get(node_id), self.nodes[node_id]))
        return out


def _set(node: NodeDict, tokens: list[str], value: Any) -> str | None:
    """Set ``value`` at ``tokens``, creating missing objects on the way; a problem or None."""
    cur: Any = node
    for depth, token in enumerate(tokens[:-1]):
        if isinstance(cur, dict):
            if token not in cur:
                cur[token] = {}
            cur = cur[token]
        elif isinstance(cur, list):
            if not token.isdigit() or int(token) >= len(cur):
                return f"no element {token} in the list at {fields.pointer(*tokens[:depth])}"
            cur = cur[int(token)]
        else:
            return f"{fields.pointer(*tokens[: depth + 1])} is not an object"
    last = tokens[-1]
    if isinstance(cur, dict):
        cur[last] = value
    elif isinstance(cur, list):
        if last == "-":
            cur.append(value)
        elif last.isdigit() and int(last) < len(cur):
            cur[int(last)] = value
        else:
            return f"no element {last} in the list (use '-' to append)"
    else:
        return f"{fields.pointer(*tokens[:-1])} is not an object"
    return None


def describe(op: Op) -> str:
    """An operation as a writer would say it: ``set lin-yuan state.mood``, ``relate a:knows:b``."""
    if isinstance(op, SetOp | UnsetOp):
        return f"{op.op} {op.target} {'.'.join(fields.split(op.field))}"
    if isinstance(op, RelateOp | UnrelateOp):
        return f"{op.op} {op.source}:{op.type}:{op.target}"
    if isinstance(op, CreateOp):
        return f"create {op.node.id}"
    return f"{op.op} {op.target}"
