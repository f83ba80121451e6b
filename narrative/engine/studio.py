"""What the studio (the browser front end of ``narr serve``) draws: both graphs, cut to what fits.

A browser cannot lay out ten thousand nodes at once, so :func:`world_view` never
sends them all: it lists the nodes the filters and the search select (names as
text, at most ``limit`` of them) and draws at most ``draw`` of them, the
neighbourhood of the focus when there is one, else the best connected of the
selection, with the relations between the drawn nodes. :func:`event_view` is the
current story line (newest first) with its causal edges, the abandoned chains
and the branches. Both only read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from narrative.engine.graphs import event_graph, world_graph
from narrative.errors import InvalidInputError, NotFoundError
from narrative.ids import LAYERS, check_id, normalize_name
from narrative.store import history, worktree
from narrative.store.worldrepo import WorldRepo

if TYPE_CHECKING:
    import networkx as nx

LIST_LIMIT = 200
DRAW_LIMIT = 150
MAX_DEPTH = 3
LIFECYCLES = ("permanent", "scene", "event")


@dataclass
class WorldView:
    at: str | None  # the commit shown, or None for HEAD with the hand edits
    total: int
    matched: int
    listed: list[dict[str, Any]]
    drawn: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    focus: str | None
    depth: int
    facets: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "total": self.total, "matched": self.matched,
                "nodes": self.listed, "truncated": self.matched > len(self.listed),
                "graph": {"nodes": self.drawn, "edges": self.edges},
                "focus": self.focus, "depth": self.depth, "facets": self.facets}


def _choices(values: Iterable[str] | None, known: Iterable[str] | None, what: str) -> set[str]:
    chosen = {v for v in (values or ()) if v}
    if known is not None:
        unknown = sorted(chosen - set(known))
        if unknown:
            raise InvalidInputError(f"unknown {what} {unknown[0]!r}; expected one of {', '.join(known)}")
    return chosen


def _names(wr: WorldRepo, at: str | None, g: nx.MultiDiGraph) -> dict[str, list[str]]:
    """Every node's normalised name and aliases, by id."""
    out: dict[str, list[str]] = {n: [normalize_name(str(d.get("label") or ""))]
                                 for n, d in g.nodes(data=True)}
    if at is None:
        for norm, node_id in wr.catalog.names():
            out.setdefault(node_id, []).append(norm)
        return out
    from narrative.engine.nodes import nodes_in

    for node_id, node in nodes_in(wr, history.resolve(wr, at).tree).items():
        aliases = node.get("aliases") or []
        out.setdefault(node_id, []).extend(normalize_name(str(a)) for a in aliases)
    return out


def _overlay_edits(wr: WorldRepo, g: nx.MultiDiGraph) -> None:
    """Mark the hand-edited nodes (and show their edited name, layer, kind, lifecycle)."""
    head = wr.head_commit()
    if head is None:
        return
    edits = worktree.scan_for_reader(wr, head.tree)
    for node_id, e in edits.edits.items():
        if e.new is None:
            if node_id in g:
                g.nodes[node_id]["edited"] = "deleted"
            continue
        new = e.new
        g.add_node(node_id, label=new.get("name", ""), layer=new.get("layer", ""),
                   kind=new.get("kind", ""), lifecycle=new.get("lifecycle", "permanent"),
                   edited="modified" if node_id in g else "new")


def world_view(wr: WorldRepo, at: str | None = None, around: str | None = None, depth: int = 1,
               layers: Iterable[str] | None = None, kinds: Iterable[str] | None = None,
               lifecycles: Iterable[str] | None = None, query: str | None = None,
               limit: int = LIST_LIMIT, draw: int = DRAW_LIMIT) -> WorldView:
    """The world (at HEAD with the hand edits, or as of revision ``at``) cut for drawing.

    The filters (layers, kinds, lifecycles: any of each; ``query``: a piece of a
    name, an alias or an id) select nodes; ``around`` draws the focus and its
    neighbours ``depth`` relations away (whatever the filters), else the best
    connected of the selection are drawn.
    """
    import networkx as nx

    if not 0 <= depth <= MAX_DEPTH:
        raise InvalidInputError(f"depth must be between 0 and {MAX_DEPTH}, not {depth}")
    if limit < 0 or draw < 0:
        raise InvalidInputError("limit and draw must be 0 or more")
    want_layers = _choices(layers, LAYERS, "layer")
    want_lifecycles = _choices(lifecycles, LIFECYCLES, "lifecycle")
    want_kinds = _choices(kinds, None, "kind")
    commit = str(history.resolve(wr, at).id) if at is not None else None
    g = world_graph(wr, commit)
    if commit is None:
        _overlay_edits(wr, g)
    names = _names(wr, commit, g)
    needle = normalize_name(query or "")
    facets: dict[str, dict[str, int]] = {"layer": {}, "kind": {}, "lifecycle": {}}
    selected: list[str] = []
    for node_id, data in g.nodes(data=True):
        for facet in ("layer", "kind", "lifecycle"):
            value = str(data.get(facet) or "")
            facets[facet][value] = facets[facet].get(value, 0) + 1
        if want_layers and data.get("layer") not in want_layers:
            continue
        if want_kinds and data.get("kind") not in want_kinds:
            continue
        if want_lifecycles and data.get("lifecycle") not in want_lifecycles:
            continue
        if needle and needle not in node_id and not any(needle in n for n in names.get(node_id, ())):
            continue
        selected.append(node_id)
    undirected = g.to_undirected(as_view=True)

    def rank(node_id: str) -> tuple[int, str]:
        exact = needle and (needle == node_id or needle in names.get(node_id, ()))
        return (0 if exact else 1, node_id)

    selected.sort(key=rank)
    if around is not None:
        check_id(around)
        if around not in g:
            raise NotFoundError(f"no node {around!r} in the world" + (f" at {at}" if at else ""),
                                hint="narr nodes lists the nodes")
        ring = nx.single_source_shortest_path_length(undirected, around, cutoff=depth)
        keep = sorted(ring, key=lambda n: (ring[n], -undirected.degree(n), n))[:max(draw, 1)]
    else:
        keep = sorted(selected, key=lambda n: (-undirected.degree(n), n))[:draw]
    kept = set(keep)
    drawn = [_node_row(node_id, g.nodes[node_id], undirected.degree(node_id)) for node_id in keep]
    edges = [{"source": a, "target": b, "type": key}
             for a, b, key in g.edges(keys=True) if a in kept and b in kept]
    listed = [_node_row(node_id, g.nodes[node_id], None) for node_id in selected[:limit]]
    for row in [*listed, *drawn]:
        # Names in other scripts (Chinese) survive normalisation unchanged: shown beside the name.
        row["aliases"] = sorted({n for n in names.get(row["id"], ()) if not n.isascii()})[:3]
    return WorldView(commit, g.number_of_nodes(), len(selected), listed, drawn, edges, around,
                     depth, facets)


def _node_row(node_id: str, data: dict[str, Any], degree: int | None) -> dict[str, Any]:
    row = {"id": node_id, "name": data.get("label") or node_id, "layer": data.get("layer", ""),
           "kind": data.get("kind", ""), "lifecycle": data.get("lifecycle", "permanent"),
           "edited": data.get("edited")}
    if degree is not None:
        row["degree"] = degree
    return row


@dataclass
class EventView:
    branch: str | None
    events: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    chains: list[dict[str, Any]]
    branches: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"branch": self.branch, "events": self.events, "edges": self.edges,
                "chains": self.chains, "branches": self.branches}


def event_view(wr: WorldRepo) -> EventView:
    """The current story line, newest first, with its causal edges, abandoned chains and branches."""
    from narrative.engine.branches import list_branches
    from narrative.engine.replay import list_chains

    g, story = event_graph(wr)
    events = []
    if story is not None:
        for e in story.events:
            deps = g.in_degree(e.commit) if e.commit in g else 0
            events.append({"commit": e.commit, "id": e.id, "seq": e.seq, "kind": e.kind,
                           "content": e.content, "timestamp": e.timestamp,
                           "created_at": e.created_at, "close_scene": e.close_scene,
                           "causes": deps})
    edges = [{"source": a, "target": b, "label": data.get("label", "")}
             for a, b, data in g.edges(data=True)]
    return EventView(wr.branch(), events, edges, list_chains(wr), list_branches(wr))
