"""Nodes as the user sees them: one node (now or at any event), its fields, the listing.

``get`` reads one file; the listing reads the catalog plus the hand-edited files,
never the whole world. A command that reads the working tree first finishes a
write that a crash interrupted, so it never shows a half-written world.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

from narrative import fields
from narrative.answers import Answer, Items, Shape
from narrative.errors import InvalidInputError, InvalidWorldError, NotFoundError, Step
from narrative.ids import LAYERS, check_id, node_path, parse_node_path
from narrative.model import JSON, Node
from narrative.nodefile import NodeDict, load_trusted, parse_node_file
from narrative.store import WorldRepo, finish_interrupted, node_file, nodes_in, resolve_rev, scan_for_reader


def get_node(wr: WorldRepo, node_id: str, at: str | None = None) -> tuple[str, NodeDict]:
    """``(path, node)``: from the working tree (hand edits included), or at a revision."""
    check_id(node_id)
    layout = wr.config.layout
    if at is not None:
        found = node_file(resolve_rev(wr, at).tree, node_id, layout)
        if found is not None:
            return found[0], load_trusted(found[1], found[0])
        raise NotFoundError(f"no node {node_id!r} in the world at {at}")
    finish_interrupted(wr)
    head = wr.head_commit()
    for layer in LAYERS:
        path = node_path(node_id, layer, layout)
        full = wr.inside(path)
        if full.is_file():
            data = full.read_bytes()
            committed = head.tree.blob_id(path) if head is not None else None
            if committed is not None and committed == wr.blob_id_of(data):
                return path, load_trusted(data, path)  # as committed: validated when it was sealed
            return path, parse_node_file(data, path, layout)
    raise _gone(wr, node_id)


def _gone(wr: WorldRepo, node_id: str) -> NotFoundError:
    """For a node that has ended: which event ended it and why, and how to see it as it was."""
    from narrative.engine.eventgraph import ended

    found = ended(wr, node_id)
    if found is None:
        return NotFoundError(f"no node {node_id!r} in the world", hint="{0} lists the nodes",
                             steps=[Step("list_nodes")])
    event, reason = found
    content = event.content.splitlines()[0] if event.content else ""
    return NotFoundError(
        f"{node_id} is no longer in the world: it ended with event {event.id} "
        f"({event.commit[:10]} {content!r}): {reason}",
        hint="{0} shows it as it was, {1} its story",
        steps=[Step("get_node", {"node": node_id, "at": f"{event.commit[:10]}~1"}),
               Step("history", {"node": node_id})])


def get_value(wr: WorldRepo, node_id: str, field: str | None = None,
              at: str | None = None) -> JSON:
    """The value of ``field`` (``state.mood`` or ``/state/mood``; none: the whole node) now or ``at``."""
    _, node = get_node(wr, node_id, at)
    if not field:
        return cast("JSON", node)  # the node's file: a JSON object
    ptr = fields.parse_field(field)
    value = fields.get(node, ptr)
    if value is fields.ABSENT:
        raise NotFoundError(f"{node_id} has no field {ptr}", hint=fields.hint_for_missing(node, ptr))
    found: JSON = value
    return found


def locate(wr: WorldRepo, node_id: str) -> str:
    """The path of a node's file (existing, or where a new node of that id would go)."""
    check_id(node_id)
    head = wr.head_commit()
    for layer in LAYERS:
        path = node_path(node_id, layer, wr.config.layout)
        if wr.abs(path).exists() or (head is not None and head.tree.has(path)):
            return path
    raise NotFoundError(f"no node {node_id!r} in the world",
                        hint="to make one, give its layer: narr path ID --layer character")


def node_file_path(wr: WorldRepo, node_id: str, layer: str | None = None) -> str:
    """The path of a node's file; for a node that does not exist, where it goes in ``layer``."""
    try:
        return locate(wr, node_id)
    except NotFoundError:
        if layer is None:
            raise
        return node_path(node_id, layer, wr.config.layout)  # type: ignore[arg-type]


class NodeRow(Shape):
    """A node as the listing shows it: ``edited`` is null, ``new``, ``modified``, ``deleted`` or
    ``invalid`` (the file is there but not a valid node: ``narr status`` says why)."""

    id: str
    layer: str
    kind: str
    name: str
    lifecycle: str
    edited: str | None


class NodeList(Items[NodeRow]):
    """Every node of the world (hand edits included), sorted by id."""

    NAME: ClassVar[str] = "list_nodes"
    VERSION: ClassVar[int] = 2  # 2: a page of the list (next), when one was asked for


class NodeFile(Answer):
    """A node's file: where it is and what it holds."""

    NAME: ClassVar[str] = "get_node"

    path: str
    node: Node


class EditedNodeFile(NodeFile):
    """A node's file as a hand edit wrote it: where it is and what it holds now."""

    NAME: ClassVar[str] = "edit_node"


def get_node_file(wr: WorldRepo, node_id: str, at: str | None = None) -> NodeFile:
    """:func:`get_node` as an answer."""
    path, node = get_node(wr, node_id, at)
    return NodeFile.model_validate({"path": path, "node": node})


def list_nodes(wr: WorldRepo, layer: str | None = None) -> NodeList:
    """Every node of the current world (hand edits included), sorted by id."""
    if layer is not None and layer not in LAYERS:
        raise InvalidInputError(f"unknown layer {layer!r}; expected one of {', '.join(LAYERS)}")
    finish_interrupted(wr)
    head = wr.head_commit()
    if head is None:
        return NodeList(items=[])
    cache = wr.catalog_at(head.tree)
    rows: dict[str, dict[str, Any]] = {}
    for node_id, lay, kind, name, lifecycle in cache.listing(layer):
        rows[node_id] = {"id": node_id, "layer": lay, "kind": kind, "name": name,
                         "lifecycle": lifecycle, "edited": None}
    edits = scan_for_reader(wr, head.tree)
    for node_id, e in edits.edits.items():
        if e.new is None:
            if node_id in rows:
                rows[node_id]["edited"] = "deleted"
            continue
        if layer and e.new["layer"] != layer:
            rows.pop(node_id, None)
            continue
        rows[node_id] = {"id": node_id, "layer": e.new["layer"], "kind": e.new["kind"],
                         "name": e.new["name"], "lifecycle": e.new["lifecycle"],
                         "edited": "new" if e.old is None else "modified"}
    if edits.problems:  # a node file that no longer parses: still listed, marked for narr status
        for path in edits.raw:
            placed = parse_node_path(path, wr.config.layout)
            if placed is not None and placed[1] not in edits.edits and placed[1] in rows:
                rows[placed[1]]["edited"] = "invalid"
    return NodeList.model_validate({"items": [rows[k] for k in sorted(rows)]})


def current_nodes(wr: WorldRepo) -> tuple[dict[str, NodeDict], dict[str, str]]:
    """The world as the user sees it: HEAD's nodes with the hand edits laid over them.

    Returns the nodes by id and, for each hand-edited node, ``"new"``,
    ``"modified"`` or ``"deleted"``. A node file that does not parse is an error
    here (``narr status`` names it): a whole-world reader cannot guess what it meant.
    """
    finish_interrupted(wr)
    head = wr.head_commit()
    if head is None:
        return {}, {}
    nodes = nodes_in(wr, head.tree)
    edits = scan_for_reader(wr, head.tree)
    if edits.problems:
        more = f" (and {len(edits.problems) - 1} more)" if len(edits.problems) > 1 else ""
        raise InvalidWorldError(edits.problems[0] + more, details=list(edits.problems),
                                hint="fix the file ({0} lists every problem), or read "
                                     "the committed world with --at HEAD", steps=[Step("status")])
    marks: dict[str, str] = {}
    for node_id, e in sorted(edits.edits.items()):
        if e.new is None:
            nodes.pop(node_id, None)
            marks[node_id] = "deleted"
        else:
            nodes[node_id] = e.new
            marks[node_id] = "new" if e.old is None else "modified"
    return nodes, marks

