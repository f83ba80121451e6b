"""``narr status``: where the story stands and what the user changed since its last event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import PrivateAttr

from narrative import fields
from narrative.answers import Answer, Said, Shape
from narrative.engine.clock import story_time
from narrative.engine.failed_answers import FailedSummary
from narrative.engine.log import entry
from narrative.errors import ConflictError, InvalidWorldError
from narrative.nodefile import edges_of
from narrative.shapes import Change, PlainCommit, Record
from narrative.store import HandEdits, WorldRepo, finish_interrupted, hazards, scan_for_reader

if TYPE_CHECKING:
    from narrative.store import Commit, Tree


class StoryTimeSince(Shape):
    """The event that set the story time in force."""

    id: str | None
    commit: str
    content: str


class StoryTime(Shape):
    """The story time in force (the last one an event set on the line) and since when."""

    value: str
    since: StoryTimeSince


class Status(Answer):
    """Where the story stands: the branch, its last event (``head``), the hand edits not yet
    recorded (``edits``, field by field, each with its file), anything in the way
    (``problems``), files changed outside ``world/``, the failed events kept, the files the
    next event rewrites in narr's layout, and the story time in force."""

    NAME: ClassVar[str] = "status"
    VERSION: ClassVar[int] = 2  # 2: what chapters add (a chapter's record, where an event was told)

    branch: str | None
    head: Record | PlainCommit | None
    edits: list[Change]
    problems: list[str]
    outside_world: list[str]
    failed_events: list[FailedSummary]
    reformat: list[str]
    warnings: list[Said]
    """What is in the way, each with what to do (its steps worded by the door that sends it)."""
    story_time: StoryTime | None
    _line: dict[str, Any] | None = PrivateAttr(default=None)

    @property
    def head_line(self) -> dict[str, Any] | None:
        """HEAD as one line of the log shows it (``commit``, ``content``...): what a status
        asked for with ``head_record=False`` has in place of its record."""
        return self._line


def status(wr: WorldRepo, *, head_record: bool = True) -> Status:
    """Where the story stands: branch, last event, hand edits not yet recorded.

    ``head_record`` False leaves HEAD's record unread (it may be a bulk event of tens of
    megabytes): :attr:`Status.head_line` has the line the log shows of it instead."""
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
    line = entry(head, wr) if head else None
    found = Status.model_validate({
        "branch": wr.branch(),
        "head": line.to_json() if line is not None and head_record else None,
        "edits": changes,
        "problems": [*(h for h in hazards(wr) if h not in scan.problems), *scan.problems,
                     *hand_edit_problems(wr, head.tree if head else None, scan)],
        "outside_world": scan.outside,
        "failed_events": _failed(wr),
        "reformat": [r for r in reformat if r],
        "warnings": [*([Said(note)] if note else []), *_git_operation(wr), *_unadopted(wr, head)],
        "story_time": story_time(wr) if head is not None else None,
    })
    found._line = line.summary if line is not None and not head_record else None
    return found


def _unadopted(wr: WorldRepo, head: Commit | None) -> list[Said]:
    from narrative.engine.adopt import unadopted

    problem = unadopted(wr, head)
    return [Said.of_error(problem, f"{problem.message}: ")] if problem is not None else []


def _git_operation(wr: WorldRepo) -> list[Said]:
    try:
        wr.require_no_git_operation()
    except ConflictError as exc:
        return [Said.of_error(exc, f"{exc.message}: ")]
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
