"""``narr status``: where the story stands and what the user changed since its last event."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.engine.clock import story_time
from narrative.engine.log import Entry, entry
from narrative.errors import ConflictError, InvalidWorldError
from narrative.nodefile import edges_of
from narrative.store import HandEdits, WorldRepo, finish_interrupted, hazards, scan_for_reader

if TYPE_CHECKING:
    from narrative.store import Commit, Tree


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
    story_time: dict[str, Any] | None = None  # the time in force: the last --at on the line

    def to_json(self, head_record: bool = True) -> dict[str, Any]:
        """``head_record`` False gives HEAD's one-line summary instead of its whole record."""
        head = None
        if self.head is not None:
            head = self.head.to_json() if head_record else self.head.summary
        return {
            "branch": self.branch,
            "head": head,
            "edits": self.edits,
            "problems": self.problems,
            "outside_world": self.outside,
            "failed_events": self.failed,
            "reformat": self.reformat,
            "warnings": self.warnings,
            "story_time": self.story_time,
        }


def status(wr: WorldRepo) -> Status:
    """Where the story stands: branch, last event, hand edits not yet recorded."""
    note = finish_interrupted(wr)
    head = wr.head_commit()
    scan = scan_for_reader(wr, head.tree if head else None)
    changes = []
    reformat = []
    for node_id in sorted(scan.edits):
        e = scan.edits[node_id]
        path = e.new_path or e.old_path
        for item in fields.node_change_json(node_id, e.old, e.new):
            item["path"] = path
            changes.append(item)
        if e.new is not None and e.rewrites_file:
            reformat.append(e.new_path or "")
    return Status(
        branch=wr.branch(),
        head=entry(head, wr) if head else None,
        edits=changes,
        problems=[*(h for h in hazards(wr) if h not in scan.problems), *scan.problems,
                  *hand_edit_problems(wr, head.tree if head else None, scan)],
        outside=scan.outside,
        failed=_failed(wr),
        reformat=[r for r in reformat if r],
        warnings=[*([note] if note else []), *_git_operation(wr), *_unadopted(wr, head)],
        story_time=story_time(wr) if head is not None else None,
    )


def _unadopted(wr: WorldRepo, head: Commit | None) -> list[str]:
    from narrative.engine.adopt import unadopted

    problem = unadopted(wr, head)
    return [f"{problem.message}: {problem.hint}"] if problem is not None else []


def _git_operation(wr: WorldRepo) -> list[str]:
    try:
        wr.require_no_git_operation()
    except ConflictError as exc:
        return [f"{exc.message}: {exc.hint}"]
    return []


def hand_edit_problems(wr: WorldRepo, head_tree: Tree | None,
                       scan: HandEdits) -> list[str]:
    """Relations that hand edits point at nodes that do not exist (the next event refuses them).

    A relation to a node deleted by hand is not one: the next event drops it.
    """
    from narrative.store import WorldView

    view = WorldView(wr, head_tree, scan)
    deleted = {i for i, e in scan.edits.items() if e.new is None}
    problems = []
    for node_id in sorted(scan.edits):
        e = scan.edits[node_id]
        if e.new is None:
            continue
        for rtype, dst in edges_of(e.new):
            if dst not in deleted and not view.exists(dst):
                problems.append(f"{e.new_path}: field /relations/{rtype}/{dst}: "
                                "points at a node that does not exist")
    return problems


def _failed(wr: WorldRepo) -> list[dict[str, Any]]:
    """Kept failed events (their models load only when there are some)."""
    if not wr.private.has_failed():
        return []
    from narrative.engine import failed

    return [failed.summary(f) for f in failed.load_all(wr)]


def require_valid_worktree(wr: WorldRepo) -> None:
    head = wr.head_commit()
    scan = scan_for_reader(wr, head.tree if head else None)
    if scan.problems:
        raise InvalidWorldError(scan.problems[0], details=scan.problems)
