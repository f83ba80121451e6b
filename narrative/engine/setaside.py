"""Hand edits moved out of the way (by a reset or a switch), and getting them back.

Nothing a user wrote is dropped: uncommitted edits a reset replaces become a
commit under ``refs/narr/edits/`` (their bytes exactly, even a file that is not
valid JSON). ``narr edits restore N`` puts them back field by field onto the
world as it is now, refusing (or, with ``--force``, winning) where the world has
changed the same field since.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.delta.world import World
from narrative.errors import ConflictError, InvalidInputError, NotFoundError, Step
from narrative.fields import SET_ASIDE_SPELLING, FieldConflict
from narrative.ids import Layout, parse_node_path
from narrative.nodefile import NodeDict, dump
from narrative.store import (
    HandEdits,
    Move,
    SetAside,
    WorldRepo,
    WorldView,
    delete_set_aside_ref,
    fetched_refs,
    held_only_by,
    keep_abandoned,
    load_set_aside,
    move_head,
    plan_move,
    remote_of,
    scan_edits,
    set_aside_edits,
    set_aside_refs,
    writing,
)

if TYPE_CHECKING:
    from narrative.model import Change


@dataclass
class Carried:
    """A user's changes laid onto another world: resulting nodes, raw files, collisions."""

    nodes: dict[str, NodeDict | None] = field(default_factory=dict)
    raw: dict[str, bytes | None] = field(default_factory=dict)
    collisions: list[FieldConflict] = field(default_factory=list)


NODE_GONE = "the node no longer exists"


def carry(changes: list[Change], target: World, into: dict[str, NodeDict | None] | None = None,
          ) -> Carried:
    """Apply ``changes`` (made against some base) onto ``target``, the user's value winning.

    A collision is a field whose value in ``target`` is neither the base value
    (untouched since) nor already the user's value.
    """
    out = Carried(nodes=dict(into or {}))

    def current(node_id: str) -> NodeDict | None:
        if node_id in out.nodes:
            return out.nodes[node_id]
        return target.get(node_id)

    for ch in changes:
        node = current(ch.target)
        if node is None and ch.field != "":
            out.collisions.append(FieldConflict(ch.target, ch.field, base=ch.old,
                                                theirs=ch.new, note=NODE_GONE))
            continue
        now = fields.value_in(node, ch.field)
        if fields.same(now, ch.new):
            continue
        if not fields.same(now, ch.old):
            out.collisions.append(FieldConflict(ch.target, ch.field, base=ch.old, ours=now,
                                                theirs=ch.new))
        if ch.field == "":
            out.nodes[ch.target] = copy.deepcopy(ch.new) if ch.has_new else None
            continue
        assert node is not None
        node = copy.deepcopy(node)
        if ch.has_new:
            fields.put(node, ch.field, copy.deepcopy(ch.new))
        else:
            fields.drop(node, ch.field)
        out.nodes[ch.target] = node
    return out


def _collision_line(c: dict[str, Any]) -> str:
    if "path" in c:  # a file that is no node: compared byte for byte, no field to name
        return f"{c['path']}: {c['note']}"
    return FieldConflict.from_json(SET_ASIDE_SPELLING, c).line(SET_ASIDE_SPELLING)


def overrides_for(target: World, nodes: dict[str, NodeDict | None]) -> dict[str, bytes | None]:
    """Working-tree file contents that put ``nodes`` (id -> node, None = gone) in place."""
    out: dict[str, bytes | None] = {}
    for node_id, node in nodes.items():
        old_path = target.committed_path(node_id)
        new_path = target.path(node) if node is not None else None
        if old_path is not None and old_path != new_path:
            out[old_path] = None
        if new_path is not None and node is not None:
            out[new_path] = dump(node)
    return out


def user_changes(scan: HandEdits) -> list[Change]:
    """The uncommitted hand edits as field-level changes against HEAD."""
    out: list[Change] = []
    for node_id in sorted(scan.edits):
        e = scan.edits[node_id]
        out.extend(fields.node_changes(node_id, e.old, e.new))
    return out


def invalid_paths(scan: HandEdits) -> list[str]:
    """Changed world paths that did not parse as nodes (carried or set aside as raw bytes)."""
    parsed = {p for e in scan.edits.values() for p in (e.old_path, e.new_path) if p}
    return sorted(p for p in scan.raw if p not in parsed)


# --- listing and restoring ------------------------------------------------------------


def changes_of(wr: WorldRepo, item: SetAside) -> tuple[list[Change], dict[str, bytes | None]]:
    """Field-level changes a set-aside holds, and raw files that are not valid nodes."""
    layout: Layout = wr.config.layout
    base_tree, tree = item.base.tree, item.commit.tree
    changes: list[Change] = []
    raw: dict[str, bytes | None] = {}
    by_id: dict[str, tuple[NodeDict | None, NodeDict | None]] = {}
    for path in item.meta.get("paths", []):
        old_data, new_data = base_tree.read(path), tree.read(path)
        old = _node(old_data, path, layout)
        new = _node(new_data, path, layout)
        if new_data is not None and new is None:
            raw[path] = new_data
            continue
        node_id = (new or old or {}).get("id")
        if node_id is None:
            continue
        before, after = by_id.get(node_id, (None, None))
        by_id[node_id] = (before or old, after or new)
    for node_id in sorted(by_id):
        old, new = by_id[node_id]
        changes.extend(fields.node_changes(node_id, old, new))
    return changes, raw


def _node(data: bytes | None, path: str, layout: Layout) -> NodeDict | None:
    if data is None or parse_node_path(path, layout) is None:
        return None
    from narrative.errors import InvalidWorldError
    from narrative.nodefile import parse_node_file

    try:
        return parse_node_file(data, path, layout)
    except InvalidWorldError:
        return None


def _utc(stamp: str | None) -> str | None:
    """A stored time as ISO 8601 UTC (set-asides made before stored theirs with an offset)."""
    if not stamp:
        return stamp
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    if when.tzinfo is None:
        return stamp
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _numbered(wr: WorldRepo) -> list[tuple[str, int, str | None, str]]:
    """Every set-aside as (its number as typed, number, remote, ref): one's own 1, 2...
    newest first, then each remote's (``origin/1``...), fetched by narr pull or clone."""
    out: list[tuple[str, int, str | None, str]] = [
        (str(n), n, None, name) for n, name in enumerate(set_aside_refs(wr), 1)]
    counts: dict[str, int] = {}
    for name in fetched_refs(wr, "edits"):
        remote = remote_of(name)
        assert remote is not None
        counts[remote] = counts.get(remote, 0) + 1
        out.append((f"{remote}/{counts[remote]}", counts[remote], remote, name))
    return out


def list_set_asides(wr: WorldRepo) -> list[dict[str, Any]]:
    """The hand edits set aside by resets and switches, newest first, for :func:`restore`."""
    restored = wr.private.restored()
    out = []
    for _, n, remote, name in _numbered(wr):
        item = load_set_aside(wr, name)
        changes, raw = changes_of(wr, item)
        out.append({
            "n": n, "remote": remote, "ref": name, "commit": item.commit.id,
            "created_at": _utc(item.meta.get("created_at")), "reason": item.meta.get("reason"),
            "head": item.meta.get("head"), "paths": item.meta.get("paths", []),
            "changes": [c.model_dump(mode="json") for c in changes],
            "raw_files": sorted(raw), "restored_at": restored.get(name),
        })
    return out


def pick(wr: WorldRepo, which: str) -> SetAside:
    numbered = _numbered(wr)
    for typed, _, _, name in numbered:
        if which == typed:
            return load_set_aside(wr, name)
    names = [name for *_, name in numbered]
    exact = [n for n in names if which in (n, n.rsplit("/", 1)[-1])]
    found = exact or [n for n in names if len(which) >= 4 and n.rsplit("/", 1)[-1].startswith(which)]
    if len(found) == 1:
        return load_set_aside(wr, found[0])
    if found:
        raise InvalidInputError(f"{which!r} matches {len(found)} set-aside edits; give more of it "
                                "or its number (narr edits lists them)")
    listed = ", ".join(typed for typed, *_ in numbered) if numbered else "none are kept"
    raise NotFoundError(f"no set-aside edits {which!r} ({listed}; narr edits lists them)")


@dataclass
class RestoreResult:
    ref: str
    changes: list[Change]
    collisions: list[dict[str, Any]]
    paths: list[str]
    set_aside: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "changes": [c.model_dump(mode="json") for c in self.changes],
                "collisions": self.collisions, "paths": self.paths, "set_aside": self.set_aside,
                "warnings": self.warnings}


def restore(wr: WorldRepo, which: str, *, force: bool = False) -> RestoreResult:
    """Put set-aside edits back into the working tree as hand edits."""
    with writing(wr) as recovered:
        wr.require_no_git_operation()  # edits put back under a stopped merge would block it
        item = pick(wr, which)
        head = wr.head_commit()
        assert head is not None
        scan = scan_edits(wr, head.tree)
        view = WorldView(wr, head.tree, scan)
        changes, raw = changes_of(wr, item)
        carried = carry(changes, view)
        raw_collisions = []
        for path in raw:
            now = scan.raw.get(path, head.tree.blob_id(path))
            if now != item.base.tree.blob_id(path):
                raw_collisions.append({"path": path, "note": "changed since it was set aside"})
        collisions = [c.to_json(SET_ASIDE_SPELLING) for c in carried.collisions] + raw_collisions
        gone = [c.to_json(SET_ASIDE_SPELLING) for c in carried.collisions if c.note == NODE_GONE]
        if gone:
            raise ConflictError(
                f"{len(gone)} set-aside change(s) are to nodes that no longer exist: "
                + ", ".join(sorted({c["target"] for c in gone})),
                conflicts=gone, details=[_collision_line(c) for c in gone],
                hint=f"reset to an event where they exist and restore there; the edits stay kept "
                     f"(git show {item.ref})",
            )
        if collisions and not force:
            raise ConflictError(
                f"{len(collisions)} field(s) changed since these edits were set aside",
                conflicts=collisions, details=[_collision_line(c) for c in collisions],
                hint="{0} lets the set-aside values win (your current hand edits are set "
                     "aside first)",
                steps=[Step("restore_edits", {"which": which, "force": True},
                            cli="narr edits restore N --force")],
            )
        saved = None
        if collisions and force:
            kept = set_aside_edits(wr, head, scan,
                                  f"before restoring {item.ref.rsplit('/', 1)[-1]}")
            saved = kept.ref if kept else None
        overrides = overrides_for(view, carried.nodes)
        overrides.update(raw)
        # The files move like any move of the story (through the journal), the ref stays:
        # the other hand edits keep what the working tree holds, the index stays HEAD's.
        updates = plan_move(wr, head.tree, head.tree, scan, overrides,
                            keep_worktree=frozenset(set(scan.raw) - set(overrides)))
        move_head(wr, Move(ref=None, old=head.id, new=head.id,
                                message=f"narr edits restore: {item.ref}", updates=tuple(updates),
                                tree=head.tree))
        wr.private.mark_restored(item.ref, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        return RestoreResult(item.ref, changes, collisions, sorted(overrides), saved, recovered)


@dataclass
class EditsDropped:
    dropped: str
    kept_as: str | None = None  # the abandoned chain now keeping the events the edits alone held

    def to_json(self) -> dict[str, Any]:
        return {"dropped": self.dropped, "kept_as": self.kept_as}


def drop_set_aside(wr: WorldRepo, which: str) -> EditsDropped:
    """Delete one set-aside (the only way narr ever forgets hand edits: on request).

    Set-aside edits sit on top of the commit they were set aside from, so their ref holds
    that commit's history too. Where it is the last to hold some events (a chain dropped
    with ``--force`` while the edits still held it), those events are kept as an abandoned
    chain first: dropping edits never drops the story."""
    with wr.lock:
        item = pick(wr, which)
        remote = remote_of(item.ref)
        if remote is not None:
            raise InvalidInputError(
                f"these set-aside edits are {remote}'s: dropping this copy would bring them back "
                "with the next narr pull", hint="only their writer drops them")
        kept = None
        base = item.base
        if any((rec := c.record()) is not None and rec.kind == "event"
               for c in held_only_by(wr, base.id)):
            kept = keep_abandoned(wr, base.id, wr.branch() or "edits",
                                  f"narr edits drop: kept what {item.ref} alone held", wr.head_id())
        delete_set_aside_ref(wr, item.ref)
        return EditsDropped(item.ref, kept)
