"""``narr threads``: the story's open threads, stalest first, and the secrets nobody has learned.

A thread is foreshadowing kept as data: a node of kind ``thread`` (or ``hook``, as
other story-memory tools call them; in any layer, the sample world keeps them in
``background``) whose ``state.status`` is
``open``, ``progressing``, ``deferred`` or ``resolved``, whose ``state.payoff``
says what would pay it off, and whose ``depends-on`` relations name the threads
that must be resolved first. A thread *moves* when an event changes its node (a
status, a payoff, a relation, or a hand edit the event recorded); the ranking
counts the events since it last moved, read from the event graph in the derived
catalog, so it costs a few queries however long the story. Threads nobody has
touched for longest come first: those are the ones a writer forgets.

A secret (kind ``secret``) nobody has learned is one no node ``knows``: no
relation of that type points at it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from narrative.answers import Answer, Shape
from narrative.engine.eventgraph import EventInfo, tip_of
from narrative.errors import NotFoundError
from narrative.nodefile import NodeDict, edges_of
from narrative.shapes import EventRef, Obj
from narrative.store import WorldRepo

THREAD_KINDS = frozenset({"thread", "hook"})
SECRET_KIND = "secret"
STATUSES = ("open", "progressing", "deferred", "resolved")
DEPENDS_ON = "depends-on"


@dataclass
class Thread:
    id: str
    name: str
    status: str
    payoff: str | None
    depends_on: list[str]
    waiting_on: list[str]  # dependencies not resolved yet
    concerns: list[str]  # every other node the thread points at
    last_moved: EventInfo | None  # the last event that changed the thread (None: none since it began)
    events_since: int
    edited: bool = False

    @property
    def resolved(self) -> bool:
        return self.status == "resolved"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "status": self.status, "payoff": self.payoff,
                "depends_on": self.depends_on, "waiting_on": self.waiting_on,
                "concerns": self.concerns,
                "last_moved": self.last_moved.to_json() if self.last_moved else None,
                "events_since": self.events_since, "edited": self.edited}


class ThreadRow(Shape):
    """A story thread: its ``status`` (open, progressing, deferred, resolved), its ``payoff``,
    the threads it waits on, the nodes it concerns, and the last event that moved it with the
    events told since."""

    id: str
    name: str
    status: str
    payoff: str | None
    depends_on: list[str]
    waiting_on: list[str]
    concerns: list[str]
    last_moved: EventRef | None
    events_since: int
    edited: bool


class Threads(Answer):
    """Open story threads, stalest first, with what each waits for; the secrets nobody knows."""

    NAME: ClassVar[str] = "threads"

    head: EventRef | None
    threads: list[ThreadRow]
    resolved_left_out: int
    secrets: list[Obj]


def status_of(node: NodeDict) -> str:
    status = (node.get("state") or {}).get("status")
    return status if isinstance(status, str) and status.strip() else "open"


def threads(wr: WorldRepo, at: str | None = None, *, include_resolved: bool = False) -> Threads:
    """The threads of the world at HEAD (hand edits included) or at ``at``, stalest first."""
    head = tip_of(wr, at)
    if head is None:
        raise NotFoundError("the story has no events yet")
    view = None
    if at is None:
        from narrative.store import WorldView, scan_for_reader

        view = WorldView(wr, head.tree, scan_for_reader(wr, head.tree))
    found, unknown = read_threads(wr, head, view)
    kept = found if include_resolved else [t for t in found if not t.resolved]
    row = wr.catalog.graph.event_info(head.id)
    return Threads.model_validate({"head": row.to_json() if row else None,
                                   "threads": [t.to_json() for t in kept],
                                   "resolved_left_out": len(found) - len(kept), "secrets": unknown})


def read_threads(wr: WorldRepo, head: Any, view: Any = None
                 ) -> tuple[list[Thread], list[dict[str, Any]]]:
    """Every thread, stalest first (the resolved last), and the secrets nobody knows, in the
    world of ``view`` (the edited world at HEAD), else in the committed tree of ``head``."""
    tip = head.id
    nodes, edited, unknown = _read(wr, head, view)
    cache = wr.catalog
    moved = cache.graph.last_writes(tip, nodes, kinds=("event", "merge"))
    status = {i: status_of(n) for i, n in nodes.items()}
    infos = {e.commit: e for e in cache.graph.event_infos(w.commit for w in moved.values())}
    lasts = {node_id: infos[moved[node_id].commit] for node_id in nodes if node_id in moved}
    since = cache.graph.events_after_each(tip, [-1, *(last.seq for last in lasts.values())])
    out: list[Thread] = []
    for node_id, node in nodes.items():
        deps = sorted(d for t, d in edges_of(node) if t == DEPENDS_ON)
        last = lasts.get(node_id)
        state = node.get("state") or {}
        payoff = state.get("payoff")
        out.append(Thread(
            id=node_id, name=str(node.get("name", "")), status=status[node_id],
            payoff=payoff if isinstance(payoff, str) else None, depends_on=deps,
            waiting_on=[d for d in deps if status.get(d, "open") != "resolved"],
            concerns=sorted({d for t, d in edges_of(node) if t != DEPENDS_ON}),
            last_moved=last, events_since=since[last.seq if last else -1],
            edited=node_id in edited))
    out.sort(key=lambda t: (t.resolved, -t.events_since, t.id))
    return out, unknown


def _read(wr: WorldRepo, head: Any, view: Any
          ) -> tuple[dict[str, NodeDict], set[str], list[dict[str, Any]]]:
    """The thread nodes, the ids among them edited by hand, and the unknown secrets."""
    if view is None:  # a past world: read from its commit (the catalog describes HEAD only)
        from narrative.store import nodes_in

        every = nodes_in(wr, head.tree)
        found = {i: n for i, n in every.items() if n.get("kind") in THREAD_KINDS}
        known = {d for n in every.values() for t, d in edges_of(n) if t == "knows"}
        secrets = [_secret(i, n) for i, n in sorted(every.items())
                   if n.get("kind") == SECRET_KIND and i not in known]
        return found, set(), secrets
    found = {i: n for i, n in view.get_many(view.ids_of_kind(THREAD_KINDS)).items()
             if n.get("kind") in THREAD_KINDS}
    secret_ids = view.ids_of_kind({SECRET_KIND})
    known = {dst for _, t, dst in view.incoming(secret_ids) if t == "knows"}
    unknown = view.get_many(i for i in secret_ids if i not in known)
    secrets = [_secret(i, n) for i, n in unknown.items()]
    return found, set(found) & set(view.edits), secrets


def _secret(node_id: str, node: NodeDict) -> dict[str, Any]:
    return {"id": node_id, "name": str(node.get("name", "")), "summary": str(node.get("summary", ""))}


def describe(t: Thread, name_of: Any = None) -> str:
    """One line for a thread: name, status, payoff, what it waits for."""
    def named(i: str) -> str:
        return str(name_of(i)) if name_of is not None else i

    text = f"{t.name} ({t.id}): {t.status}"
    if t.payoff:
        text += f"; payoff: {t.payoff}"
    if t.waiting_on:
        text += f"; waits for {', '.join(named(d) for d in t.waiting_on)}"
    return text


def moved_text(t: Thread | ThreadRow) -> str:
    """How long a thread has waited: ``moved by the last event``, ``3 events since it last moved``."""
    n = t.events_since
    events = f"{n} event{'s' if n != 1 else ''}"
    if t.last_moved is None:
        return f"not moved in the {events} so far" if n else "no event yet"
    return "moved by the last event" if n == 0 else f"{events} since it last moved"
