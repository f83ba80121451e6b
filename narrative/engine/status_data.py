"""``narr status`` as plain data: where the story stands, before any model is made of it.

Apart from :mod:`narrative.engine.status`, which makes the answer's model of it, because
the text ``narr status`` prints needs none: a command with no server running (the
first after one exited idle) then never loads pydantic, nearly half its cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.engine.clock import story_time
from narrative.errors import ConflictError, NarrError
from narrative.nodefile import edges_of
from narrative.store import (
    HandEdits,
    WorldRepo,
    commit_summaries,
    finish_interrupted,
    hazards,
    scan_for_reader,
)

if TYPE_CHECKING:
    from narrative.store import Commit, Tree


@dataclass(frozen=True)
class StatusData:
    """The answer's JSON (``json``, as :class:`~narrative.engine.status.Status` holds it) and
    HEAD as one line of the log shows it (``line``: ``commit``, ``content``...), or None
    where there is no HEAD."""

    json: dict[str, Any]
    line: dict[str, Any] | None
    advice: tuple[tuple[str, NarrError], ...] = ()
    """The warnings that say what to do, after the plain notes of ``json["warnings"]``: each
    its lead and the error whose hint names steps, which the door that shows it words."""

    @property
    def cli_warnings(self) -> list[str]:
        """Every warning in the command line's words (the caller has the table loaded when
        :meth:`needs_wording` says so: the table words steps)."""
        return [*self.json["warnings"], *(lead + (exc.hint or "") for lead, exc in self.advice)]

    @property
    def needs_wording(self) -> bool:
        return any(exc.steps for _, exc in self.advice)


def status_data(wr: WorldRepo, *, head_record: bool = True) -> StatusData:
    """Where the story stands: branch, last event, hand edits not yet recorded.

    ``head_record`` False leaves HEAD's record unread (it may be a bulk event of tens of
    megabytes): the answer's ``head`` is None, and :attr:`StatusData.line` says what the
    log says of it."""
    note = finish_interrupted(wr)
    head = wr.head_commit()
    scan = scan_for_reader(wr, head.tree if head else None, recall=True)
    changes, reformat, edit_problems = _from_scan(wr, head, scan)
    record = None
    if head is not None and head_record:
        from narrative.engine.log import entry  # the record's shapes: the answer's models

        record = entry(head, wr).to_json()
    advice = (*_git_operation(wr), *_unadopted(wr, head))
    data = {
        "branch": wr.branch(),
        "head": record,
        "edits": changes,
        "problems": [*(h for h in hazards(wr) if h not in scan.problems), *scan.problems,
                     *edit_problems],
        "outside_world": list(scan.outside),
        "failed_events": _failed(wr),
        "reformat": reformat,
        "warnings": [note] if note else [],
        "story_time": story_time(wr) if head is not None else None,
    }
    line = commit_summaries(wr, head.id, 1)[0] if head is not None else None
    return StatusData(data, line, advice)


def _from_scan(wr: WorldRepo, head: Commit | None,
               scan: HandEdits) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """The hand edits' field changes, the files narr will reformat, and the relations they
    point nowhere: worked out once per scan (a scan recalled unchanged keeps them)."""
    kept = scan.derived.get("status")  # (a scan is recalled only under the HEAD it was made at)
    if kept is None:
        changes = []
        reformat = []
        for node_id in sorted(scan.edits):
            e = scan.edits[node_id]
            path = e.new_path or e.old_path
            for item in fields.node_change_json(node_id, e.old, e.new):
                item["path"] = path
                changes.append(item)
            if e.new is not None and e.new_path and e.rewrites_file:
                reformat.append(e.new_path)
        kept = scan.derived["status"] = (changes, reformat,
                                         hand_edit_problems(wr, head.tree if head else None, scan))
    changes, reformat, problems = kept
    return [dict(item) for item in changes], list(reformat), list(problems)


def _unadopted(wr: WorldRepo, head: Commit | None) -> list[tuple[str, NarrError]]:
    from narrative.engine.adopt import unadopted

    problem = unadopted(wr, head)
    return [(f"{problem.message}: ", problem)] if problem is not None else []


def _git_operation(wr: WorldRepo) -> list[tuple[str, NarrError]]:
    try:
        wr.require_no_git_operation()
    except ConflictError as exc:
        return [(f"{exc.message}: ", exc)]
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

