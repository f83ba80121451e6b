"""``narr revert``: a new event that undoes an old one, history kept (seed 4.1's git revert).

Only the event's diffusions are inverted; the hand edits it recorded were the
user's own and stay. A merge event reverts the same way: its diffusions are the
changes relative to its first parent, so the revert takes out what the merged
line brought and keeps the story line's own events (``git revert -m 1``). The
merged line's events stay part of the history, so merging it again finds nothing
to do; to bring them back, revert the revert. If any field the event wrote has changed since, the revert
is refused with a field-level report: undoing it would silently overwrite a
later part of the story.
"""

from __future__ import annotations

from narrative import fields
from narrative.delta.request import EventRequest
from narrative.engine.event import RevertResult, run_event
from narrative.engine.replay import ops_from_changes
from narrative.errors import ConflictError, InvalidInputError, NothingToDoError, Step
from narrative.fields import REVERT_SPELLING, FieldConflict
from narrative.ids import short_event_id
from narrative.model import Change, Delta
from narrative.store import WorldRepo, WorldView, is_ancestor, resolve_rev, scan_edits, writing


def revert(wr: WorldRepo, rev: str, *, content: str | None = None) -> RevertResult:
    """Record a new event that undoes the changes of event ``rev``."""
    with writing(wr) as recovered:
        head = wr.head_commit()
        assert head is not None
        commit = resolve_rev(wr, rev)
        rec = commit.record()
        if rec is None or rec.kind not in ("event", "merge"):
            raise InvalidInputError(f"{rev} is not an event that can be reverted")
        if not is_ancestor(wr, commit.id, head.id):
            raise InvalidInputError(f"{rev} is not on the current story line",
                                    hint="{0} to its branch first", steps=[Step("switch")])
        scan = scan_edits(wr, head.tree)
        scan.raise_problems()
        view = WorldView(wr, head.tree, scan)
        todo: list[Change] = []
        conflicts: list[FieldConflict] = []
        for ch in fields.invert(rec.diffusions):
            now = fields.value_in(view.get(ch.target), ch.field)
            if fields.same(now, ch.new):  # what was there before the event: undone already
                continue
            if not fields.same(now, ch.old):  # not what the event wrote: changed since
                conflicts.append(FieldConflict(ch.target, ch.field, base=ch.old, ours=now,
                                               theirs=ch.new))
                continue
            todo.append(ch)
        if conflicts:
            raise ConflictError(
                f"cannot revert {_named(rec.id, rec.content)}: {len(conflicts)} field(s) it wrote "
                "have changed since",
                conflicts=[c.to_json(REVERT_SPELLING) for c in conflicts],
                details=[c.line(REVERT_SPELLING) for c in conflicts],
                hint="change those fields back by hand, or record a new event instead",
            )
        if not todo:
            raise NothingToDoError(f"{_named(rec.id, rec.content)} is already undone: every field "
                                   "it wrote has its old value")
        request = EventRequest(content=content or f"Revert: {rec.content}",
                               delta=Delta(ops=ops_from_changes(todo)), reverts=rec.id)
        result = RevertResult.retold(run_event(wr, request, keep_failed=False))
        result.warnings[:0] = recovered
        return result


def _named(event_id: str, content: str) -> str:
    """An event as a person knows it: its short id and its title, whatever revision named it
    (a caller such as the studio names events by their 40-digit commit)."""
    lines = content.strip().splitlines() or [""]
    title = lines[0].strip()
    if len(title) > 60 or len(lines) > 1:
        title = title[:59].rstrip() + "…"
    return f"event {short_event_id(event_id)} “{title}”"
