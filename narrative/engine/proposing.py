"""A slow diffuser asked without the world's lock, its proposal checked again under it.

A model on a machine without a graphics card takes minutes to answer. Held through
that, the world's write lock turns every other command that writes (and every dry
run) away as busy. So a diffuser that says it is slow (``proposes_unlocked``, the
``llm`` one) is asked with no lock held, from the world as it stands then (hand
edits included), and every node it reads is noted as it was. Then the engine takes
the lock, reads the world again and, when anything moved in between:

- if none of the nodes the proposal was made from changed (those the diffuser read,
  those the brief named), the proposal stands: an event that touched other nodes is
  no reason to ask the model again;
- otherwise the diffuser is asked again, once, from the world as it now stands;
- if the world moves under that proposal too, nothing is written and the event is
  kept (:class:`~narrative.errors.ConflictError`): ``narr event --retry`` asks again.

A proposal made from one state never overwrites a change made after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from narrative import fields
from narrative.delta import overlay
from narrative.errors import ConflictError, InvalidWorldError
from narrative.nodefile import NodeDict
from narrative.store import WorldView, scan_for_reader

if TYPE_CHECKING:
    from narrative.delta.proposal import Diffuser, Proposal
    from narrative.delta.request import EventRequest
    from narrative.store import HandEdits, Tree, WorldRepo


def unlocked(wr: WorldRepo, diffuser: Diffuser | None) -> bool:
    """Whether this event's diffuser is asked without the lock: it asks to be, and nothing
    holds the lock already (a replay, a batch, a caller's own hold keep theirs)."""
    return (diffuser is not None and bool(getattr(diffuser, "proposes_unlocked", False))
            and not wr.lock.held and wr.batch is None)


class ReadingView(WorldView):
    """The world as an unlocked proposal sees it, noting each node read as it was then."""

    def __init__(self, wr: WorldRepo, tree: Tree | None, edits: HandEdits | None = None) -> None:
        super().__init__(wr, tree, edits)
        self.read: dict[str, str | None] = {}
        self.noting = False  # the brief reads far more than it tells: only its items count

    def get(self, node_id: str) -> NodeDict | None:
        node = super().get(node_id)
        if self.noting and node_id not in self.read:
            self.read[node_id] = fields.canonical(node) if node is not None else None
        return node


@dataclass
class Asked:
    """A proposal and the state of the world it was made from."""

    proposal: Proposal
    head: str | None
    edits: dict[str, str | None]  # the hand-edited paths and their blobs, as scanned
    read: dict[str, str | None] = field(default_factory=dict)  # node id -> its JSON (None: absent)


class Moved(Exception):
    """The nodes a proposal was made from changed before it could be applied."""

    def __init__(self, ids: list[str]) -> None:
        super().__init__(", ".join(ids))
        self.ids = ids


def ask(wr: WorldRepo, request: EventRequest, diffuser: Diffuser,
        briefed: Callable[[WorldView, EventRequest], EventRequest]) -> Asked:
    """The diffuser's proposal for ``request``, asked with no lock held."""
    from narrative.engine.adopt import unadopted
    from narrative.store import finish_interrupted

    finish_interrupted(wr)
    wr.require_branch()
    head = wr.head_commit()
    if head is None:
        raise InvalidWorldError("this world has no genesis commit", hint="narr init")
    edits = scan_for_reader(wr, head.tree)
    edits.raise_problems()
    if (buried := unadopted(wr, head)) is not None:
        raise buried
    view = ReadingView(wr, head.tree, edits)
    if request.edits:
        overlay.lay(view, request.edits)  # problems here are raised again under the lock
    asked = briefed(view, request)
    view.noting = True
    for item in (asked.brief or {}).get("items") or []:
        if isinstance(item.get("node"), str):
            view.get(item["node"])  # what the brief told of it is what it was then
    proposal = diffuser.propose(view, asked)
    return Asked(proposal, str(head.id), dict(edits.raw), dict(view.read))


def moved(asked: Asked, head: str | None, edits: HandEdits, view: WorldView) -> list[str]:
    """The nodes ``asked`` was made from that are not as they were ([]: none, or nothing moved)."""
    if head == asked.head and dict(edits.raw) == asked.edits:
        return []
    return sorted(i for i, was in asked.read.items()
                  if (fields.canonical(node) if (node := view.get(i)) is not None else None) != was)


def held_back(ids: list[str]) -> ConflictError:
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return ConflictError(
        f"the world changed while the model was asked, and again while it was asked once more "
        f"({shown} changed): nothing was written, so nothing made from an old state overwrites "
        "the new one", details=[f"{i} changed while the model was asked" for i in ids])
