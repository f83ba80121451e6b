"""``narr check``: the history explains the world, and the world is valid.

For every event on the story line (or, once a check has passed, every event since the
story line it verified: see below), ``tree(parent) + edits + diffusions ==
tree(event)`` (a merge event's parent is its first parent, the story line it
continues), compared node by node as JSON on exactly the nodes the event
touched (a tree diff finds them, so the cost follows the size of the events, not
of the world). Then every node of the current world is validated once: a valid
node, in the right file, with an id used once, whose relations point at nodes
that exist.

A check that finds the history whole remembers its tip in the catalog (keyed by commit,
so it stays true whatever HEAD does); the next check verifies only the events after it,
when that tip is still on the story line, so a check after one new event costs one
event, not the history. A commit id seals its whole history, so an old commit cannot
change under a remembered tip: rewriting one makes new commit ids, the remembered tip is
no longer on the line, and the next check walks everything. ``full`` walks everything
anyway (what a catalog deleted or copied from elsewhere also brings). An event id
reused from before the remembered tip is found only by a full check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from narrative import fields
from narrative.errors import InvalidWorldError
from narrative.ids import LAYERS, Layout, node_path, parse_node_path
from narrative.model import EventRecord
from narrative.nodefile import load_trusted, validate
from narrative.store import (
    Commit,
    Tree,
    Verified,
    WorldRepo,
    branches_at,
    changed_world_paths,
    committed_links,
    dangling_refs,
    first_parent,
    hazards,
    is_ancestor,
    last_record,
    node_file,
    odd_json_entries,
    resolve_rev,
    scan_for_reader,
    world_files,
)


@dataclass
class Problem:
    commit: str | None
    event: str | None
    content: str | None
    problem: str
    fix: list[str] = field(default_factory=list)  # narr commands that repair it, in order

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "event": self.event, "content": self.content,
                "problem": self.problem, "fix": self.fix}

    def __str__(self) -> str:
        where = f"event {self.event} ({self.commit[:10]})" if self.event and self.commit else (
            f"commit {self.commit[:10]}" if self.commit else "world")
        return f"{where}: {self.problem}"


@dataclass
class CheckReport:
    events: int = 0
    commits: int = 0
    nodes: int = 0
    problems: list[Problem] = field(default_factory=list)
    worktree_problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    since: str | None = None  # the verified tip the events were checked from (None: all)
    checked_events: int = 0  # events walked this time (``events`` counts the whole line)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.worktree_problems

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "events": self.events, "commits": self.commits,
                "since": self.since, "checked_events": self.checked_events,
                "nodes": self.nodes, "problems": [p.to_json() for p in self.problems],
                "worktree_problems": self.worktree_problems, "warnings": self.warnings}


def check(wr: WorldRepo, rev: str | None = None, *, world: bool = True, worktree_too: bool = True,
          full: bool = False,
          progress: Callable[[int, int, str], None] | None = None) -> CheckReport:
    """Every event of the story line explains its commit, and (``world``) every node is valid.

    Without ``full``, the events a passing check verified before are not walked again
    (see the module's docstring). ``progress(done, total, what)`` is told how far it is:
    the events, then the nodes.
    """
    report = CheckReport()
    if worktree_too and rev is None:
        from narrative.store import finish_interrupted

        note = finish_interrupted(wr)
        if note:
            report.warnings.append(note)
    if rev is None:
        head = wr.head_commit()
        if head is None:
            return report
    else:
        head = resolve_rev(wr, rev)
    mark = None if full else _verified_tip(wr, head)
    chain = list(first_parent(head, stop=mark.commit if mark else None))
    chain.reverse()
    boundary = None if mark else _shallow_boundary(wr, chain)
    if boundary is not None:
        report.warnings.append(
            f"this is a shallow clone: the history before {boundary.id[:10]} is not here, "
            "so that commit's event is not checked (git fetch --unshallow brings the rest)")
    if rev is None:
        report.warnings.extend(f"{name} names a commit this repository does not hold; it is "
                               "left out of narr chains and narr edits" for name in dangling_refs(wr))

    # A world made in an existing repository (narr init --here) has the repository's own
    # history under its genesis: that prehistory is git's, not the story's, and is not checked.
    start = 0 if mark else next((i for i, c in enumerate(chain) if _is_genesis(c)), 0)
    seen_ids: dict[str, str] = {}
    prev_record: EventRecord | None = None
    if mark is not None:
        report.since, report.events, report.commits = mark.commit, mark.events, mark.commits
        prev_record = last_record(resolve_rev(wr, mark.commit))
    for i, c in enumerate(chain):
        if progress:
            progress(i + 1, len(chain), "events")
        report.commits += 1
        if i < start:
            continue
        rec = c.record()
        parent = c.first_parent
        problems = [] if c is boundary else _check_commit(
            wr, c, parent if mark or i > start or rec is None else None, rec, prev_record,
            seen_ids)
        if rec is None:
            problems = [*_unreadable_record(c), *problems]
        if rec is not None:
            report.events += rec.kind in ("event", "merge")
            report.checked_events += rec.kind in ("event", "merge")
            seen_ids.setdefault(rec.id, c.id)
        fix: list[str] = []
        if rec is None and c.is_merge and problems and c is not boundary:
            problems, fix = _plain_merge(wr, c, head)
        for p in problems:
            report.problems.append(Problem(c.id, rec.id if rec else None,
                                           rec.content if rec else c.message.strip()[:80], p, fix))
        prev_record = rec if rec is not None else prev_record

    if world:
        since = resolve_rev(wr, mark.commit).tree if mark is not None else None
        problems, report.nodes = (check_world_since(wr, since, head.tree) if since is not None
                                  else check_world(wr, head.tree, progress))
        problems[:0] = committed_links(wr, head.tree.id)
        report.problems.extend(Problem(None, None, None, p) for p in problems)
        if rev is None and not report.problems and (mark is None or mark.commit != head.id):
            _remember_verified(wr, head, report)  # the history and the world as a whole
    if worktree_too and rev is None:
        from narrative.engine.status_data import hand_edit_problems

        scan = scan_for_reader(wr, head.tree)
        odd = [p for p in odd_json_entries(wr) if p not in scan.problems]
        more = [h for h in hazards(wr, full=True) if h not in scan.problems]
        report.worktree_problems = [*scan.problems, *more, *odd,
                                    *hand_edit_problems(wr, head.tree, scan)]
    return report


def _verified_tip(wr: WorldRepo, head: Commit) -> Verified | None:
    """The newest verified commit on ``head``'s story line, with what a check counted there:
    the tip a passing check remembered when it is on that line, or ``head`` itself when
    ``head`` is on the remembered line (a reset moved back along it)."""
    try:
        mark = wr.catalog.verified()
        if mark is None:
            return None
        if is_ancestor(wr, mark.commit, head.id):
            on_line = any(c.id == mark.commit for c in first_parent(head))
            return mark if on_line else None
        if is_ancestor(wr, head.id, mark.commit):
            tip = resolve_rev(wr, mark.commit)
            events = commits = 0
            for c in first_parent(tip, stop=head.id):
                rec = c.record()
                commits += 1
                events += rec is not None and rec.kind in ("event", "merge")
                if c.first_parent is None:
                    return None  # head is not on the remembered line's first parents
            return Verified(head.id, mark.events - events, mark.commits - commits)
    except Exception:  # a catalog that cannot be read, a commit no longer here: walk it all
        return None
    return None


def _remember_verified(wr: WorldRepo, head: Commit, report: CheckReport) -> None:
    with contextlib.suppress(Exception):  # a cache: a read-only catalog only costs the next check
        wr.catalog.remember_verified(Verified(head.id, report.events, report.commits))


def _unreadable_record(c: Commit) -> list[str]:
    """A commit that carries a record narr cannot read (a stranger's, nested a thousand deep):
    named, then checked as the plain git commit it is taken for."""
    from narrative.store import unreadable_record

    why = unreadable_record(c.message)
    return [f"its event record cannot be read ({why}); narr takes it for a plain git commit"
            ] if why else []


def _plain_merge(wr: WorldRepo, c: Commit, head: Commit) -> tuple[list[str], list[str]]:
    """A ``git merge`` (or ``git pull``) made a two-parent commit no event explains: say so,
    and how to make it a merge event: back to its first parent (the plain merge, and any
    events after it, are kept as an undone chain), ``narr merge`` its second parent, then
    replay the events that came after it."""
    first, second = c.parent_ids[0], c.parent_ids[1]
    names = branches_at(wr, second)  # local ones first: the nicest name for it
    theirs = names[0] if names else second[:12]
    fix = [f"narr reset {first[:12]}", f"narr merge {theirs}"]
    after = sum(1 for _ in first_parent(head, stop=c.id))
    if after:
        fix.append(f"narr replay {head.id[:12]} --reuse")
    more = (f"; the {after} commit(s) after it come back with the replay" if after else "")
    return [f"this commit is a plain git merge of {theirs} into the story line: no narr event "
            "explains what it changed under world/. To make it a merge event: "
            + ", then ".join(fix) + " (the reset keeps the plain merge as an undone chain"
            + more + ")"], fix


def _shallow_boundary(wr: WorldRepo, chain: list[Commit]) -> Commit | None:
    """The oldest commit of a shallow clone when its parents were left behind.

    It has no parent here, but it is no genesis: the events before it are just
    not in this copy, which is not a broken history.
    """
    if not wr.is_shallow() or not chain or chain[0].parent_ids:
        return None
    rec = chain[0].record()
    return None if rec is not None and rec.kind == "genesis" else chain[0]


def _is_genesis(c: Commit) -> bool:
    rec = c.record()
    return rec is not None and rec.kind == "genesis"


def _check_commit(wr: WorldRepo, c: Commit, parent: Commit | None, rec: EventRecord | None,
                  prev: EventRecord | None, seen: dict[str, str]) -> list[str]:
    layout = wr.config.layout
    old_tree = parent.tree if parent is not None else None
    changed = changed_world_paths(wr, old_tree, c.tree)
    if rec is None:
        if parent is None:
            return ["the first commit is not a narr genesis"]
        if changed:
            return [f"this commit changes {changed[0]} (and {len(changed) - 1} more files) under "
                    "world/ but is not a narr event; the history cannot explain the change"
                    if len(changed) > 1 else
                    f"this commit changes {changed[0]} but is not a narr event"]
        return []
    problems: list[str] = []
    if rec.id in seen:
        problems.append(f"event id {rec.id} is also used by commit {seen[rec.id][:10]}")
    if rec.kind == "genesis":
        if parent is not None:
            problems.append("a genesis record on a commit that has a parent")
        return problems
    if parent is None:
        return [*problems, "an event without a parent commit"]
    if prev is not None and rec.parent != prev.id:
        problems.append(f"the record names parent {rec.parent} but the parent event is {prev.id}")

    touched = {ch.target for ch in [*rec.edits, *rec.diffusions]}
    non_nodes = []
    for path in changed:
        placed = parse_node_path(path, layout)
        if placed is None:
            non_nodes.append(path)
        else:
            touched.add(placed[1])
    for path in non_nodes:
        problems.append(f"{path} changed, but it is not a node file")

    before: dict[str, dict[str, Any] | None] = {}
    after: dict[str, dict[str, Any] | None] = {}
    for node_id in touched:
        before[node_id] = _node_in(old_tree, node_id, layout)
        after[node_id] = _node_in(c.tree, node_id, layout)
    expected = dict(before)
    for kind, changes in (("edit", rec.edits), ("diffusion", rec.diffusions)):
        for line in fields.apply_changes(expected, changes):
            problems.append(f"{kind} does not start from the parent's world: {line}")
    for node_id in sorted(touched):
        want, got = expected.get(node_id), after[node_id]
        if not fields.same(want if want is not None else fields.ABSENT,
                           got if got is not None else fields.ABSENT):
            detail = _mismatch(node_id, want, got)
            problems.append(f"node {node_id}: the committed file does not match the record ({detail})")
    for ch in rec.diffusions if rec.kind == "event" else []:  # a merge brings others' nodes
        if ch.field == "" and ch.has_new and isinstance(ch.new_value, dict) and (
                ch.new_value.get("created_by_event") != rec.id):
            problems.append(f"node {ch.target} was created by this event but its "
                            f"created_by_event is {ch.new_value.get('created_by_event')!r}")
    for node_id in sorted(touched):
        node = after[node_id]
        if node is None:
            continue
        problems.extend(_node_problems(c.tree, node, node_id, layout))
    return problems


def _mismatch(node_id: str, want: dict[str, Any] | None, got: dict[str, Any] | None) -> str:
    """What differs between the node the record explains and the node committed."""
    if want is None:
        return "the record says it is gone"
    if got is None:
        return "the record says it exists"
    return ", ".join(f"{ch.field}: recorded {fields.show(ch.old)} but committed {fields.show(ch.new)}"
                     for ch in fields.node_changes(node_id, want, got)[:3])


def _node_problems(tree: Tree, node: dict[str, Any], node_id: str, layout: Layout) -> list[str]:
    path = node_path(node_id, node.get("layer", "character"), layout) if (
        node.get("layer") in LAYERS) else f"node {node_id}"
    try:
        validate(node, path)
    except InvalidWorldError as exc:
        return exc.details or [exc.message]
    out = []
    for rtype, targets in node.get("relations", {}).items():
        for dst in targets:
            if _node_in(tree, dst, layout) is None:
                out.append(f"{path}: relation {rtype}->{dst} points at a node that does not exist")
    return out


def _node_in(tree: Tree | None, node_id: str, layout: Layout) -> dict[str, Any] | None:
    """The node's JSON (a marked stand-in when its blob does not parse), or None."""
    found = node_file(tree, node_id, layout)
    if found is None:
        return None
    try:
        return dict(load_trusted(found[1]))
    except ValueError:
        return {"id": node_id, "__unreadable__": True}


def check_world_since(wr: WorldRepo, verified: Tree, tree: Tree) -> tuple[list[str], int]:
    """:func:`check_world` for a world ``tree`` that differs from a ``verified`` one (whose
    every node was found valid) only in the node files a tree diff names: those are checked
    as :func:`check_world` checks every file, each id is held by one file, and no node left
    untouched relates to a node that is gone (the catalog's edges, at ``tree``, say who
    points at it)."""
    layout = wr.config.layout
    problems: list[str] = []
    gone: list[str] = []
    ids: set[str] = set()
    for path in changed_world_paths(wr, verified, tree):
        placed = parse_node_path(path, layout)
        if placed is None:
            if tree.read(path) is not None:
                problems.append(f"{path}: not a node file of the {layout} layout")
            continue
        ids.add(placed[1])
    from narrative.nodefile import parse_node_file

    for node_id in sorted(ids):
        held = [(path, data) for path in (node_path(node_id, layer, layout) for layer in LAYERS)
                if (data := tree.read(path)) is not None]
        if not held:
            gone.append(node_id)
            continue
        for path, _ in held[1:]:
            problems.append(f"{path}: id {node_id!r} is also used by {held[0][0]}")
        path, data = held[0]
        try:
            node = parse_node_file(data, path, layout)
        except InvalidWorldError as exc:
            problems.extend(exc.details or [exc.message])
            continue
        for rtype, targets in node["relations"].items():
            for dst in targets:
                if node_file(tree, dst, layout) is None:
                    problems.append(f"{path}: relation {rtype}->{dst} points at a node that "
                                    "does not exist")
    catalog = wr.catalog_at(tree)
    for edge in sorted(catalog.incoming(gone)) if gone else []:
        if edge.src in ids:
            continue  # checked above, from its own file
        found = node_file(tree, edge.src, layout)
        if found is not None:
            problems.append(f"{found[0]}: relation {edge.type}->{edge.dst} points at a node "
                            "that does not exist")
    return problems, catalog.count()


def check_world(wr: WorldRepo, tree: Tree,
                progress: Callable[[int, int, str], None] | None = None) -> tuple[list[str], int]:
    """Every node file of ``tree`` valid, well placed, unique, with live relations."""
    layout = wr.config.layout
    problems: list[str] = []
    # Per node only its path and its relations' ends are kept for the second pass: the
    # parsed nodes of a 100k-node world held at once peaked a server at 537 MB.
    nodes: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    blobs = world_files(wr, tree)
    for i, (path, oid) in enumerate(blobs):
        if progress:
            progress(i + 1, len(blobs), "nodes")
        placed = parse_node_path(path, layout)
        if placed is None:
            problems.append(f"{path}: not a node file of the {layout} layout")
            continue
        try:
            from narrative.nodefile import parse_node_file

            node = parse_node_file(wr.blob_bytes(oid), path, layout)
        except InvalidWorldError as exc:
            problems.extend(exc.details or [exc.message])
            continue
        if node["id"] in nodes:
            problems.append(f"{path}: id {node['id']!r} is also used by {nodes[node['id']][0]}")
            continue
        nodes[node["id"]] = (path, [(rtype, dst) for rtype, targets in node["relations"].items()
                                    for dst in targets])
    for path, ends in nodes.values():
        for rtype, dst in ends:
            if dst not in nodes:
                problems.append(f"{path}: relation {rtype}->{dst} points at a node that "
                                "does not exist")
    return problems, len(nodes)
