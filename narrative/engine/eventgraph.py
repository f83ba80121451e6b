"""The event graph of one story line: its events, and which event depends on which.

The chain of first parents is the spine. A causal edge ``A -> B`` says B depends
on A: one of B's diffusions read a value A wrote (B's ``old_value`` on a field
equals what A left there, A being the last to write it before B), or B's record
names A among its ``causes``. The derived catalog works the edges out once per
commit (:meth:`narrative.store.catalog.story.StoryIndex.follow_chain`); this module loads a
chain's rows into networkx for the questions asked of it (ancestors, paths).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.store import EventInfo, WorldRepo, Write, resolve_rev

__all__ = ["EventInfo", "Story", "Write", "end_reason", "ended", "tip_of"]

if TYPE_CHECKING:
    import networkx as nx

    from narrative.store import Commit


def tip_of(wr: WorldRepo, rev: str | None = None) -> Commit | None:
    """The commit a query reads (HEAD, or ``rev``), with its chain indexed in the catalog."""
    commit = resolve_rev(wr, rev) if rev is not None else wr.head_commit()
    wr.catalog.graph.follow_chain(commit)
    return commit


class Story:
    """The events of one chain (newest first) and the causal graph between them.

    The chain is read from the catalog when first needed: a question about a few
    events (:meth:`event`, :meth:`ancestry`) reads only those.
    """

    def __init__(self, wr: WorldRepo, tip: str) -> None:
        self.wr = wr
        self.tip = tip
        self._events: list[EventInfo] | None = None
        self._by_commit: dict[str, EventInfo] | None = None
        self._graph: nx.DiGraph | None = None

    @property
    def events(self) -> list[EventInfo]:
        if self._events is None:
            self._events = self.wr.catalog.graph.chain_events(self.tip)
        return self._events

    @property
    def by_commit(self) -> dict[str, EventInfo]:
        if self._by_commit is None:
            self._by_commit = {e.commit: e for e in self.events}
        return self._by_commit

    def event(self, commit: str) -> EventInfo:
        """One commit of the chain, without reading the whole chain."""
        if self._by_commit is not None:
            return self._by_commit[commit]
        found = self.wr.catalog.graph.event_info(commit)
        if found is None:
            raise KeyError(commit)
        return found

    def first(self) -> EventInfo | None:
        """The oldest commit of the chain (its root, or the genesis ``init --here`` made)."""
        if self._events is not None:
            return self._events[-1] if self._events else None
        return self.wr.catalog.graph.chain_first(self.tip)

    @property
    def graph(self) -> nx.DiGraph:
        """Events as nodes (keyed by commit), an edge ``cause -> effect`` per dependency;
        each edge's ``reasons`` lists ``{"kind", "target", "field"}``."""
        if self._graph is None:
            import networkx as nx

            g = nx.DiGraph()
            for e in reversed(self.events):
                g.add_node(e.commit, seq=e.seq)
            for dep in self.wr.catalog.graph.chain_deps(self.tip):
                if not g.has_edge(dep.cause, dep.commit):
                    g.add_edge(dep.cause, dep.commit, reasons=[])
                g.edges[dep.cause, dep.commit]["reasons"].append(
                    {"kind": dep.kind, "target": dep.target, "field": dep.field})
            self._graph = g
        return self._graph

    def writes(self, target: str | None = None) -> list[Write]:
        return self.wr.catalog.graph.chain_writes(self.tip, target)

    def writes_of(self, commit: str) -> list[Write]:
        """The changes one event of the chain recorded, hand edits first."""
        return self.wr.catalog.graph.commit_writes(commit, self.seq_of(commit))

    def seq_of(self, commit: str) -> int:
        return self.event(commit).seq

    def ancestry(self, commit: str) -> list[dict[str, Any]]:
        """The events ``commit`` depends on, directly or not, newest first, each with the
        edges that lead from it towards ``commit``.

        Read with one recursive query over the causal edges, so it costs what the
        ancestry holds, not what the story holds.
        """
        rows = self.wr.catalog.graph.ancestry_edges(self.tip, commit)
        seq: dict[str, int] = {}
        led: dict[str, list[tuple[int, str, str, str, str]]] = {}
        for r in sorted(rows, key=lambda r: (r.effect, r.cause, r.target, r.field)):
            seq[r.effect], seq[r.cause] = r.effect_seq, r.cause_seq
            led.setdefault(r.cause, []).append((r.effect_seq, r.effect, r.kind, r.target, r.field))
        found = [c for c in led if c != commit]
        infos = {e.commit: e for e in self.wr.catalog.graph.event_infos(found)}
        out = []
        for a in sorted(found, key=lambda c: -seq[c]):
            edges = sorted(led[a], key=lambda t: -t[0])  # stable: reasons keep their order
            out.append({**infos[a].to_json(), "led_to": [
                {**self._named(b, infos), "kind": kind, "target": target, "field": field}
                for _, b, kind, target, field in edges]})
        return out

    def _named(self, commit: str, infos: dict[str, EventInfo]) -> dict[str, Any]:
        """An event as every answer names one: its id, commit and content."""
        if commit not in infos:
            infos[commit] = self.event(commit)
        e = infos[commit]
        return {"id": e.id, "commit": e.commit, "content": e.content}


def ended(wr: WorldRepo, node_id: str, tip: str | None = None) -> tuple[EventInfo, str] | None:
    """The event that removed ``node_id`` from the current story (or the story line ending
    at ``tip``, indexed already), and why, or None."""
    if tip is None:
        head = tip_of(wr)
        if head is None:
            return None
        tip = head.id
    story = Story(wr, tip)
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
