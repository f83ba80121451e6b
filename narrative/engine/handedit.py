"""Hand edits: a node's file written for a person, never by an event. One way in.

``narr new``, ``narr edit`` (a node that does not exist yet), the studio (a file saved, a node
made, a relation changed) and the operation ``edit_node`` all write a node through
:func:`write_hand_edit`, so a hand edit narr writes passes one set of checks wherever it comes
from, each refusal leaving the file as it was:

- the node is a valid node in its place: its id is the file's and its layer the folder's
  (the schema, the id's rules and the layout, as :func:`narrative.nodefile.parse_node_file`
  reads any file in the working tree);
- a relation it adds points at a node that exists (the next event would refuse the world
  with it; relations it had are left alone, a target deleted by hand being the next event's
  to drop);
- ``create``: no file is at its place (made by someone else just now);
- ``was``: the file is still the one the caller read (a digest of it, ``""`` for none), so a
  save never writes over a change it did not see;

and it is written under the world's write lock, never between the steps of another writer's
event. The next event records it (:mod:`narrative.engine.event`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from narrative.errors import InvalidInputError, MovedError, NotFoundError
from narrative.ids import LAYERS, check_id, node_path
from narrative.model import _REL_TYPE_RE
from narrative.nodefile import NodeDict, edges_of, parse_json, parse_node_file
from narrative.store import WorldRepo, WorldView, file_digest, scan_for_reader, write_node


@dataclass(frozen=True)
class HandEdit:
    """A node file written: where, the node as written, and a digest of the file (what a
    caller sends back as ``was`` to save it again)."""

    path: str
    node: NodeDict
    file: str


def write_hand_edit(wr: WorldRepo, node: Mapping[str, Any] | bytes, *, node_id: str | None = None,
                    create: bool = False, was: str | None = None) -> HandEdit:
    """Write ``node`` (a node as JSON data, or a file's bytes) as a hand edit, after the checks
    this module names; ``node_id`` is the node the caller means to write (by default the one
    ``node`` names)."""
    data = node if isinstance(node, bytes) else json.dumps(dict(node), ensure_ascii=False).encode()
    if node_id is None:
        given = parse_json(data, "the node") if isinstance(node, bytes) else node
        node_id = str(given.get("id", "")) if isinstance(given, Mapping) else ""
    check_id(node_id)
    path = _place(wr, node_id, data, create)
    parsed = parse_node_file(data, path, wr.config.layout)
    if parsed["id"] != node_id:
        raise InvalidInputError(f"{path}: the node's id is {parsed['id']!r}, not {node_id!r}")
    with wr.lock:  # never between the steps of another writer's event
        if was is not None and file_digest(wr, path) != was:
            raise MovedError(f"{path} changed since this page loaded it (another tab or an editor "
                             "saved it); nothing was written",
                             hint="your text is kept: discard it to see the file as it is now, or "
                                  "save again to write over it")
        check_new_relations(wr, parsed, path)
        path = write_node(wr, parsed, create=create)
    return HandEdit(path, parsed, file_digest(wr, path))


def _place(wr: WorldRepo, node_id: str, data: bytes, create: bool) -> str:
    """Where ``node_id``'s file is: where it stands (or stood at HEAD), else, for a node the
    world has never had and that is being made (``create``), where its layer puts it."""
    from narrative.engine.nodes import locate

    try:
        path = locate(wr, node_id)
    except NotFoundError:
        if not create:
            raise
        path = None
    if path is not None and wr.abs(path).exists():
        return path
    obj = parse_json(data, f"the node {node_id}")
    layer = obj.get("layer") if isinstance(obj, dict) else None
    if layer in LAYERS:
        return node_path(node_id, layer, wr.config.layout)
    if path is not None:
        return path
    raise InvalidInputError(f"the node {node_id}: its layer must be one of {', '.join(LAYERS)}")


def check_new_relations(wr: WorldRepo, node: Mapping[str, Any], path: str) -> None:
    """Refuse a node whose new relations point at nodes that do not exist, with the words the
    next event would use (``narr status`` lists the same as a problem)."""
    head = wr.head_commit()
    tree = head.tree if head else None
    view = WorldView(wr, tree, scan_for_reader(wr, tree))
    before = view.get(node["id"])
    had = set(edges_of(before)) if before is not None else set()
    missing = [f"{path}: field /relations/{rtype}/{dst}: points at a node that does not exist"
               for rtype, dst in edges_of(node)
               if (rtype, dst) not in had and dst != node["id"] and not view.exists(dst)]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise InvalidInputError(missing[0] + more, details=missing,
                                hint="pick a node that exists (by its name), or create it first")


def edit_relation(wr: WorldRepo, node: str, rtype: str, target: str, *,
                  attrs: Mapping[str, Any] | None = None, remove: bool = False,
                  replaces: tuple[str, str] | None = None) -> dict[str, Any]:
    """Add, change or remove one relation of a node, as a hand edit of its file.

    ``node`` and ``target`` are named as the CLI takes them (an id, a name or an alias); a
    target must exist. ``replaces`` (type, target id) is the relation this one takes the
    place of (an edit that changes its type or target). The node's file as it stands now
    (hand edits included) is the one changed; nothing else in it moves.
    """
    from narrative.engine.naming import Names

    rtype = rtype.strip()
    if not _REL_TYPE_RE.fullmatch(rtype):
        raise InvalidInputError(f"relation type {rtype!r} must be 1-64 characters without spaces, "
                                "':', '/' or '~'", hint="e.g. knows, sibling-of, 师父")
    if attrs is not None and not isinstance(attrs, Mapping):
        raise InvalidInputError("a relation's attributes must be a JSON object, e.g. {\"since\": \"spring\"}")
    with wr.lock:  # the file read and the file written are one step
        names = Names(wr)
        node_id = names.resolve(node, context="node")
        target_id = names.resolve(target, context="the relation's target") if not remove else (
            names.resolve(target, must_exist=False, context="the relation's target"))
        head = wr.head_commit()
        tree = head.tree if head else None
        current = WorldView(wr, tree, scan_for_reader(wr, tree)).get(node_id)
        if current is None:
            raise NotFoundError(f"no node {node_id!r} in the world")
        new: dict[str, Any] = dict(current)
        relations = {t: dict(targets) for t, targets in (current.get("relations") or {}).items()}
        if replaces is not None:
            old_type, old_target = replaces
            relations.get(old_type, {}).pop(old_target, None)
        if remove:
            if target_id not in relations.get(rtype, {}):
                raise NotFoundError(f"{node_id} has no relation {rtype} → {target_id}")
            relations[rtype].pop(target_id)
        else:
            relations.setdefault(rtype, {})[target_id] = dict(attrs or {})
        new["relations"] = {t: targets for t, targets in relations.items() if targets}
        edit = write_hand_edit(wr, new, node_id=node_id)
    return {"path": edit.path, "node": edit.node, "relation": {"type": rtype, "target": target_id,
                                                               "removed": remove}}
