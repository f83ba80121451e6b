"""``narr brief``: what a writer (or a model) needs in hand before the next event, within a budget.

The pack is deterministic: the same world and the same question give the same
items in the same order, each with the ``reason`` it is there. In order of
priority: hand edits not yet recorded (they override the history), the focus
nodes (given, or named in the goal as ``narr event`` finds names), the last
events, continuity facts about the characters around them (where they are, what
they hold, which secrets they know, who is dead), then the focus nodes'
neighbourhood in the world graph ranked by distance, then by how recently an
event changed them, and failed events waiting for a retry. Items are taken in
that order while they fit the budget (characters of text); those that do not
fit are counted, never cut in half.

Without a goal or focus, the focus is what the last events changed: where the
story stands. With ``pov``, the pack keeps to what that character can know:
itself and what it holds, its relations and their targets, its location and
whoever is there, the secrets it ``knows`` (other secrets are left out), and the
events that name or change any of those (the present location stands in for
"where they were": the records do not keep where everyone stood at each event).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from narrative import fields
from narrative.diffusers.context import find_mentions
from narrative.engine import failed
from narrative.engine.eventgraph import Story, tip_of
from narrative.engine.graphs import world_graph
from narrative.engine.history_of import mentions
from narrative.errors import InvalidInputError, NotFoundError
from narrative.ids import check_id
from narrative.nodefile import NodeDict, edges_of, names_of
from narrative.store import worktree
from narrative.store.view import WorldView
from narrative.store.worldrepo import WorldRepo

DEFAULT_BUDGET = 4000
RECENT = 5
RADIUS = 2
MAX_NEIGHBOURS = 30


@dataclass
class Brief:
    goal: str | None
    pov: str | None
    budget: int
    head: dict[str, Any] | None
    focus: list[str]
    items: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0

    @property
    def used(self) -> int:
        return sum(len(i["text"]) for i in self.items)

    def to_json(self) -> dict[str, Any]:
        return {"goal": self.goal, "pov": self.pov, "budget": self.budget, "used": self.used,
                "dropped": self.dropped, "head": self.head, "focus": self.focus, "items": self.items}


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)


def node_line(node: NodeDict, name_of: dict[str, str], can_see: Any = None) -> str:
    """One line that says what a node is and how it stands (relations to what ``can_see``)."""
    head = f"{node.get('name', '')} ({node.get('id')}, {node.get('layer')}"
    head += f"/{node['kind']})" if node.get("kind") else ")"
    summary = str(node.get("summary", "")).strip().rstrip(".")
    parts = [head + (f": {summary}" if summary else "")]
    state = node.get("state") or {}
    if state:
        parts.append("state: " + ", ".join(f"{k}={_value(v)}" for k, v in sorted(state.items())))
    rels: dict[str, list[str]] = {}
    for rtype, dst in edges_of(node):
        if can_see is not None and not can_see(dst):
            continue
        rels.setdefault(rtype, []).append(name_of.get(dst, dst))
    if rels:
        parts.append("relations: " + "; ".join(f"{t} {', '.join(sorted(d))}"
                                                for t, d in sorted(rels.items())))
    return ". ".join(parts) + "."


class _Pack:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.items: list[dict[str, Any]] = []
        self.dropped = 0
        self.used = 0
        self.seen: set[tuple[str, str]] = set()

    def add(self, section: str, reason: str, text: str, **extra: Any) -> None:
        key = (section, text)
        if key in self.seen:
            return
        self.seen.add(key)
        if self.used + len(text) > self.budget:
            self.dropped += 1
            return
        self.used += len(text)
        self.items.append({"section": section, "reason": reason, "text": text, **extra})


def brief(wr: WorldRepo, goal: str | None = None, focus: list[str] | tuple[str, ...] = (),
          budget: int = DEFAULT_BUDGET, pov: str | None = None) -> Brief:
    if budget < 1:
        raise InvalidInputError("--budget must be at least 1 character")
    for node_id in [*focus, *([pov] if pov else [])]:
        check_id(node_id)
    head = tip_of(wr)
    if head is None:
        raise NotFoundError("the story has no events yet")
    edits = worktree.scan_for_reader(wr, head.tree)
    view = WorldView(wr, head.tree, edits)
    story = Story(wr, str(head.id))
    graph = world_graph(wr)
    for node_id, hand in edits.edits.items():  # the graph as the user sees it: hand edits included
        if node_id in graph:
            graph.remove_edges_from(list(graph.out_edges(node_id, keys=True)))
        if hand.new is None:
            if node_id in graph:
                graph.remove_node(node_id)
            continue
        graph.add_node(node_id, label=hand.new.get("name", node_id))
        for rtype, dst in edges_of(hand.new):
            graph.add_edge(node_id, dst, key=rtype)
    name_of = {n: str(d.get("label") or n) for n, d in graph.nodes(data=True)}
    for node_id in [*focus, *([pov] if pov else [])]:
        if not view.exists(node_id):
            raise NotFoundError(f"no node {node_id!r} in the world", hint="narr nodes lists the nodes")

    visible: set[str] | None = None
    if pov is not None:
        visible = _visible_to(view, pov)

    def can_see(node_id: str) -> bool:
        return visible is None or node_id in visible

    reasons: dict[str, str] = {}
    if focus:
        for node_id in focus:
            reasons.setdefault(node_id, "asked for with --focus")
    if goal:
        for m in find_mentions(view, goal):
            for node_id in m.ids:
                reasons.setdefault(node_id, f"named in the goal as {m.text!r}")
    if not goal and not focus:
        for e in story.events[:3]:
            for w in story.writes_of(e.commit):
                if view.exists(w.target):
                    reasons.setdefault(w.target, f"changed by the recent event {e.content!r}")
    if pov is not None:
        reasons.setdefault(pov, "the point of view")
        loc = ((view.get(pov) or {}).get("state") or {}).get("location")
        for node_id in sorted(visible or ()):
            node = view.get(node_id)
            if node is not None and (node.get("state") or {}).get("location") == loc:
                reasons.setdefault(node_id, f"at {name_of.get(str(loc), loc)}, where {pov} is")
    focus_ids = [n for n in reasons if can_see(n)]

    pack = _Pack(budget)
    for node_id in sorted(edits.edits):
        hand = edits.edits[node_id]
        if not can_see(node_id):
            continue
        for ch in fields.node_changes(node_id, hand.old, hand.new):
            d = ch.model_dump(mode="json")
            old = json.dumps(d["old_value"], ensure_ascii=False) if "old_value" in d else "(absent)"
            new = json.dumps(d["new_value"], ensure_ascii=False) if "new_value" in d else "(absent)"
            pack.add("hand edits", "a hand edit not yet recorded: it overrides the history",
                     f"{node_id} {ch.field}: {old} → {new}", node=node_id)

    for node_id in focus_ids:
        node = view.get(node_id)
        if node is not None:
            pack.add("focus", reasons[node_id], node_line(node, name_of, can_see), node=node_id)

    shown = 0
    for e in story.events:
        if shown >= RECENT or e.kind == "genesis":
            break
        if visible is not None and not _event_visible(story, e.commit, e.content, visible, view):
            continue
        shown += 1
        pack.add("events", "one of the last events" if visible is None
                 else f"one of the last events {pov} knows of",
                 f"{e.content}" + (f" [{e.timestamp}]" if e.timestamp else ""),
                 event=e.id, commit=e.commit)

    neighbours = _neighbourhood(graph, story, focus_ids, can_see)
    characters = [n for n in [*focus_ids, *(n for n, _, _ in neighbours)]
                  if (view.get(n) or {}).get("layer") == "character"]
    for node_id in characters:
        node = view.get(node_id)
        if node is None:
            continue
        for reason, text in _facts(node, name_of, can_see):
            pack.add("continuity", reason, text, node=node_id)

    for node_id, dist, ago in neighbours:
        node = view.get(node_id)
        if node is None:
            continue
        when = "never changed by an event" if ago is None else (
            "changed by the last event" if ago == 0 else f"changed {ago} events ago")
        pack.add("neighbourhood", f"{dist} relation{'s' if dist > 1 else ''} from the focus, {when}",
                 node_line(node, name_of, can_see), node=node_id)

    if visible is None:
        for f in failed.listing(wr):
            pack.add("failed", "an event that failed and waits for narr failed retry",
                     f"{f['content']}: {f['error']}")
    return Brief(goal, pov, budget, story.events[0].to_json() if story.events else None,
                 focus_ids, pack.items, pack.dropped)


def _neighbourhood(graph: Any, story: Story, focus: list[str], can_see: Any
                   ) -> list[tuple[str, int, int | None]]:
    """``(node, distance, events since it last changed)``, nearest and freshest first."""
    import networkx as nx

    undirected = graph.to_undirected(as_view=True)
    dist: dict[str, int] = {}
    for f in focus:
        if f in undirected:
            for n, d in nx.single_source_shortest_path_length(undirected, f, cutoff=RADIUS).items():
                if n not in focus and can_see(n):
                    dist[n] = min(d, dist.get(n, d))
    newest = story.events[0].seq if story.events else 0
    rows = []
    for n, d in dist.items():
        writes = [w for w in story.writes(n) if story.by_commit[w.commit].kind == "event"]
        ago = newest - writes[-1].seq if writes else None
        rows.append((n, d, ago))
    rows.sort(key=lambda r: (r[1], r[2] if r[2] is not None else 1 << 30, r[0]))
    return rows[:MAX_NEIGHBOURS]


def _facts(node: NodeDict, name_of: dict[str, str], can_see: Any) -> list[tuple[str, str]]:
    name = node.get("name", node.get("id", ""))
    state = node.get("state") or {}
    out = []
    if state.get("health") == "dead" or state.get("alive") is False or state.get("status") == "dead":
        out.append(("continuity: who is dead", f"{name} is dead"))
    loc = state.get("location")
    if isinstance(loc, str):
        out.append(("continuity: where everyone is", f"{name} is at {name_of.get(loc, loc)}"))
    rels = node.get("relations") or {}
    held = sorted(name_of.get(d, d) for d in rels.get("holds", {}) if can_see(d))
    if held:
        out.append(("continuity: who holds what", f"{name} holds {', '.join(held)}"))
    known = sorted(name_of.get(d, d) for d in rels.get("knows", {}) if can_see(d))
    if known:
        out.append(("continuity: who knows what", f"{name} knows {', '.join(known)}"))
    return out


def _visible_to(view: WorldView, pov: str) -> set[str]:
    """The nodes ``pov`` can know of: itself, its relations' targets (secrets only through
    ``knows``), its location and whoever shares it, and what those hold."""
    me = view.get(pov)
    assert me is not None
    seen = {pov}
    for rtype, dst in edges_of(me):
        if rtype == "knows" or not _is_secret(view.get(dst)):
            seen.add(dst)
    loc = (me.get("state") or {}).get("location")
    if isinstance(loc, str):
        seen.add(loc)
        there = {n for n, _ in view.wr.catalog.search_nodes([loc], 100_000)} | set(view.edits)
        for n in sorted(there):
            node = view.get(n) if n not in seen else None
            if node is not None and (node.get("state") or {}).get("location") == loc:
                seen.add(n)
                seen.update(d for t, d in edges_of(node) if t == "holds")
    return {n for n in seen if n == pov or not _is_secret(view.get(n))
            or n in dict((d, t) for t, d in edges_of(me) if t == "knows")}


def _is_secret(node: NodeDict | None) -> bool:
    return node is not None and node.get("kind") == "secret"


def _event_visible(story: Story, commit: str, content: str, visible: set[str], view: WorldView) -> bool:
    if any(w.target in visible for w in story.writes_of(commit)):
        return True
    names: set[str] = set()
    for n in visible:
        node = view.get(n)
        if node is not None:
            names |= names_of(node)
    return mentions(content, names)
