"""``narr reset``: the story stands at an earlier event again (the HEAD move *is* the rewind).

The world becomes ``tree(T) + edits(first undone event)``: what the user saw when
the story stood at T, just before the next event ran. That makes reset
path-independent (``reset HEAD~1`` twice equals ``reset HEAD~2``) and keeps the
user's edits that an undone event had absorbed. Nothing is lost on the way: the
abandoned chain stays under ``refs/narr/abandoned/``, and uncommitted edits the
reset replaces are set aside under ``refs/narr/edits/`` (or carried over with
``keep_edits``).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import Field

from narrative import fields
from narrative.answers import Answer, Shape
from narrative.engine import nodes, setaside
from narrative.errors import (
    PAST_THE_START,
    InvalidInputError,
    InvalidWorldError,
    NotFoundError,
    NothingToDoError,
    Step,
)
from narrative.fields import SET_ASIDE_SPELLING, FieldConflict
from narrative.ids import check_id
from narrative.nodefile import NodeDict
from narrative.shapes import Obj
from narrative.store import (
    Commit,
    HandEdits,
    Move,
    WorldRepo,
    WorldView,
    find_event,
    first_parent,
    is_ancestor,
    keep_abandoned,
    move_head,
    peel_commit,
    plan_move,
    resolve_rev,
    scan_edits,
    set_aside_edits,
    subject_of,
    undone_chain,
    writing,
)

if TYPE_CHECKING:
    from narrative.model import Change



class Undone(Shape):
    """An event a reset undid (kept in the abandoned chain)."""

    commit: str
    id: str | None
    content: str


class ResetResult(Answer):
    """The story moved back ``from`` a commit ``to`` another (``event``: where it stands now):
    the events ``undone`` (kept as the chain ``abandoned``), the hand edits of the first undone
    event ``restored_edits``, those ``carried_edits`` over from the working tree, the
    ``collisions`` between the two, and the ref the other hand edits were ``set_aside`` under."""

    NAME: ClassVar[str] = "reset"

    branch: str | None
    from_: Annotated[str, Field(alias="from")]
    to: str
    event: Obj
    warnings: list[str]
    undone: list[Undone]
    restored_edits: list[Obj]
    carried_edits: list[Obj]
    collisions: list[Obj]
    set_aside: str | None
    abandoned: str | None
    kept_paths: list[str]


def _summary(commit: Commit) -> dict[str, Any]:
    rec = commit.checked_record()
    return {"commit": commit.id, "id": rec["id"] if rec else None,
            "content": rec["content"] if rec else commit.subject}


def commit_before(wr: WorldRepo, node_id: str) -> Commit:
    """The parent of the event that created ``node_id`` (seed 5.1: rewind to before it existed)."""
    check_id(node_id)
    head = wr.head_commit()
    assert head is not None
    created_by: str | None = None
    try:
        _, node = nodes.get_node(wr, node_id, at="HEAD")
        created_by = node.get("created_by_event")
    except NotFoundError:
        pass
    if created_by:
        found = find_event(wr, created_by)
        if found is not None and is_ancestor(wr, found.id, head.id):
            before = found.first_parent
            if before is None:
                raise InvalidInputError(f"{node_id} was created by the genesis; nothing comes before it")
            return before
    for commit in first_parent(head):
        rec = commit.checked_record()
        if rec is not None:
            if rec["kind"] == "genesis":
                break
            for ch in [*rec["edits"], *rec["diffusions"]]:
                if ch["target"] == node_id and ch["field"] == "" and "old_value" not in ch \
                        and "new_value" in ch:
                    parent = commit.first_parent
                    assert parent is not None  # an event always has one
                    return parent
    raise InvalidInputError(
        f"{node_id} was part of the world from its genesis (or is not on this story line): "
        "there is no event that created it"
    )


def reset(wr: WorldRepo, rev: str | None = None, *, before: str | None = None,
          keep_edits: bool = False, hard: bool = False, when: datetime | None = None,
          chapter: int | None = None) -> ResetResult:
    """Move the story back to ``rev`` (or to just ``before`` a node was made, or to just
    before ``chapter`` began); the undone events stay as an abandoned chain for
    :func:`replay`, hand edits are set aside (or kept with ``keep_edits``, or dropped with
    ``hard``)."""
    if sum(x is not None for x in (rev, before, chapter)) != 1:
        raise InvalidInputError("say where to: a revision or event id, --before NODE, or "
                                "--chapter N")
    if keep_edits and hard:
        raise InvalidInputError("--keep-edits and --hard contradict each other")
    with writing(wr) as recovered:
        ref = wr.require_branch()
        branch = ref.removeprefix("refs/heads/")
        head = wr.head_commit()
        assert head is not None
        try:
            if chapter is not None:
                from narrative.engine.chapters import before as before_chapter

                target = resolve_rev(wr, before_chapter(wr, chapter))
            else:
                target = (resolve_rev(wr, rev) if rev is not None
                          else commit_before(wr, before or ""))
        except NotFoundError as exc:
            if exc.reason == PAST_THE_START:
                exc.message += " (the genesis cannot be undone)"
            raise
        if target.checked_record() is None:
            raise InvalidInputError(f"{target.id[:10]} is not a narr event; reset to an event")
        scan = scan_edits(wr, head.tree)
        undone = undone_chain(wr, head, target)
        if target.id == head.id and not scan.raw:
            raise NothingToDoError("the story already stands there, and there are no hand edits")
        if keep_edits and target.id == head.id:
            raise NothingToDoError("the story already stands there; --keep-edits keeps everything")

        target_view = WorldView(wr, target.tree)
        first_undone = undone[-1] if undone and is_ancestor(wr, target.id, head.id) \
            else None
        restored: list[Change] = []
        nodes: dict[str, NodeDict | None] = {}
        if first_undone is not None and not hard:
            rec = first_undone.checked_record()
            restored = _changes(rec["edits"]) if rec else []
            if restored:
                nodes = _apply_restored(target_view, restored)

        carried: list[Change] = []
        collisions: list[FieldConflict] = []
        raw_overrides: dict[str, bytes | None] = {}
        if keep_edits:
            carried = setaside.user_changes(scan)
            result = setaside.carry(carried, target_view, into=nodes)
            nodes, collisions = result.nodes, result.collisions
            for path in setaside.invalid_paths(scan):
                oid = scan.raw[path]
                raw_overrides[path] = (wr.stored_bytes(path, wr.inside(path).read_bytes())
                                       if oid not in (None, "not-a-file") else None)
        overrides = setaside.overrides_for(target_view, nodes)
        overrides.update(raw_overrides)
        updates = plan_move(wr, head.tree, target.tree, scan, overrides)

        # Everything is decided; keep what the move would otherwise lose, then move.
        saved = None
        uncarried = [c for c in collisions if c.note == setaside.NODE_GONE]
        if uncarried:  # edits to nodes the target does not have: keep them all, set aside
            kept = set_aside_edits(wr, head, scan, f"reset to {_where(rev, before, chapter)}: "
                                  "edits to nodes that do not exist there", when)
            saved = kept.ref if kept else None
        elif not keep_edits and scan.raw and not _already_recorded(wr, head, scan):
            kept = set_aside_edits(wr, head, scan, f"reset to {_where(rev, before, chapter)}",
                                  when)
            saved = kept.ref if kept else None
        abandoned = None
        if not is_ancestor(wr, head.id, target.id):
            abandoned = keep_abandoned(wr, head.id, branch,
                                            f"narr reset: abandoned on {branch}", target.id)
        label = rev or (f"before chapter {chapter}" if chapter is not None else f"before {before}")
        summary = _summary(target)
        moved = move_head(wr, Move(
            ref=ref, old=head.id, new=target.id,
            message=f"narr reset: moving to {label} ({subject_of(summary['content'])})",
            updates=tuple(updates), tree=target.tree, made_refs=(saved, abandoned),
        ))
        _remember(wr, target, first_undone)
        return ResetResult.model_validate({
            "branch": branch, "from": head.id, "to": target.id, "event": summary,
            "warnings": recovered, "undone": [_summary(c) for c in undone],
            "restored_edits": [c.model_dump(mode="json") for c in restored],
            "carried_edits": [c.model_dump(mode="json") for c in carried],
            "collisions": [c.to_json(SET_ASIDE_SPELLING) for c in collisions],
            "set_aside": saved, "abandoned": abandoned, "kept_paths": moved.kept})


def _where(rev: str | None, before: str | None, chapter: int | None) -> str:
    if rev is not None:
        return rev
    return f"before chapter {chapter}" if chapter is not None else f"before {before}"


def _changes(rows: list[dict[str, Any]]) -> list[Change]:
    """A checked record's changes as the model (loaded only when there are some)."""
    if not rows:
        return []
    from narrative.model import Change

    return [Change.model_validate(row) for row in rows]


def _apply_restored(view: WorldView, changes: list[Change]) -> dict[str, NodeDict | None]:
    nodes: dict[str, NodeDict | None] = {}
    for ch in changes:
        if ch.target not in nodes:
            nodes[ch.target] = view.get(ch.target)
    problems = fields.apply_changes(nodes, changes)
    if problems:
        raise InvalidWorldError(
            "the history does not explain the world at the target event: " + problems[0],
            details=problems, hint="run {0}", steps=[Step("check")],
        )
    return nodes


def _remember(wr: WorldRepo, target: Commit, first_undone: Commit | None) -> None:
    """Note which event's edits this reset restored, so a second reset need not set them aside."""
    wr.private.remember_reset(target.id, first_undone.id if first_undone else None)


def _already_recorded(wr: WorldRepo, head: Commit, scan: HandEdits) -> bool:
    """True when the uncommitted edits are exactly the ones the last reset restored.

    They are already kept in that undone event's record; setting them aside again
    would only add noise to ``narr edits``.
    """
    last = wr.private.last_reset()
    if last is None or last[0] != head.id:
        return False
    if set(scan.raw) - {p for e in scan.edits.values() for p in (e.old_path, e.new_path) if p}:
        return False  # some changed file is not a valid node: keep its bytes
    undone = peel_commit(wr, last[1])
    if undone is None:
        return False
    rec = undone.checked_record()
    if rec is None:
        return False
    mine = sorted(fields.canonical(c.model_dump(mode="json")) for c in setaside.user_changes(scan))
    theirs = sorted(fields.canonical(c) for c in rec["edits"])
    return mine == theirs
