"""``narr graph``: the world graph and the event graph as networkx graphs, exported for viewers.

The world graph is the committed world at HEAD read from the catalog (nodes and
relations, never a scan of the files), with an edge for each reference field
that names a node of the world (``state.location`` drawn "at", ``state.holder``
"held by", and those the world declares in ``narr.toml``): where someone stands is
part of the graph, so two people at one place are connected through it. Each edge
carries ``kind`` ("relation" or "reference") and, for a reference, its ``field``;
a reference edge is keyed by its field's pointer, so it never stands in for a
relation of the same name. The event graph is the current story
line's causal graph (:mod:`narrative.engine.eventgraph`). Both can be cut down to
the neighbourhood of one node or event. Formats: Graphviz ``dot``, ``mermaid``
(renders in Markdown on GitHub), ``graphml`` (networkx's writer, for Gephi or
yEd) and ``json`` (networkx's node-link form). ``connect`` finds the shortest
chains of relations between two nodes, walked in either direction.
"""

from __future__ import annotations

import io
import itertools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.engine.eventgraph import Story, tip_of
from narrative.errors import InvalidInputError, NotFoundError, Step
from narrative.ids import check_id
from narrative.nodefile import edges_of
from narrative.store import WorldRepo, resolve_rev

if TYPE_CHECKING:
    import networkx as nx

FORMATS = ("dot", "mermaid", "graphml", "json")
MAX_PATHS = 10


@dataclass
class GraphExport:
    which: str  # "world" or "events"
    format: str
    nodes: int
    edges: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"graph": self.which, "format": self.format, "nodes": self.nodes,
                "edges": self.edges, "output": self.text}


def world_graph(wr: WorldRepo, at: str | None = None) -> nx.MultiDiGraph:
    """Every committed node (with its name, layer, kind), every relation keyed by its type
    and every reference field naming a node, keyed by the field.

    At HEAD the catalog answers; at an earlier revision (``at``) the nodes are read
    from that commit's tree, in the same order, so both give the same output for HEAD.
    """
    import networkx as nx

    labels = wr.config.reference_labels
    g = nx.MultiDiGraph()
    if at is not None:
        from narrative.store import nodes_in

        nodes = nodes_in(wr, resolve_rev(wr, at).tree)
        for node_id in sorted(nodes):
            n = nodes[node_id]
            g.add_node(node_id, label=n.get("name", ""), layer=n.get("layer", ""),
                       kind=n.get("kind", ""), lifecycle=n.get("lifecycle", "permanent"))
        edges = sorted((src, rtype, dst) for src in nodes
                       for rtype, dst in edges_of(nodes[src]) if dst in nodes)
        refs = sorted((src, fld, dst) for src in nodes
                      for fld, _, dst in fields.reference_edges(nodes[src], labels) if dst in nodes)
    else:
        head = wr.head_commit()
        if head is None:
            return g
        cache = wr.catalog_at(head.tree)
        for node_id, layer, kind, name, lifecycle in sorted(cache.listing()):
            g.add_node(node_id, label=name, layer=layer, kind=kind, lifecycle=lifecycle)
        edges = sorted(cache.incoming([n for n in g.nodes]))
        refs = sorted(r for r in cache.all_references(labels) if r.src != r.dst)
    for src, rtype, dst in edges:
        g.add_edge(src, dst, key=rtype, label=rtype, kind="relation")
    for src, fld, dst in refs:
        g.add_edge(src, dst, key=fld, label=labels[fld], kind="reference", field=fld)
    return g


def event_graph(wr: WorldRepo) -> tuple[nx.DiGraph, Story | None]:
    """The events of the current story line and their causal edges (cause -> effect)."""
    import networkx as nx

    head = tip_of(wr)
    if head is None:
        return nx.DiGraph(), None
    story = Story(wr, head.id)
    g = nx.DiGraph()
    for e in reversed(story.events):
        g.add_node(e.commit, label=e.content, event_id=e.id or "", seq=e.seq, kind=e.kind)
    for a, b, data in story.graph.edges(data=True):
        reasons = sorted({f"{r['target']}{r['field']}" if r["kind"] == "read" else "declared"
                          for r in data["reasons"]})
        g.add_edge(a, b, label=", ".join(reasons))
    return g, story


def _around(g: nx.Graph, center: str, depth: int) -> nx.Graph:
    import networkx as nx

    if center not in g:
        raise NotFoundError(f"{center!r} is not in the graph")
    keep = nx.ego_graph(g.to_undirected(as_view=True), center, radius=depth).nodes
    return g.subgraph(keep).copy()


def export_graph(wr: WorldRepo, which: str, fmt: str = "dot", around: str | None = None,
                 depth: int = 1, at: str | None = None) -> GraphExport:
    """The world graph (at HEAD, or as of revision ``at``) or the event graph, rendered."""
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if depth < 0:
        raise InvalidInputError("--depth must be 0 or more")
    if at is not None and which != "world":
        raise InvalidInputError("--at is for the world graph; the event graph is the current story line's")
    if which == "world":
        g: Any = world_graph(wr, at)
        if around is not None:
            check_id(around)
            g = _around(g, around, depth)
    elif which == "events":
        g, _ = event_graph(wr)
        if around is not None:
            g = _around(g, resolve_rev(wr, around).id, depth)
    else:
        raise InvalidInputError(f"unknown graph {which!r}; expected world or events")
    return GraphExport(which, fmt, g.number_of_nodes(), g.number_of_edges(), render(g, fmt))


def render(g: nx.Graph, fmt: str) -> str:
    import networkx as nx

    if fmt == "json":
        try:
            data = nx.node_link_data(g, edges="edges")
        except TypeError:  # networkx before 3.4 names the same keyword ``link``
            data = nx.node_link_data(g, link="edges")
        return json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True)
    if fmt == "graphml":
        buf = io.BytesIO()
        nx.write_graphml(g, buf)
        return buf.getvalue().decode("utf-8")
    if fmt == "mermaid":
        ids = {n: f"n{i}" for i, n in enumerate(g.nodes)}
        lines = ["graph LR"]
        for n, data in g.nodes(data=True):
            lines.append(f'  {ids[n]}["{_mermaid(str(data.get("label") or n))}"]')
        for a, b, data in _edges(g):
            label = data.get("label") or ""
            arrow = f' -->|"{_mermaid(label)}"| ' if label else " --> "
            lines.append(f"  {ids[a]}{arrow}{ids[b]}")
        return "\n".join(lines) + "\n"
    lines = ["digraph narr {", "  rankdir=LR;", "  node [shape=box];"]
    for n, data in g.nodes(data=True):
        lines.append(f"  {_dot(n)} [label={_dot(str(data.get('label') or n))}];")
    for a, b, data in _edges(g):
        label = data.get("label") or ""
        lines.append(f"  {_dot(a)} -> {_dot(b)}" + (f" [label={_dot(label)}];" if label else ";"))
    return "\n".join([*lines, "}"]) + "\n"


def _edges(g: nx.Graph) -> list[tuple[str, str, dict[str, Any]]]:
    if g.is_multigraph():
        return [(a, b, d) for a, b, _, d in g.edges(keys=True, data=True)]
    return [(a, b, d) for a, b, d in g.edges(data=True)]


def _dot(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _mermaid(text: str) -> str:
    text = re.sub(r"\s+", " ", text)
    return text.replace('"', "#quot;")[:80]


def sizes(wr: WorldRepo) -> dict[str, dict[str, int]]:
    """How many nodes and edges each graph holds."""
    world = world_graph(wr)
    events, _ = event_graph(wr)
    return {"world": {"nodes": world.number_of_nodes(), "edges": world.number_of_edges()},
            "events": {"nodes": events.number_of_nodes(), "edges": events.number_of_edges()}}


@dataclass
class Connection:
    source: str
    target: str
    paths: list[list[dict[str, Any]]]

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target,
                "length": len(self.paths[0]) if self.paths else None, "paths": self.paths}


def connect(wr: WorldRepo, a: str, b: str) -> Connection:
    """The shortest chains of relations and reference fields from ``a`` to ``b`` (edges
    walked either way: two people at one place are two steps apart, through it)."""
    import networkx as nx

    check_id(a)
    check_id(b)
    g = world_graph(wr)
    for n in (a, b):
        if n not in g:
            raise NotFoundError(f"no node {n!r} in the world",
                                hint="{0} lists the nodes", steps=[Step("list_nodes")])
    undirected = nx.Graph(g.to_undirected(as_view=True))
    try:
        found = list(nx.all_shortest_paths(undirected, a, b)) if a != b else [[a]]
    except nx.NetworkXNoPath:
        found = []
    paths = []
    for path in sorted(found)[:MAX_PATHS]:
        hops = []
        for x, y in itertools.pairwise(path):
            types = [*_hop(g, x, y, "forward"), *_hop(g, y, x, "backward")]
            hops.append({"from": x, "to": y, "relations": types})
        paths.append(hops)
    return Connection(a, b, paths)


def _hop(g: nx.MultiDiGraph, src: str, dst: str, direction: str) -> list[dict[str, Any]]:
    """The edges from ``src`` to ``dst``: relations by type, references by label and field."""
    out = []
    for key, data in sorted((g.get_edge_data(src, dst) or {}).items()):
        hop: dict[str, Any] = {"type": data.get("label", key), "direction": direction}
        if data.get("kind") == "reference":
            hop["field"] = data["field"]
        out.append(hop)
    return out
