"""``narr why NODE FIELD``: which change put a value where it is, and what that change followed from.

The answer comes from the records alone: the newest change on the story line to
the field (or to a field containing it, such as the node's creation), whether an
event's diffusion or a hand edit an event recorded, then that event's causal
ancestry in the event graph. A value the user typed and no event recorded yet is
named as such: nothing in the history explains it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from narrative import fields
from narrative.answers import MAYBE, Answer
from narrative.engine.chapters import places
from narrative.engine.eventgraph import EventInfo, Story, Write, tip_of
from narrative.engine.nodes import get_node
from narrative.errors import NotFoundError
from narrative.model import JSON
from narrative.shapes import Change, EventRef, Obj, ToldAt
from narrative.store import WorldRepo


class WhyChange(Change):
    """The change that wrote the value, and whether a diffusion or a hand edit made it (``by``)."""

    by: str


class WhyResult(Answer):
    """Why a node's field holds its value: ``value`` (absent when the field is), the event that
    set it (``event``, with ``change`` and the values it wrote: ``old_value``, ``new_value``),
    the events it followed from (``ancestry``); ``source`` is ``event``, ``hand edit``,
    ``genesis``, ``unrecorded hand edit`` or ``unexplained``. ``uncommitted`` when a hand edit
    not yet recorded holds it; ``merged_from`` when a merge brought it; ``ended`` when the node
    has ended (the answer is then about it just before); ``chapter`` when the event was told in
    a chapter."""

    NAME: ClassVar[str] = "why"
    VERSION: ClassVar[int] = 2  # 2: what chapters add (a chapter's record, where an event was told)

    node: str
    field: str
    source: str
    value: Annotated[JSON | None, MAYBE] = None
    event: EventRef | None
    change: Annotated[WhyChange | None, MAYBE] = None
    old_value: Annotated[JSON | None, MAYBE] = None
    new_value: Annotated[JSON | None, MAYBE] = None
    uncommitted: Obj | None
    ancestry: list[Obj]
    merged_from: EventRef | None
    ended: Obj | None
    chapter: ToldAt | None


@dataclass
class _Found:
    """What :func:`why` finds, before it is told as a :class:`WhyResult`."""

    node: str
    field: str
    value: Any  # fields.ABSENT when the field is not there
    source: str
    event: EventInfo | None = None
    change: Write | None = None
    uncommitted: dict[str, Any] | None = None
    ancestry: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # a merge brought the value: the event on the merged line that wrote it
    merged_from: EventInfo | None = None
    # the event was told in a chapter: which, and at which sentence
    chapter: dict[str, Any] | None = None

    def told(self, ended: dict[str, Any] | None = None) -> WhyResult:
        out: dict[str, Any] = {"node": self.node, "field": self.field, "source": self.source}
        if self.value is not fields.ABSENT:
            out["value"] = self.value
        out["event"] = self.event.to_json() if self.event else None
        if self.change is not None:
            out["change"] = {**self.change.change(), "by": self.change.source}
            for key, part in (("old_value", self.change.old), ("new_value", self.change.new)):
                sub = _inside(part, self.change.field, self.field)
                if sub is not fields.ABSENT:
                    out[key] = sub
        out["uncommitted"] = self.uncommitted
        out["ancestry"] = self.ancestry
        out["merged_from"] = self.merged_from.to_json() if self.merged_from else None
        out["ended"] = ended
        out["chapter"] = self.chapter
        return WhyResult.model_validate(out)


def _inside(value: Any, written: str, asked: str) -> Any:
    """The asked field's part of a value written at ``written`` (which contains it)."""
    if value is fields.ABSENT or not asked.startswith(written):
        return value if written == asked else fields.ABSENT
    return fields.get(value, asked[len(written):]) if asked != written else value


def _relevant(w: Write, ptr: str) -> bool:
    """Whether change ``w`` wrote ``ptr``: the field itself, one containing it, or one inside it."""
    return w.field == ptr or ptr.startswith(w.field + "/") or w.field == "" or (
        w.field.startswith(ptr + "/"))


def why(wr: WorldRepo, node_id: str, field_text: str, at: str | None = None) -> WhyResult:
    """Why ``node_id``'s field holds its value now (or ``at`` a revision). A node that has
    ended is asked about as it stood just before the event that ended it."""
    ptr = fields.parse_field(field_text)
    if at is None:
        try:
            get_node(wr, node_id)
        except NotFoundError:
            from narrative.engine.eventgraph import ended

            found = ended(wr, node_id)
            if found is None:
                raise
            event, reason = found
            gone: Obj = {"event": {"id": event.id, "commit": event.commit, "content": event.content},
                    "reason": reason}
            before = why(wr, node_id, field_text, f"{event.commit}~1")
            before.ended = gone
            return before
    tip = tip_of(wr, at)
    if tip is None:
        raise NotFoundError("the story has no events yet")
    _, node = get_node(wr, node_id, at)
    value = fields.value_in(node, ptr)
    uncommitted = None
    if at is None:
        committed: Any = fields.ABSENT
        try:
            _, committed_node = get_node(wr, node_id, "HEAD")
            committed = fields.value_in(committed_node, ptr)
        except NotFoundError:
            pass
        if not fields.same(value, committed):
            uncommitted = {"committed_value": committed} if committed is not fields.ABSENT else {}
    story = Story(wr, tip.id)
    writer = next((w for w in reversed(story.writes(node_id)) if _relevant(w, ptr)), None)
    if value is fields.ABSENT and uncommitted is None and (writer is None or writer.field == ""):
        raise NotFoundError(f"{node_id} has no field {ptr}" + (f" at {at}" if at else ""),
                            hint=fields.hint_for_missing(node, ptr))
    result = _Found(node_id, ptr, value, "unexplained", uncommitted=uncommitted)
    first = story.first() if writer is None else None
    if writer is not None:
        result.event = story.event(writer.commit)
        result.change = writer
        result.source = "event" if writer.source == "diffusion" else "hand edit"
        result.ancestry = story.ancestry(writer.commit)
        if result.event.kind == "merge" and writer.source == "diffusion":
            result.merged_from = _merged_from(wr, writer.commit, node_id, ptr)
        told = (result.merged_from or result.event).commit
        result.chapter = places(wr, [told]).get(told)
    elif first is not None and first.kind == "genesis":
        result.event = first
        result.source = "genesis"
    if uncommitted is not None:
        result.source = "unrecorded hand edit"
    return result.told()


def _merged_from(wr: WorldRepo, merge_commit: str, node_id: str, ptr: str) -> EventInfo | None:
    """The event on a merge's second line that last wrote ``ptr`` before the merge."""
    from narrative.store import peel_commit

    commit = peel_commit(wr, merge_commit)
    if commit is None or not commit.is_merge:
        return None
    second = tip_of(wr, commit.parent_ids[1])  # indexes that line's chain
    assert second is not None
    line = Story(wr, second.id)
    found = next((w for w in reversed(line.writes(node_id)) if _relevant(w, ptr)), None)
    return line.event(found.commit) if found is not None else None
