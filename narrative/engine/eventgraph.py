"""The event graph of one story line: its events, and which event depends on which.

The chain of first parents is the spine. A causal edge ``A -> B`` says B depends
on A: one of B's diffusions read a value A wrote (B's ``old_value`` on a field
equals what A left there, A being the last to write it before B), or B's record
names A among its ``causes``. The derived catalog works the edges out once per
commit (:meth:`narrative.store.catalog.Catalog.follow_chain`); this module loads a
chain's rows into networkx for the questions asked of it (ancestors, paths).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.store import history
from narrative.store.worldrepo import WorldRepo

if TYPE_CHECKING:
    import networkx as nx
    import pygit2


@dataclass(frozen=True)
class EventInfo:
    """One commit of the story line as the catalog describes it."""

    commit: str
    seq: int
    id: str | None
    kind: str
    content: str
    narrative: str | None
    timestamp: str | None
    created_at: str | None
    close_scene: bool

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "id": self.id, "kind": self.kind, "content": self.content,
                "timestamp": self.timestamp}


@dataclass(frozen=True)
class Write:
    """One recorded change on the chain; ``old``/``new`` are ABSENT when the field was not there."""

    commit: str
    seq: int
    pos: int
    source: str  # "diffusion" or "edit" (a hand edit the event recorded)
    target: str
    field: str
    old: Any
    new: Any

    def change(self) -> dict[str, Any]:
        out: dict[str, Any] = {"target": self.target, "field": self.field}
        if self.old is not fields.ABSENT:
            out["old_value"] = self.old
        if self.new is not fields.ABSENT:
            out["new_value"] = self.new
        return out


def write_of(row: tuple[Any, ...]) -> Write:
    commit, seq, pos, source, target, field, old, new = row
    return Write(commit, seq, pos, source, target, field,
                 json.loads(old) if old is not None else fields.ABSENT,
                 json.loads(new) if new is not None else fields.ABSENT)


def tip_of(wr: WorldRepo, rev: str | None = None) -> pygit2.Commit | None:
    """The commit a query reads (HEAD, or ``rev``), with its chain indexed in the catalog."""
    commit = history.resolve(wr, rev) if rev is not None else wr.head_commit()
    wr.catalog.follow_chain(wr.repo, commit)
    return commit


class Story:
    """The events of one chain (newest first) and the causal graph between them."""

    def __init__(self, wr: WorldRepo, tip: str) -> None:
        self.wr = wr
        self.tip = tip
        self.events = [EventInfo(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], bool(r[8]))
                       for r in wr.catalog.chain_rows(tip)]
        self.by_commit = {e.commit: e for e in self.events}
        self._graph: nx.DiGraph | None = None

    @property
    def graph(self) -> nx.DiGraph:
        """Events as nodes (keyed by commit), an edge ``cause -> effect`` per dependency;
        each edge's ``reasons`` lists ``{"kind", "target", "field"}``."""
        if self._graph is None:
            import networkx as nx

            g = nx.DiGraph()
            for e in reversed(self.events):
                g.add_node(e.commit, seq=e.seq)
            for commit, cause, kind, target, field in self.wr.catalog.chain_deps(self.tip):
                if not g.has_edge(cause, commit):
                    g.add_edge(cause, commit, reasons=[])
                g.edges[cause, commit]["reasons"].append(
                    {"kind": kind, "target": target, "field": field})
            self._graph = g
        return self._graph

    def writes(self, target: str | None = None) -> list[Write]:
        return [write_of(r) for r in self.wr.catalog.chain_writes(self.tip, target)]

    def writes_of(self, commit: str) -> list[Write]:
        """The changes one event of the chain recorded, hand edits first."""
        return [write_of(r) for r in self.wr.catalog.commit_writes(commit, self.seq_of(commit))]

    def seq_of(self, commit: str) -> int:
        return self.by_commit[commit].seq

    def ancestry(self, commit: str) -> list[dict[str, Any]]:
        """The events ``commit`` depends on, directly or not, newest first, each with the
        edges that lead from it towards ``commit``."""
        import networkx as nx

        g = self.graph
        if commit not in g:
            return []
        found = nx.ancestors(g, commit)
        keep = found | {commit}
        out = []
        for a in sorted(found, key=lambda c: -self.by_commit[c].seq):
            led = []
            for _, b, data in sorted(g.out_edges(a, data=True), key=lambda t: -self.by_commit[t[1]].seq):
                if b in keep:
                    for reason in data["reasons"]:
                        led.append({"event": self.by_commit[b].id, "commit": b, **reason})
            out.append({**self.by_commit[a].to_json(), "led_to": led})
        return out


def ended(wr: WorldRepo, node_id: str) -> tuple[EventInfo, str] | None:
    """The event that removed ``node_id`` from the current story, and why, or None."""
    head = tip_of(wr)
    if head is None:
        return None
    story = Story(wr, str(head.id))
    for w in reversed(story.writes(node_id)):
        if w.field != "":
            continue
        if w.new is not fields.ABSENT:
            return None  # the node came back (or was created) after any removal
        return story.by_commit[w.commit], end_reason(w, story.by_commit[w.commit])
    return None


def end_reason(w: Write, event: EventInfo) -> str:
    """Why a recorded removal ended a node: its lifecycle, the scene closing, or an expire."""
    if w.source == "edit":
        return "its file was deleted by hand"
    lifecycle = w.old.get("lifecycle") if isinstance(w.old, dict) else None
    if lifecycle == "event":
        return "event lifecycle"
    if lifecycle == "scene" and event.close_scene:
        return "scene closed"
    return "expired"
