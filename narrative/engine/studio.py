"""What the studio (the browser front end of ``narr serve``) draws: both graphs, cut to what fits.

A browser cannot lay out ten thousand nodes at once, so :func:`world_view` never
sends them all: it lists the nodes the filters and the search select (names as
text, in the order of their names, at most ``limit`` of them) and draws at most
``draw`` of them, the neighbourhood of the focus when there is one, else the best
connected of the selection, or the selection as clusters (by layer, kind or place,
with the relations between them counted), with the edges between the drawn nodes:
relations, and the reference fields that name a node (``state.location`` drawn "at",
``state.holder`` "held by", those the world declares), each edge row with its
``kind``. A committed world is read once per commit and kept (a server asks again
and again); a past world, or the world with its hand edits, is the kept one with the
few nodes that differ redone, and what the kept one worked out for the whole world
(the names' order, the facets, the clusters) is carried over the same way. :func:`event_view` is
the current story line (its last ``EVENT_LIMIT`` events, newest first) with its
causal edges, the abandoned chains and the branches. Both only read.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from narrative import fields
from narrative.engine.graphs import event_graph
from narrative.errors import InvalidInputError, NotFoundError, Step
from narrative.ids import LAYERS, LIFECYCLES, check_id, normalize_name
from narrative.store import WorldRepo, changed_files, file_digest, resolve_rev, scan_for_reader

LIST_LIMIT = 200
DRAW_LIMIT = 150
MAX_DEPTH = 3
EVENT_LIMIT = 500


@dataclass
class WorldGraphView:
    """The world graph cut for drawing: what :func:`world_view` lists and draws (the store's
    :class:`~narrative.store.view.WorldView` is another thing: the world an event reads)."""

    at: str | None  # the commit shown, or None for HEAD with the hand edits
    total: int
    matched: int
    listed: list[dict[str, Any]]
    drawn: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    focus: str | None
    depth: int
    facets: dict[str, dict[str, int]] = field(default_factory=dict)
    group: str | None = None  # what the drawing is grouped by (layer, kind, place), or None
    clusters: list[dict[str, Any]] = field(default_factory=list)
    cluster_edges: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "total": self.total, "matched": self.matched,
                "nodes": self.listed, "truncated": self.matched > len(self.listed),
                "graph": {"nodes": self.drawn, "edges": self.edges, "clusters": self.clusters,
                          "cluster_edges": self.cluster_edges},
                "focus": self.focus, "depth": self.depth, "facets": self.facets, "group": self.group}


def _choices(values: Iterable[str] | None, known: Iterable[str] | None, what: str) -> set[str]:
    chosen = {v for v in (values or ()) if v}
    if known is not None:
        unknown = sorted(chosen - set(known))
        if unknown:
            raise InvalidInputError(f"unknown {what} {unknown[0]!r}; expected one of {', '.join(known)}")
    return chosen


@dataclass
class _Base:
    """One committed world, ready to be cut: node attributes, edges by source, neighbours, names.

    Edges are kept by source (a past world or the hand edits replace a few nodes' edges, and a
    drawing needs only the drawn nodes'); the whole sorted list is built only when asked.
    """

    nodes: dict[str, dict[str, Any]]
    out: dict[str, list[tuple[str, str, str]]]  # (source, type, target) by source, sorted; a
    # reference's type is its field's pointer (/state/location), which no relation type can be
    neighbours: dict[str, set[str]]  # either direction
    names: dict[str, list[str]]  # normalised name and aliases, by id
    aliases: dict[str, list[str]] = field(default_factory=dict)  # as written, by id (those with some)
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def edges(self) -> list[tuple[str, str, str]]:
        return sorted(edge for src in self.out for edge in self.out[src])

    def facets(self) -> dict[str, dict[str, int]]:
        """How many nodes have each layer, kind and lifecycle (counted once per world)."""
        if "facets" not in self.memo:
            facets: dict[str, dict[str, int]] = {"layer": {}, "kind": {}, "lifecycle": {}}
            for data in self.nodes.values():
                for facet, counts in facets.items():
                    value = str(data.get(facet) or "")
                    counts[value] = counts.get(value, 0) + 1
            self.memo["facets"] = facets
        return {k: dict(v) for k, v in self.memo["facets"].items()}

    def by_name(self) -> list[str]:
        """Every node in the order of its name, then its id: the list's order (the page orders
        what it shows by its reader's locale, pinyin for Chinese)."""
        if "by_name" not in self.memo:
            self.memo["by_name"] = sorted(
                self.nodes, key=lambda n: (normalize_name(str(self.nodes[n].get("name") or n)), n))
        return list(self.memo["by_name"])

    def cluster_keys(self, by: str, labels: Mapping[str, str]) -> dict[str, str]:
        """Each node's cluster when the world is grouped ``by`` layer, kind or place (where it
        stands: its location's target, a held thing where its holder stands, a place itself)."""
        memo_key = f"clusters:{by}"
        if memo_key not in self.memo:
            if by == "layer":
                keys = {n: f"layer:{d.get('layer', '')}" for n, d in self.nodes.items()}
            elif by == "kind":
                keys = {n: f"kind:{d.get('kind', '')}" for n, d in self.nodes.items()}
            else:
                at = {ptr for ptr, label in labels.items() if label == "at"}
                held = {ptr for ptr, label in labels.items() if label != "at"}

                def where(node_id: str, fields_: set[str]) -> str | None:
                    return next((dst for _, key, dst in self.out.get(node_id, ()) if key in fields_), None)

                places = {dst for src in self.out for _, key, dst in self.out[src] if key in at}
                keys = {}
                for n in self.nodes:
                    place = n if n in places else where(n, at)
                    if place is None:
                        holder = where(n, held)
                        place = where(holder, at) if holder is not None else None
                    keys[n] = f"place:{place or ''}"
            self.memo[memo_key] = keys
        return dict(self.memo[memo_key])

    def cluster_sizes(self, by: str, labels: Mapping[str, str]) -> dict[tuple[str, str], int]:
        """How many nodes of each layer each cluster of the whole world holds, by (cluster, layer)."""
        memo_key = f"sizes:{by}"
        if memo_key not in self.memo:
            keys = self.cluster_keys(by, labels)
            sizes: dict[tuple[str, str], int] = {}
            for node_id, data in self.nodes.items():
                k = (keys[node_id], str(data.get("layer", "")))
                sizes[k] = sizes.get(k, 0) + 1
            self.memo[memo_key] = sizes
        return dict(self.memo[memo_key])

    def cluster_counts(self, by: str, labels: Mapping[str, str]) -> dict[tuple[str, str], int]:
        """The relations between the clusters of the whole world grouped ``by`` layer or kind:
        how many go from each cluster to each other one."""
        memo_key = f"counts:{by}"
        if memo_key not in self.memo:
            keys = self.cluster_keys(by, labels)
            counts: dict[tuple[str, str], int] = {}
            for src, edges in self.out.items():
                a = keys.get(src)
                for _, _, dst in edges:
                    b = keys.get(dst)
                    if a is not None and b is not None and a != b:
                        counts[(a, b)] = counts.get((a, b), 0) + 1
            self.memo[memo_key] = counts
        return dict(self.memo[memo_key])

    def ranked(self) -> list[str]:
        """Every node, best connected first (ties by id): the overview draws the head of it."""
        if "ranked" not in self.memo:
            self.memo["ranked"] = sorted(self.nodes, key=lambda n: (-len(self.neighbours.get(n, ())), n))
        return list(self.memo["ranked"])


def _by_source(edges: Iterable[tuple[str, str, str]]) -> dict[str, list[tuple[str, str, str]]]:
    out: dict[str, list[tuple[str, str, str]]] = {}
    for edge in sorted(set(edges)):
        out.setdefault(edge[0], []).append(edge)
    return out


def _linked(out: Mapping[str, list[tuple[str, str, str]]], a: str, b: str) -> bool:
    return any(e[2] == b for e in out.get(a, ())) or any(e[2] == a for e in out.get(b, ()))


def _node_attrs(n: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": n.get("name", ""), "layer": n.get("layer", ""), "kind": n.get("kind", ""),
            "lifecycle": n.get("lifecycle", "permanent")}


def _own_edges(node_id: str, n: Mapping[str, Any], labels: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """The edges a node file draws: its relations, and its reference fields naming another node."""
    from narrative.nodefile import edges_of

    return ([(node_id, rtype, dst) for rtype, dst in edges_of(n)]
            + [(node_id, fld, dst) for fld, _, dst in fields.reference_edges(n, labels) if dst != node_id])


def _patched(now: _Base, then: Mapping[str, Mapping[str, Any] | None], *,
             extra: Iterable[tuple[str, str, str]] = (), labels: Mapping[str, str],
             edited: bool = False) -> _Base:
    """``now`` with the nodes of ``then`` replaced (None: the node is not there), touching only
    those nodes and their neighbours, never the whole world: what makes a time-slider move or a
    world with hand edits cost the few files that differ. ``extra``: edges from unchanged nodes
    to nodes ``now`` lacked. ``edited``: the changes are hand edits (marked; a deleted file's
    node stays, marked "deleted", without edges of its own)."""
    nodes = dict(now.nodes)
    names = dict(now.names)
    aliases = dict(now.aliases)
    out = dict(now.out)
    dropped: set[tuple[str, str, str]] = set()
    gone: set[str] = set()
    for node_id, n in then.items():
        dropped.update(out.pop(node_id, ()))
        if n is None:
            if edited and node_id in nodes:
                nodes[node_id] = {**nodes[node_id], "edited": "deleted"}
                continue
            gone.add(node_id)
            nodes.pop(node_id, None)
            names.pop(node_id, None)
            aliases.pop(node_id, None)
            continue
        row = _node_attrs(n)
        if edited:
            row["edited"] = "modified" if node_id in now.nodes else "new"
        nodes[node_id] = row
        names[node_id] = [normalize_name(str(x)) for x in [n.get("name", ""), *(n.get("aliases") or [])]]
        if n.get("aliases") or edited:
            aliases[node_id] = [str(a) for a in n.get("aliases") or []]
        else:
            aliases.pop(node_id, None)
    added: set[tuple[str, str, str]] = set(extra)
    for node_id, n in then.items():
        if n is not None:
            added.update(e for e in _own_edges(node_id, n, labels) if e[2] in nodes)
    for g in gone:  # unchanged nodes naming a node that is not there: no edge drawn
        for src in now.neighbours.get(g, ()):
            if src not in then and any(e[2] == g for e in out.get(src, ())):
                dropped.update(e for e in out[src] if e[2] == g)
                out[src] = [e for e in out[src] if e[2] != g]
    for edge in sorted(added):
        if edge[0] in then:
            out.setdefault(edge[0], []).append(edge)
        else:  # an unchanged node's edge to a node that is back
            out[edge[0]] = sorted({*out.get(edge[0], ()), edge})
    neighbours = dict(now.neighbours)
    for g in gone:
        neighbours.pop(g, None)
    copied: set[str] = set()
    for a, _, b in dropped | added:
        for x in (a, b):
            if x in nodes and x not in copied:
                neighbours[x] = set(neighbours.get(x, ()))
                copied.add(x)
        if a not in nodes or b not in nodes:
            for x, y in ((a, b), (b, a)):
                if x in nodes:
                    neighbours[x].discard(y)
            continue
        if _linked(out, a, b):
            neighbours[a].add(b)
            neighbours[b].add(a)
        else:
            neighbours[a].discard(b)
            neighbours[b].discard(a)
    for node_id in then:
        if node_id in nodes:
            neighbours.setdefault(node_id, set())
    patched = _Base(nodes, out, neighbours, names, aliases)
    _carry(now, patched, set(then))
    return patched


def _touching(base: _Base, ids: set[str]) -> Iterable[tuple[str, str, str]]:
    """Every edge of ``base`` with an end among ``ids`` (each once)."""
    seen: set[tuple[str, str, str]] = set()
    for node_id in ids:
        for edge in base.out.get(node_id, ()):
            if edge not in seen:
                seen.add(edge)
                yield edge
        for other in base.neighbours.get(node_id, ()):
            for edge in base.out.get(other, ()):
                if edge[2] == node_id and edge not in seen:
                    seen.add(edge)
                    yield edge


def _carry(now: _Base, base: _Base, changed: set[str]) -> None:
    """What ``now`` worked out for the whole world, brought to ``base`` (``now`` with the nodes
    ``changed`` replaced) by redoing those nodes alone: the order of names, the facets, the
    clusters by layer and kind and the relations counted between them. A slider step on ten
    thousand nodes then costs the few nodes an event changed, not a pass over the world."""
    now.by_name()  # (``now`` is a world kept for the next call: this is worked out once)
    now.facets()
    labels = {"/state/location": "at"}  # (clusters by layer and kind do not read them)
    for by in ("layer", "kind"):
        now.cluster_counts(by, labels)
        now.cluster_sizes(by, labels)
    memo = now.memo
    if "by_name" in memo:
        import bisect

        def key(n: str) -> tuple[str, str]:
            return (normalize_name(str(base.nodes[n].get("name") or n)), n)

        order = [n for n in memo["by_name"] if n not in changed]
        known = [key(n) for n in order] if len(changed) > 64 else None
        for n in sorted(changed & base.nodes.keys(), key=key):
            if known is None:
                at = bisect.bisect_left(order, key(n), key=key)
            else:
                at = bisect.bisect_left(known, key(n))
                known.insert(at, key(n))
            order.insert(at, n)
        base.memo["by_name"] = order
    if "facets" in memo:
        facets = {f: dict(counts) for f, counts in memo["facets"].items()}
        for n in changed:
            for side, rows in ((-1, now.nodes), (1, base.nodes)):
                if n in rows:
                    for facet, counts in facets.items():
                        value = str(rows[n].get(facet) or "")
                        counts[value] = counts.get(value, 0) + side
                        if not counts[value]:
                            del counts[value]
        base.memo["facets"] = facets
    for by in ("layer", "kind"):
        if f"clusters:{by}" not in memo:
            continue
        keys_then = memo[f"clusters:{by}"]
        keys_now = dict(keys_then)
        for n in changed:
            if n in base.nodes:
                keys_now[n] = f"{by}:{base.nodes[n].get(by, '')}"
            else:
                keys_now.pop(n, None)
        base.memo[f"clusters:{by}"] = keys_now
        if f"counts:{by}" in memo:
            pairs: dict[tuple[str, str], int] = dict(memo[f"counts:{by}"])
            for side, world, keys in ((-1, now, keys_then), (1, base, keys_now)):
                for src, _, dst in _touching(world, changed):
                    a, b = keys.get(src), keys.get(dst)
                    if a is not None and b is not None and a != b:
                        pairs[(a, b)] = pairs.get((a, b), 0) + side
                        if not pairs[(a, b)]:
                            del pairs[(a, b)]
            base.memo[f"counts:{by}"] = pairs
        if f"sizes:{by}" in memo:
            held: dict[tuple[str, str], int] = dict(memo[f"sizes:{by}"])
            for side, world, keys in ((-1, now, keys_then), (1, base, keys_now)):
                for n in changed:
                    if n in world.nodes:
                        k = (keys[n], str(world.nodes[n].get("layer", "")))
                        held[k] = held.get(k, 0) + side
                        if not held[k]:
                            del held[k]
            base.memo[f"sizes:{by}"] = held


def shown_aliases(name: str, aliases: Iterable[str], most: int = 2) -> list[str]:
    """The aliases worth showing beside a name: those in another script than the name's (林远
    beside Lin Yuan, Lin Yuan beside 林远), never the name itself again."""
    def script(text: str) -> bool:
        return text.isascii()

    own = normalize_name(name)
    out: list[str] = []
    for alias in aliases:
        if script(alias) != script(name) and normalize_name(alias) != own and alias not in out:
            out.append(alias)
    return out[:most]

_CACHE: dict[tuple[str, str, str], _Base] = {}
_CACHE_SIZE = 8  # HEAD, and the past worlds a time slider steps through
_CACHE_LOCK = threading.Lock()  # a server reads on many threads


def _base(wr: WorldRepo, commit: str | None, *, parse: bool = False) -> _Base:
    """The committed world at ``commit`` (None: HEAD), remembered for the next call of a server.

    ``parse``: read every node file at ``commit`` (what a past world is built to equal; tests).
    """
    head = wr.head_commit()
    key_commit = commit or (head.id if head is not None else "")
    key = (str(wr.git_dir), key_commit, repr(sorted(wr.config.reference_labels.items())))
    with _CACHE_LOCK:
        found = _CACHE.get(key)
    if found is not None and not parse:
        return found
    nodes: dict[str, dict[str, Any]] = {}
    names: dict[str, list[str]] = {}
    aliases: dict[str, list[str]] = {}
    edges: list[tuple[str, str, str]] = []
    labels = wr.config.reference_labels
    if commit is not None and head is not None and commit != head.id and not parse:
        # A past world is HEAD's with the nodes that differ read at the commit: a tree diff
        # names them (a few files per event), never the whole world parsed again.
        base = _past(wr, _base(wr, None), resolve_rev(wr, commit).tree, head.tree)
        with _CACHE_LOCK:
            while len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = base
        return base
    if commit is not None:
        from narrative.store import nodes_in

        world = nodes_in(wr, resolve_rev(wr, commit).tree)
        for node_id in sorted(world):
            n = world[node_id]
            nodes[node_id] = _node_attrs(n)
            names[node_id] = [normalize_name(str(x)) for x in [n.get("name", ""),
                                                              *(n.get("aliases") or [])]]
            if n.get("aliases"):
                aliases[node_id] = [str(a) for a in n["aliases"]]
        edges = [e for src in world for e in _own_edges(src, world[src], labels) if e[2] in world]
    elif head is not None:
        cache = wr.catalog_at(head.tree)
        for node_id, layer, kind, name, lifecycle in sorted(cache.listing()):
            nodes[node_id] = {"name": name, "layer": layer, "kind": kind, "lifecycle": lifecycle}
            names[node_id] = [normalize_name(name)]
        for norm, node_id in cache.names():
            names.setdefault(node_id, []).append(norm)
        aliases = cache.aliases()
        edges = [*cache.incoming(list(nodes)),
                 *((r.src, r.field, r.dst) for r in cache.all_references(labels) if r.src != r.dst)]
    out = _by_source(edges)
    neighbours: dict[str, set[str]] = {n: set() for n in nodes}
    for src in out:
        for _, _, dst in out[src]:
            if src in neighbours and dst in neighbours:
                neighbours[src].add(dst)
                neighbours[dst].add(src)
    base = _Base(nodes, out, neighbours, names, aliases)
    if parse:
        return base
    with _CACHE_LOCK:
        while len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = base
    return base


def _past(wr: WorldRepo, now: _Base, tree: Any, head_tree: Any) -> _Base:
    """The world at ``tree``, from ``now`` (HEAD's) and the node files that differ between them."""
    from narrative.nodefile import load_trusted
    from narrative.store import changed_nodes, node_file

    labels = wr.config.reference_labels
    then: dict[str, dict[str, Any] | None] = {}
    for node_id in changed_nodes(wr, head_tree, tree):
        found = node_file(tree, node_id, wr.config.layout)
        then[node_id] = None if found is None else dict(load_trusted(found[1]))
    extra: list[tuple[str, str, str]] = []
    revived = [i for i, n in then.items() if n is not None and i not in now.nodes]  # gone by HEAD
    if revived:
        # Unchanged nodes still naming them: HEAD's world drew no edge to a node it lacks.
        cache = wr.catalog_at(head_tree)
        extra.extend(e for e in cache.incoming(revived) if e[0] not in then)
        extra.extend((r.src, r.field, r.dst) for r in cache.references_to(revived, labels)
                     if r.src not in then and r.src != r.dst)
    return _patched(now, then, extra=extra, labels=labels)


def _with_edits(wr: WorldRepo, base: _Base, edits: Any = None) -> _Base:
    """The world with the hand edits on top (nodes marked ``edited``); ``base`` is left alone.
    ``edits``: the working tree's scan, when the caller made one already."""
    head = wr.head_commit()
    if head is None:
        return base
    if edits is None:
        edits = scan_for_reader(wr, head.tree)
    if not edits.edits:
        return base
    return _patched(base, {node_id: e.new for node_id, e in edits.edits.items()},
                    labels=wr.config.reference_labels, edited=True)


GROUPS = ("layer", "kind", "place")
MAX_CLUSTERS = 40  # more would be dots again: the smallest are drawn as one, "other"


def world_view(wr: WorldRepo, at: str | None = None, around: str | None = None, depth: int = 1,
               layers: Iterable[str] | None = None, kinds: Iterable[str] | None = None,
               lifecycles: Iterable[str] | None = None, query: str | None = None,
               limit: int = LIST_LIMIT, draw: int = DRAW_LIMIT, group: str | None = None,
               expand: Iterable[str] = ()) -> WorldGraphView:
    """The world (at HEAD with the hand edits, or as of revision ``at``) cut for drawing.

    The filters (layers, kinds, lifecycles: any of each; ``query``: a piece of a
    name, an alias or an id) select nodes, listed in the order of their names;
    ``around`` draws the focus and its neighbours ``depth`` relations away (whatever
    the filters), else the best connected of the selection are drawn. Relations are
    the committed ones. ``group`` (``layer``, ``kind`` or ``place``; ``auto``: by layer
    when the selection is more than ``draw`` nodes) draws the selection as clusters
    with the number of relations between them, and the best connected members of the
    clusters named in ``expand`` (their keys, ``layer:character``) in their place.
    """
    if not 0 <= depth <= MAX_DEPTH:
        raise InvalidInputError(f"depth must be between 0 and {MAX_DEPTH}, not {depth}")
    if limit < 0 or draw < 0:
        raise InvalidInputError("limit and draw must be 0 or more")
    if group is not None and group not in (*GROUPS, "auto"):
        raise InvalidInputError(f"unknown group {group!r}; expected one of {', '.join(GROUPS)} or auto")
    want_layers = _choices(layers, LAYERS, "layer")
    want_lifecycles = _choices(lifecycles, LIFECYCLES, "lifecycle")
    want_kinds = _choices(kinds, None, "kind")
    commit = resolve_rev(wr, at).id if at is not None else None
    base = _base(wr, commit)
    if commit is None:
        base = _with_edits(wr, base)
    nodes, names, neighbours = base.nodes, base.names, base.neighbours

    def degree(node_id: str) -> int:
        return len(neighbours.get(node_id, ()))

    needle = normalize_name(query or "")
    facets = base.facets()
    if not (needle or want_layers or want_kinds or want_lifecycles):
        selected = base.by_name()
    else:
        selected = []
        for node_id in base.by_name():
            data = nodes[node_id]
            if want_layers and data.get("layer") not in want_layers:
                continue
            if want_kinds and data.get("kind") not in want_kinds:
                continue
            if want_lifecycles and data.get("lifecycle") not in want_lifecycles:
                continue
            if needle and needle not in node_id and not any(needle in n for n in names.get(node_id, ())):
                continue
            selected.append(node_id)
        if needle:  # a name or id given whole first, then the others by name
            selected.sort(key=lambda n: 0 if needle == n or needle in names.get(n, ()) else 1)
    labels = wr.config.reference_labels
    if group == "auto":
        group = "layer" if around is None and len(selected) > draw else None
    if around is not None:
        group = None
        check_id(around)
        if around not in nodes:
            raise NotFoundError(f"no node {around!r} in the world" + (f" at {at}" if at else ""),
                                hint="{0} lists the nodes", steps=[Step("list_nodes")])
        ring = {around: 0}
        frontier = [around]
        for step in range(1, depth + 1):
            nxt = []
            for n in frontier:
                for m in neighbours.get(n, ()):
                    if m not in ring:
                        ring[m] = step
                        nxt.append(m)
            frontier = nxt
        keep = sorted(ring, key=lambda n: (ring[n], -degree(n), n))[:max(draw, 1)]
    elif group is not None:
        keep = []
    elif len(selected) == len(nodes):
        keep = base.ranked()[:draw]
    else:
        keep = sorted(selected, key=lambda n: (-degree(n), n))[:draw]
    clusters: list[dict[str, Any]] = []
    cluster_edges: list[dict[str, Any]] = []
    member_of: dict[str, str] = {}
    if group is not None:
        keep, clusters, cluster_edges, member_of = _grouped(base, selected, group, set(expand), draw,
                                                            labels, degree)
    kept = set(keep)
    drawn = [_node_row(node_id, nodes[node_id], degree(node_id)) for node_id in keep if node_id in nodes]
    for row in drawn:
        if row["id"] in member_of:
            row["cluster"] = member_of[row["id"]]
    edges = [_edge_row(a, t, b, labels)
             for a, t, b in sorted(e for src in keep for e in base.out.get(src, ()) if e[2] in kept)]
    listed = [_node_row(node_id, nodes[node_id], None) for node_id in selected[:limit]]
    for row in [*listed, *drawn]:
        row["aliases"] = shown_aliases(row["name"], base.aliases.get(row["id"], ()))
    return WorldGraphView(commit, len(nodes), len(selected), listed, drawn, edges, around, depth, facets,
                          group, clusters, cluster_edges)


def _grouped(base: _Base, selected: list[str], by: str, expand: set[str], draw: int,
             labels: Mapping[str, str], degree: Any) -> tuple[list[str], list[dict[str, Any]],
                                                           list[dict[str, Any]], dict[str, str]]:
    """The selection as clusters (``by`` layer, kind or place): the clusters not expanded, the
    best connected members of those expanded (``draw`` among them all), the relations between
    clusters counted, and the cluster of each member drawn. One pass over the selection and one
    over its edges (a slider step on ten thousand nodes pays this again for each past world)."""
    keys = base.cluster_keys(by, labels)
    whole = len(selected) == len(base.nodes)
    nodes = base.nodes
    if whole:
        layers = base.cluster_sizes(by, labels)
    else:
        layers = {}
        for node_id in selected:
            lk = (keys[node_id], str(nodes[node_id].get("layer", "")))
            layers[lk] = layers.get(lk, 0) + 1
    sizes: dict[str, int] = {}
    for (k, _), n in layers.items():
        sizes[k] = sizes.get(k, 0) + n
    order = sorted(sizes, key=lambda k: (-sizes[k], k))
    merged: dict[str, str] = {}
    if len(order) > MAX_CLUSTERS:  # the smallest drawn as one
        other = f"other:{by}"
        merged = {k: other for k in order[MAX_CLUSTERS - 1:]}
        sizes[other] = sum(sizes.pop(k) for k in merged)
        for k, layer in list(layers):
            if k in merged:
                layers[(other, layer)] = layers.get((other, layer), 0) + layers.pop((k, layer))
        order = [*order[:MAX_CLUSTERS - 1], other]
    opened = [k for k in order if k in expand]
    share = draw // max(len(opened), 1)
    keep: list[str] = []
    if opened:
        members: dict[str, list[str]] = {k: [] for k in opened}
        for node_id in selected:
            k = keys[node_id]
            k = merged.get(k, k)
            if k in members:
                members[k].append(node_id)
        for k in opened:
            keep.extend(sorted(members[k], key=lambda n: (-degree(n), n))[:share])
    drawn = set(keep)
    chosen = None if whole else set(selected)
    if whole and not expand and not merged and by != "place":
        counts = base.cluster_counts(by, labels)
        selected = []  # counted already
    else:
        counts = {}
    out = base.out
    for src in selected:
        if src in drawn:
            a = src
        else:
            a = keys[src]
            a = merged.get(a, a)
            if a in expand:
                continue  # a member not drawn: its relations are not counted anywhere
        for _, _, dst in out.get(src, ()):
            if chosen is not None and dst not in chosen:
                continue
            if dst in drawn:
                if a in drawn:
                    continue  # drawn as a relation
                b = dst
            else:
                key = keys.get(dst)
                if key is None:
                    continue
                b = merged.get(key, key)
                if b in expand:
                    continue
            if b != a:
                counts[(a, b)] = counts.get((a, b), 0) + 1
    rows = []
    for k in order:
        if k in expand:
            continue
        value = k.split(":", 1)[1]
        if k.startswith("place:") and value:
            label = str(nodes.get(value, {}).get("name") or value)
        elif k.startswith("other:"):
            label = f"other {by}s"
        else:
            label = value or {"kind": "no kind", "place": "nowhere", "layer": "no layer"}[by]
        layer = max((x for x in layers if x[0] == k), key=lambda x: (layers[x], x[1]))[1]
        rows.append({"key": k, "by": by, "label": label, "count": sizes[k], "layer": layer})
    edge_rows = [{"source": a, "target": b, "count": n} for (a, b), n in sorted(counts.items())]
    return keep, rows, edge_rows, {n: merged.get(keys[n], keys[n]) for n in keep}


def _edge_row(src: str, key: str, dst: str, labels: dict[str, str]) -> dict[str, Any]:
    """An edge as the page draws it; a reference field is labelled ("at") and names its field."""
    if key.startswith("/"):
        return {"source": src, "target": dst, "type": labels.get(key, key), "kind": "reference",
                "field": key}
    return {"source": src, "target": dst, "type": key, "kind": "relation"}


def _node_row(node_id: str, data: dict[str, Any], degree: int | None) -> dict[str, Any]:
    row = {"id": node_id, "name": data.get("name") or node_id, "layer": data.get("layer", ""),
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
    total: int = 0  # events on the story line, shown or not

    def to_json(self) -> dict[str, Any]:
        return {"branch": self.branch, "events": self.events, "total": self.total,
                "edges": self.edges, "chains": self.chains, "branches": self.branches}


def event_view(wr: WorldRepo, limit: int = EVENT_LIMIT) -> EventView:
    """The current story line, newest first (its last ``limit`` events), with the causal edges
    between them, the abandoned chains and the branches."""
    from narrative.engine.branches import list_branches
    from narrative.engine.chains import list_chains

    if limit < 1:
        raise InvalidInputError("limit must be 1 or more")
    g, story = event_graph(wr)
    events = []
    total = len(story.events) if story is not None else 0
    if story is not None:
        for e in story.events[:limit]:
            deps = g.in_degree(e.commit) if e.commit in g else 0
            events.append({"commit": e.commit, "id": e.id, "seq": e.seq, "kind": e.kind,
                           "content": e.content, "timestamp": e.timestamp,
                           "created_at": e.created_at, "close_scene": e.close_scene,
                           "causes": deps})
    shown = {e["commit"] for e in events}
    edges = [{"source": a, "target": b, "label": data.get("label", "")}
             for a, b, data in g.edges(data=True) if a in shown and b in shown]
    return EventView(wr.branch(), events, edges, list_chains(wr).to_json()["items"],
                     list_branches(wr).to_json()["items"], total)


def settled_stamp(wr: WorldRepo, wait: float = 0.0) -> dict[str, Any] | None:
    """:func:`world_stamp` taken while no writer is at work (the world's lock held shared), so
    that an event another process is writing never shows as hand edits for a moment; None
    when a writer still holds the lock after ``wait`` seconds (look again later)."""
    with wr.lock.looking(wait) as quiet:
        return world_stamp(wr) if quiet else None


def world_stamp(wr: WorldRepo) -> dict[str, Any]:
    """Where the story stands, cheaply: what a page shows goes stale when any part of this moves.

    ``head`` is the commit a write must start from (the page sends it back as ``If-Match``);
    ``branch`` the story line; ``edits`` says which files differ from HEAD and how they stand on
    disk (a file written again is a new stamp); ``set_aside``, ``chains`` and ``failed`` are the
    kept things the page lists. Whoever changed them (this server, a terminal, an editor), the
    next stamp differs.
    """
    from narrative.store import abandoned_refs, file_sig, ref_targets, set_aside_refs

    head = wr.head_id()
    tree = wr.head_commit().tree if head is not None else None  # type: ignore[union-attr]
    changed = sorted(changed_files(wr, tree))
    edits = [[path, list(file_sig(wr.abs(path)) or ())] for path in changed]
    kept = ref_targets(wr, [*set_aside_refs(wr), *abandoned_refs(wr)])
    failed = wr.private.failed_names()
    return {"head": head, "branch": wr.branch(), "edits": edits, "kept": kept, "failed": failed}


def problems_view(wr: WorldRepo) -> dict[str, Any]:
    """``narr status``'s problems placed where they are (the file, and its node when one can
    tell), with the failed events kept for a retry."""
    from pathlib import PurePosixPath

    from narrative.engine.failed import listing
    from narrative.engine.status import status

    now = status(wr)
    placed = []
    for text in now.problems:
        path = text.split(": ", 1)[0] if ": " in text else ""
        node = PurePosixPath(path).stem if path.endswith(".json") else None
        placed.append({"text": text, "path": path or None, "node": node})
    failed = listing(wr).to_json()["items"] if now.failed_events else []
    return {"problems": placed, "failed": failed}


def names_of(wr: WorldRepo, ids: Iterable[str], at: str | None = None, *,
             base: _Base | None = None) -> dict[str, dict[str, Any]]:
    """The name (and the aliases shown beside it) of each of ``ids`` that is a node of the world
    now (hand edits included) or as of revision ``at``: what a page shows in place of an id.
    ``base``: that world, when the caller read it already."""
    if base is None:
        commit = resolve_rev(wr, at).id if at is not None else None
        base = _base(wr, commit)
        if commit is None:
            base = _with_edits(wr, base)
    out = {}
    for node_id in ids:
        data = base.nodes.get(node_id)
        if data is not None:
            name = data.get("name") or node_id
            out[node_id] = {"name": name, "aliases": shown_aliases(name, base.aliases.get(node_id, ())),
                            "layer": data.get("layer", "")}
    return out


def same_kind(base: _Base, layer: str, kind: str, most: int) -> list[str]:
    """Up to ``most`` ids of nodes of ``layer`` and ``kind`` in ``base``, best connected first:
    those whose fields a form offers to another of their kind."""
    out = []
    for n in base.ranked():
        data = base.nodes[n]
        if data.get("layer") == layer and data.get("kind") == kind:
            out.append(n)
            if len(out) >= most:
                break
    return out


def relation_types(wr: WorldRepo) -> list[str]:
    """The relation types the world's committed relations use, most used first."""
    base = _base(wr, None)
    if "relation_types" not in base.memo:
        counts: dict[str, int] = {}
        for src in base.out:
            for _, key, _ in base.out[src]:
                if not key.startswith("/"):
                    counts[key] = counts.get(key, 0) + 1
        base.memo["relation_types"] = sorted(counts, key=lambda t: (-counts[t], t))
    return list(base.memo["relation_types"])


def node_view(wr: WorldRepo, node: str, at: str | None = None) -> dict[str, Any]:
    """A node as the studio's inspector shows it: the node, the names of every node it names
    (relation targets, and fields whose value is a node's id), and which fields those are;
    now (not in the past), what its form offers besides (:func:`~narrative.engine.nodeform.form_offer`)."""
    from narrative.engine.nodeform import SAMPLE, form_offer
    from narrative.engine.nodes import get_node
    from narrative.store import WorldView

    path, found = get_node(wr, node, at)
    data: dict[str, Any] = dict(found)
    named: dict[str, str] = {}
    for group in ("state", "traits"):
        for key, value in (data.get(group) or {}).items():
            if isinstance(value, str) and value and check_id_ok(value):
                named[f"{group}.{key}"] = value
    targets = {t for targets in (data.get("relations") or {}).values() for t in (targets or {})}
    wanted = sorted(targets | set(named.values()) | {data.get("id", "")})
    offer = None
    if at is None:  # the world now, its working tree scanned once for all of this
        head = wr.head_commit()
        tree = head.tree if head else None
        edits = scan_for_reader(wr, tree)
        base = _with_edits(wr, _base(wr, None), edits)
        names = names_of(wr, wanted, base=base)
        kin = [n for n in same_kind(base, str(data.get("layer", "")), str(data.get("kind", "")), SAMPLE + 1)
               if n != data.get("id")][:SAMPLE]
        offer = form_offer(wr, data, WorldView(wr, tree, edits), kin)
    else:
        names = names_of(wr, wanted, at)
    links = {path: value for path, value in named.items() if value in names and value != data.get("id")}
    return {"node": data, "names": names, "links": links,
            "file": file_digest(wr, path) if at is None else None, "offer": offer}


def check_id_ok(text: str) -> bool:
    from narrative.ids import id_problem

    return id_problem(text) is None


def story_lines(wr: WorldRepo) -> dict[str, Any]:
    """Everything the studio's story-line panel shows: the branches, the set-aside hand edits,
    the merge stopped on conflicts (with each conflict and its chosen resolution), the number
    of hand edits a switch would set aside."""
    from narrative.engine.branches import list_branches
    from narrative.engine.merge import conflicts
    from narrative.engine.setaside import list_set_asides
    from narrative.errors import NothingToDoError

    try:
        merging: dict[str, Any] | None = conflicts(wr).to_json()
    except NothingToDoError:
        merging = None
    head = wr.head_commit()
    edited = len(changed_files(wr, head.tree if head else None))
    return {"branch": wr.branch(), "branches": list_branches(wr).to_json()["items"],
            "set_aside": list_set_asides(wr), "merge": merging, "edited_files": edited}
