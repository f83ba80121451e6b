"""``narr status``: where the story stands and what the user changed since its last event.

The answer's model, made of :mod:`narrative.engine.status_data` (which the text of ``narr
status`` is printed from, without one).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import PrivateAttr

from narrative.answers import Answer, Said, Shape
from narrative.engine.failed_answers import FailedSummary
from narrative.engine.status_data import status_data
from narrative.shapes import Change, PlainCommit, Record
from narrative.store import WorldRepo


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
    data = status_data(wr, head_record=head_record)
    found = Status.model_validate({**data.json, "warnings": [
        *(Said(n) for n in data.json["warnings"]),
        *(Said.of_error(exc, lead) for lead, exc in data.advice)]})
    found._line = data.line if not head_record else None
    return found
