"""Reading the story: revisions, the event log, records, nodes and hand edits.

Reads never wait for the write lock and change nothing, with one exception: a
command that reads the working tree first finishes a write that a crash
interrupted (:func:`finish_interrupted`), so it never shows a half-written world.
Each does only the work its answer needs (``log -n 20`` reads twenty commits,
``get`` one file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pygit2

from narrative import fields
from narrative.errors import (
    BusyError,
    ConflictError,
    InvalidInputError,
    InvalidWorldError,
    NotFoundError,
)
from narrative.ids import LAYERS, check_id, node_path, parse_node_path
from narrative.nodefile import NodeDict, load_trusted, parse_node_file
from narrative.store import journal, records, worktree
from narrative.store.lock import WriteLock
from narrative.store.trees import blob_at
from narrative.store.worldrepo import WorldRepo

if TYPE_CHECKING:
    from narrative.model import EventRecord

_EVENT_PREFIX = re.compile(r"^[0-9a-f]{8}-[0-9a-f-]*$|^[0-9a-f]{8,}$")


class Entry:
    """One commit of the story line and its record (None for a commit narr did not make).

    The record is shown from its JSON and validated into an
    :class:`~narrative.model.EventRecord` only when asked for, so reading the log
    never pays for building the models.
    """

    def __init__(self, commit: pygit2.Commit) -> None:
        self.commit = commit
        self.raw = records.decode_raw(commit.message)
        self._record: EventRecord | None = None

    @property
    def record(self) -> EventRecord | None:
        if self._record is None and self.raw is not None:
            self._record = records.decode(self.commit.message)
        return self._record

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"commit": str(self.commit.id)}
        if self.raw is not None:
            out.update(self.raw)
        else:
            out.update({"kind": "commit", "id": None, "content": self.commit.message.strip(),
                        "diffusions": [], "edits": []})
        return out


def entry(commit: pygit2.Commit) -> Entry:
    return Entry(commit)


# --- revisions ------------------------------------------------------------------------


def resolve(wr: WorldRepo, rev: str) -> pygit2.Commit:
    """A commit from any git revision (``HEAD~3``, a branch, a short hash) or an event id."""
    rev = rev.strip()
    if not rev:
        raise InvalidInputError("empty revision")
    if rev.startswith("-"):
        raise InvalidInputError(f"{rev!r} is not a revision")
    maybe_event = _EVENT_PREFIX.match(rev) is not None
    if maybe_event and "-" in rev:  # an event id: looked up before git's revisions
        found = find_event(wr, rev)
        if found is not None:
            return found
    try:
        return wr.repo.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        pass
    if maybe_event and "-" not in rev:
        found = find_event(wr, rev)
        if found is not None:
            return found
    raise NotFoundError(_unresolved(wr, rev))


def _unresolved(wr: WorldRepo, rev: str) -> str:
    m = re.match(r"^(.*?)~(\d+)$", rev)
    if m:
        try:
            base = wr.repo.revparse_single(m.group(1) or "HEAD").peel(pygit2.Commit)
            depth = 0
            while base.parents:
                base = base.parents[0]
                depth += 1
            return (f"{rev} does not resolve: the story line has only {depth} event"
                    f"{'s' if depth != 1 else ''} before {m.group(1) or 'HEAD'}")
        except (KeyError, ValueError, pygit2.GitError):
            pass
    return f"{rev!r} is neither a git revision nor an event id of this world"


def find_event(wr: WorldRepo, prefix: str) -> pygit2.Commit | None:
    cache = wr.index_cache
    hits = cache.find_events(prefix)
    if not hits:
        index_all_events(wr)
        hits = cache.find_events(prefix)
    live: list[tuple[str, pygit2.Commit]] = []
    for event_id, commit_id in hits:
        try:
            obj = wr.repo[commit_id]
        except KeyError:
            continue
        if isinstance(obj, pygit2.Commit):
            live.append((event_id, obj))
    if len(live) > 1:
        raise InvalidInputError(
            f"event id prefix {prefix!r} is ambiguous: "
            + ", ".join(e for e, _ in live[:5]) + ("…" if len(live) > 5 else ""),
        )
    return live[0][1] if live else None


def index_all_events(wr: WorldRepo) -> int:
    """Fill the event-id index from every commit reachable from narr's refs and branches."""
    repo = wr.repo
    walker = None
    for name in repo.references:
        if not (name.startswith("refs/heads/") or name.startswith("refs/narr/")):
            continue
        try:
            target = repo.references[name].peel(pygit2.Commit).id
        except (KeyError, ValueError, pygit2.GitError):
            continue
        if walker is None:
            walker = repo.walk(target, pygit2.enums.SortMode.NONE)
        else:
            walker.push(target)
    if walker is None:
        return 0
    rows = []
    for commit in walker:
        rec = records.decode(commit.message)
        if rec is not None:
            rows.append((rec.id, str(commit.id)))
    wr.index_cache.remember_events(rows)
    return len(rows)


# --- log and show ---------------------------------------------------------------------


def log(wr: WorldRepo, limit: int | None = None, rev: str = "HEAD") -> list[Entry]:
    """Events along the first-parent chain from ``rev``, newest first."""
    if wr.repo.head_is_unborn:
        return []
    commit: pygit2.Commit | None = resolve(wr, rev)
    out: list[Entry] = []
    while commit is not None and (limit is None or len(out) < limit):
        out.append(entry(commit))
        commit = commit.parents[0] if commit.parents else None
    return out


def show(wr: WorldRepo, rev: str = "HEAD") -> Entry:
    return entry(resolve(wr, rev))


# --- nodes ----------------------------------------------------------------------------


def parse_field(text: str) -> str:
    """A JSON pointer from ``/state/location`` or the dotted ``state.location``."""
    if text.startswith("/") or text == "":
        return text
    return fields.pointer(*text.split("."))


def get_node(wr: WorldRepo, node_id: str, at: str | None = None) -> tuple[str, NodeDict]:
    """``(path, node)``: from the working tree (hand edits included), or at a revision."""
    check_id(node_id)
    layout = wr.config.layout
    if at is not None:
        tree = resolve(wr, at).tree
        for layer in LAYERS:
            path = node_path(node_id, layer, layout)
            blob = blob_at(tree, path)
            if blob is not None:
                return path, load_trusted(blob.data)
        raise NotFoundError(f"no node {node_id!r} in the world at {at}")
    finish_interrupted(wr)
    head = wr.head_commit()
    for layer in LAYERS:
        path = node_path(node_id, layer, layout)
        full = wr.abs(path)
        if full.is_file():
            data = full.read_bytes()
            committed = blob_at(head.tree, path) if head is not None else None
            if committed is not None and committed.id == pygit2.hash(data):
                return path, load_trusted(data)  # as committed: validated when it was sealed
            return path, parse_node_file(data, path, layout)
    raise NotFoundError(f"no node {node_id!r} in the world",
                        hint="narr nodes lists the nodes")


def get_value(wr: WorldRepo, node_id: str, field: str | None = None,
              at: str | None = None) -> Any:
    _, node = get_node(wr, node_id, at)
    if not field:
        return node
    ptr = parse_field(field)
    value = fields.get(node, ptr)
    if value is fields.ABSENT:
        raise NotFoundError(f"{node_id} has no field {ptr}")
    return value


def locate(wr: WorldRepo, node_id: str) -> str:
    """The path of a node's file (existing, or where a new node of that id would go)."""
    check_id(node_id)
    head = wr.head_commit()
    for layer in LAYERS:
        path = node_path(node_id, layer, wr.config.layout)
        if wr.abs(path).exists() or (head is not None and blob_at(head.tree, path) is not None):
            return path
    raise NotFoundError(f"no node {node_id!r} in the world",
                        hint="to make one, give its layer: narr path ID --layer character")


def list_nodes(wr: WorldRepo, layer: str | None = None) -> list[dict[str, Any]]:
    """Every node of the current world (hand edits included), sorted by id.

    ``edited`` is None, ``"new"``, ``"modified"``, ``"deleted"`` or ``"invalid"``
    (the file is there but not a valid node: ``narr status`` says why).
    """
    if layer is not None and layer not in LAYERS:
        raise InvalidInputError(f"unknown layer {layer!r}; expected one of {', '.join(LAYERS)}")
    finish_interrupted(wr)
    head = wr.head_commit()
    if head is None:
        return []
    cache = wr.index_cache
    cache.sync(wr.repo, wr.world_tree_id(head.tree), wr.config.layout)
    rows: dict[str, dict[str, Any]] = {}
    q = "SELECT id, layer, kind, name, lifecycle FROM nodes"
    args: tuple[str, ...] = ()
    if layer:
        q += " WHERE layer=?"
        args = (layer,)
    for node_id, lay, kind, name, lifecycle in cache.db.execute(q, args):
        rows[node_id] = {"id": node_id, "layer": lay, "kind": kind, "name": name,
                         "lifecycle": lifecycle, "edited": None}
    edits = worktree.scan_for_reader(wr, head.tree)
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
    return [rows[k] for k in sorted(rows)]


# --- status ---------------------------------------------------------------------------


@dataclass
class Status:
    branch: str | None
    head: Entry | None
    edits: list[dict[str, Any]]
    problems: list[str]
    outside: list[str]
    failed: list[dict[str, Any]]
    reformat: list[str]
    warnings: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "head": self.head.to_json() if self.head else None,
            "edits": self.edits,
            "problems": self.problems,
            "outside_world": self.outside,
            "failed_events": self.failed,
            "reformat": self.reformat,
            "warnings": self.warnings,
        }


def status(wr: WorldRepo) -> Status:
    note = finish_interrupted(wr)
    head = wr.head_commit()
    scan = worktree.scan_for_reader(wr, head.tree if head else None)
    changes = []
    reformat = []
    for node_id in sorted(scan.edits):
        e = scan.edits[node_id]
        path = e.new_path or e.old_path
        for ch in fields.node_changes(node_id, e.old, e.new):
            item = ch.model_dump(mode="json")
            item["path"] = path
            changes.append(item)
        if e.new is not None and e.rewrites_file:
            reformat.append(e.new_path or "")
    return Status(
        branch=wr.branch(),
        head=entry(head) if head else None,
        edits=changes,
        problems=scan.problems + hand_edit_problems(wr, head.tree if head else None, scan),
        outside=scan.outside,
        failed=_failed(wr),
        reformat=[r for r in reformat if r],
        warnings=[*([note] if note else []), *_git_operation(wr)],
    )


def _git_operation(wr: WorldRepo) -> list[str]:
    try:
        wr.require_no_git_operation()
    except ConflictError as exc:
        return [f"{exc.message}: {exc.hint}"]
    return []


def hand_edit_problems(wr: WorldRepo, head_tree: pygit2.Tree | None,
                       scan: worktree.HandEdits) -> list[str]:
    """Relations that hand edits point at nodes that do not exist (the next event refuses them).

    A relation to a node deleted by hand is not one: the next event drops it.
    """
    from narrative.world import WorldView

    view = WorldView(wr, head_tree, scan)
    deleted = {i for i, e in scan.edits.items() if e.new is None}
    problems = []
    for node_id in sorted(scan.edits):
        e = scan.edits[node_id]
        if e.new is None:
            continue
        for rtype, targets in e.new.get("relations", {}).items():
            for dst in targets:
                if dst not in deleted and view.get(dst) is None:
                    problems.append(f"{e.new_path}: field /relations/{rtype}/{dst}: "
                                    "points at a node that does not exist")
    return problems


def finish_interrupted(wr: WorldRepo) -> str | None:
    """Finish (or drop) a write a crash interrupted; say what was done (None if nothing).

    A journal left beside a running writer is that writer's own, so this only acts
    when it can take the write lock at once; otherwise the writer finishes it.
    """
    if not (wr.narr_dir / journal.JOURNAL).exists():
        return None
    lock = WriteLock(wr.lock.path, timeout=0)
    try:
        lock.acquire()
    except BusyError:
        return None
    try:
        return journal.recover(wr)
    finally:
        lock.release()


def _failed(wr: WorldRepo) -> list[dict[str, Any]]:
    """Kept failed events (their models load only when there are some)."""
    directory = wr.narr_dir / "failed"
    if not directory.is_dir() or not any(directory.glob("*.json")):
        return []
    from narrative.engine import pending

    return [pending.summary(f) for f in pending.load_all(wr)]


def require_valid_worktree(wr: WorldRepo) -> None:
    head = wr.head_commit()
    scan = worktree.scan_for_reader(wr, head.tree if head else None)
    if scan.problems:
        raise InvalidWorldError(scan.problems[0], details=scan.problems)
