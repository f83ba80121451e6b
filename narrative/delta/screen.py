"""Guard rails between a diffuser's proposal and the event: arbitration, then op-by-op screening.

Every diffuser (rules, a language model, an external program) goes through the
same review, right after it proposes and before its proposal is merged with the
user's explicit changes:

1. Arbitration (:mod:`narrative.delta.arbiter`): a node it wants to create
   that the world already has becomes a reference to the existing node.
2. Screening: each proposed operation is tried, in order, on a scratch copy of
   the event. One that the user's own delta could not do either is refused:
   not a valid operation (unsafe id, bad field), a change of ``traits`` (the
   user's baseline), a node or relation target that does not exist, a node
   expired earlier in the event. Operations that would collide with the user's
   explicit changes (expiring or creating a node the user's changes use) are
   refused too, so the user's changes always win.

A refused operation is dropped, with the reason shown, and the rest of the
proposal stands: a diffuser is a guess about the user's words, and one wrong
guess (a model naming a node that does not exist) should not cost the whole
event. The user's explicit changes get no such leniency: if one of them is
invalid, the whole event fails and nothing changes. Nothing a diffuser proposes
can touch a file outside ``world/``: operations name nodes by id, and ids are
checked before any path is made from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, TypeAdapter, ValidationError

from narrative.delta.arbiter import arbitrate
from narrative.delta.draft import Draft
from narrative.delta.proposal import Proposal
from narrative.delta.request import EventRequest
from narrative.delta.world import World
from narrative.errors import InvalidWorldError
from narrative.ids import EVENT_ID_RE
from narrative.model import CreateOp, ExpireOp, Op, RelateOp, SetOp, UnrelateOp, UnsetOp
from narrative.nodefile import NodeDict, edges_of, validate

_OP = TypeAdapter(Op)


class Reviewed(Proposal):
    """A proposal after review: ``delta`` holds only what survived it."""

    proposed: list[dict[str, Any]] = Field(default_factory=list,
                                           description="The operations as the diffuser gave them.")
    arbitration: list[dict[str, Any]] = Field(default_factory=list)
    refused: list[dict[str, Any]] = Field(default_factory=list,
                                          description="Refused operations, each with its reason.")


def review(world: World, proposal: Proposal, request: EventRequest) -> Reviewed:
    """Arbitrate and screen ``proposal`` against the world and the user's explicit changes."""
    explicit = request.delta
    close_scene = request.close_scene or explicit.close_scene or proposal.delta.close_scene
    arbitrated, decisions = arbitrate(world, proposal.delta, close_scene=close_scene)
    accepted, refused = screen(world, arbitrated.ops, explicit.ops)
    notes = [*proposal.notes, *(d.note() for d in decisions)]
    notes.extend(f"refused {r['where']}: {r['reason']}" for r in refused)
    named = list(dict.fromkeys([*proposal.causes, *arbitrated.causes]))
    known = world.known_events([c for c in named if EVENT_ID_RE.match(c)])
    causes = [c for c in named if c in known]
    dropped = [c for c in named if c not in known]
    if dropped:
        notes.append(f"dropped causes that are not events of this story: {', '.join(dropped)}")
    return Reviewed(
        delta=arbitrated.model_copy(update={"ops": accepted, "causes": causes}),
        narrative_text=proposal.narrative_text,
        causes=[],
        notes=notes,
        raw_reply=proposal.raw_reply,
        held=proposal.held,
        origins=proposal.origins,
        proposed=[_dump(op) for op in proposal.delta.ops],
        arbitration=[d.to_json() for d in decisions],
        refused=refused,
    )


def screen(world: World, ops: Sequence[Op],
           explicit: Sequence[Op]) -> tuple[list[Op], list[dict[str, Any]]]:
    """The operations that can be applied in order, and the refused ones with their reasons."""
    draft = Draft(world, "review")
    will_create = {op.node.id for op in ops if isinstance(op, CreateOp)}
    used, user_creates, user_expires = _explicit_ids(explicit)
    accepted: list[tuple[int, Op]] = []
    refused: list[dict[str, Any]] = []
    pending: dict[int, set[str]] = {}  # accepted ops that need nodes created later on
    for i, op in enumerate(ops, 1):
        where = f"proposed op {i} ({_label(op)})"
        reason = _invalid(op)
        if reason is None:
            reason = _collides(op, used, user_creates, user_expires)
        waiting: set[str] = set()
        if reason is None:
            reason, waiting = _trial(draft, op, where, will_create)
        if reason is not None:
            refused.append({"index": i, "where": where, "op": _dump(op), "reason": reason})
            if isinstance(op, CreateOp):
                will_create.discard(op.node.id)
            continue
        accepted.append((i, op))
        if waiting:
            pending[i] = waiting
    # relations to nodes whose creation was refused after all
    for i, waiting in pending.items():
        missing = sorted(d for d in waiting if d not in draft.created)
        if missing:
            op = next(o for j, o in accepted if j == i)
            refused.append({"index": i, "where": f"proposed op {i} ({_label(op)})", "op": _dump(op),
                            "reason": f"no node {missing[0]!r} in the world (its creation was refused)"})
            accepted = [(j, o) for j, o in accepted if j != i]
    refused.sort(key=lambda r: int(r["index"]))
    return [op for _, op in accepted], refused


def _label(op: Op) -> str:
    if isinstance(op, SetOp | UnsetOp):
        return f"{op.op} {op.target} {op.field}"
    if isinstance(op, RelateOp | UnrelateOp):
        return f"{op.op} {op.source}:{op.type}:{op.target}"
    if isinstance(op, CreateOp):
        return f"create {op.node.id}"
    return f"{op.op} {op.target}"


def _dump(op: Op) -> dict[str, Any]:
    data: dict[str, Any] = op.model_dump(mode="json", warnings=False)
    return data


def _invalid(op: Op) -> str | None:
    """Why ``op`` is not a valid operation at all (a diffuser may build one unchecked)."""
    try:
        _OP.validate_python(_dump(op))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = "/".join(str(p) for p in first["loc"][1:])
        return f"not a valid operation: {loc}: {first['msg']}"
    return None


def _explicit_ids(explicit: Sequence[Op]) -> tuple[set[str], set[str], set[str]]:
    used: set[str] = set()
    creates: set[str] = set()
    expires: set[str] = set()
    for op in explicit:
        if isinstance(op, CreateOp):
            creates.add(op.node.id)
            used.add(op.node.id)
        elif isinstance(op, RelateOp | UnrelateOp):
            used |= {op.source, op.target}
        else:
            used.add(op.target)
            if isinstance(op, ExpireOp):
                expires.add(op.target)
    return used, creates, expires


def _collides(op: Op, used: set[str], user_creates: set[str], user_expires: set[str]) -> str | None:
    if isinstance(op, ExpireOp) and op.target in used:
        return f"the explicit changes of this event use {op.target}; they win"
    if isinstance(op, CreateOp) and op.node.id in user_creates | user_expires:
        return f"the explicit changes of this event create or expire {op.node.id}; they win"
    return None


def _subject(op: Op) -> str:
    """The node an operation changes."""
    if isinstance(op, CreateOp):
        return op.node.id
    if isinstance(op, RelateOp | UnrelateOp):
        return op.source
    return op.target


def _edges(node: NodeDict | None) -> set[str]:
    return {dst for _, dst in edges_of(node)}


def _trial(draft: Draft, op: Op, where: str, will_create: set[str]) -> tuple[str | None, set[str]]:
    """Apply ``op`` to the scratch draft; on a problem, undo it and say why.

    Beyond the draft's own rules, the node it changes must stay valid and its new
    relations must point at live nodes, or at nodes created later on, which are
    returned.
    """
    node_id = _subject(op)
    before = _edges(draft.current(node_id))
    waiting: set[str] = set()

    def check() -> str | None:
        if isinstance(op, ExpireOp):
            # A relation accepted earlier would point at a node this event ends: the later
            # guess loses, as a relation to a node expired earlier does.
            asked = next((w for w, r in draft.relates if r.target == op.target), None)
            if asked is not None:
                return f"{asked} relates to {op.target}, which this operation would expire"
        node = draft.current(node_id)
        if node is not None:
            try:
                validate(node, f"node {node_id}")
            except InvalidWorldError as exc:
                return (exc.details or [exc.message])[0]
        for dst in sorted(_edges(node) - before):
            if dst in draft.expired:
                return f"{node_id} would point at {dst}, which is expired earlier in this event"
            if draft.current(dst) is None:
                if dst not in will_create:
                    return f"{node_id} would point at {dst!r}: no such node in the world"
                waiting.add(dst)
        return None

    reason = draft.trial(op, where, check)
    return reason, (set() if reason is not None else waiting)
