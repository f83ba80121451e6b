"""Abandoned chains and ``narr replay``: re-running old events on top of HEAD.

A chain is an abandoned ref's tip and the events behind it that are not on the
current story line. Replay runs them again, oldest first, each as a new event
(``replay_of`` names the original): through the diffuser, or with ``reuse`` by
re-applying the recorded changes. A recorded change whose old value no longer
matches the world is a conflict: replay stops there, names each node and field
with the three values, and keeps the events replayed before it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from pydantic import PrivateAttr

from narrative import fields
from narrative.answers import MAYBE, Answer, Shape
from narrative.delta.request import EventRequest
from narrative.engine.chains import label_of, number_text, numbered, tips_of
from narrative.engine.event import EventResult, run_event
from narrative.engine.setaside import user_changes
from narrative.errors import ConflictError, InvalidInputError, NotFoundError, NothingToDoError, Step
from narrative.fields import REPLAY_SPELLING, FieldConflict
from narrative.model import (
    Change,
    CreateOp,
    Delta,
    EventRecord,
    ExpireOp,
    Node,
    Op,
    SetOp,
    UnsetOp,
)
from narrative.nodefile import NodeDict
from narrative.shapes import Obj
from narrative.store import (
    ABANDONED,
    Commit,
    HandEdits,
    Move,
    WorldRepo,
    WorldView,
    batched,
    chain_commits,
    chain_name,
    drop_abandoned,
    held_only_by,
    mark_replayed,
    move_head,
    plan_move,
    replayed_marks,
    scan_edits,
    scan_for_event,
    subject_of,
    told_on_line,
    writing,
)

Progress = Callable[[int, int, str], None]
TOLD = ("event", "chapter")  # what a replay tells again: events, and the chapters they were told in



def pick_chain(wr: WorldRepo, which: str) -> tuple[str, Commit]:
    """The chain ``which`` names: its number, its readable name (or the start of it), its
    ref or key (``<uuid7>-<branch>``, the names before chains had words), or the start
    of its key, tip commit or tip event id (four characters at least)."""
    which = which.strip()
    tips = tips_of(wr)
    numbers = numbered(tips)
    for name, n in numbers.items():
        if which == number_text(name, n):
            return name, tips[name]
    labels = {name: label_of(name, tip) for name, tip in tips.items()}
    for name in tips:
        if which in (name, name.removeprefix(ABANDONED), chain_name(name).key,
                     labels[name]):
            return name, tips[name]
    found: dict[str, Commit] = {}
    for name, tip in tips.items():
        if labels[name].startswith(which):
            found[name] = tip
        elif len(which) >= 4:
            rec = tip.record()
            if (name.removeprefix(ABANDONED).startswith(which) or tip.id.startswith(which)
                    or (rec and rec.id.startswith(which))):
                found[name] = tip
    if len(found) == 1:
        return next(iter(found.items()))
    if found:
        raise InvalidInputError(f"{which!r} matches {len(found)} abandoned chains; give more of it "
                                "or its number (narr chains lists them)")
    listed = ", ".join(number_text(name, n) for name, n in sorted(
        numbers.items(), key=lambda item: (chain_name(item[0]).remote or "", item[1]))
    ) if numbers else "there are none"
    raise NotFoundError(f"no abandoned chain {which!r} ({listed}; narr chains lists them)")


def _pick_event(commits: list[Commit], which: str, chain: str) -> int:
    """Where in the chain ``which`` (an event id, its start or its last digits, or the start
    of a commit id) is."""
    which = which.strip().lower()
    hits = []
    for i, commit in enumerate(commits):
        rec = commit.record()
        ids = [commit.id] + ([rec.id] if rec is not None else [])
        if any(x == which for x in ids) or (len(which) >= 4 and any(
                x.startswith(which) or x.replace("-", "").endswith(which.replace("-", ""))
                for x in ids)):
            hits.append(i)
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise InvalidInputError(f"--to {which!r} matches {len(hits)} events of chain {chain}; "
                                "give more of it")
    raise NotFoundError(f"--to {which!r}: no such event in chain {chain} "
                        "(narr log CHAIN-TIP lists its events)")


def drop_chain(wr: WorldRepo, which: str, *, force: bool = False) -> dict[str, Any]:
    """Delete an abandoned chain's ref. Refused, unless ``force``, while some of its events are
    in no story line and no other abandoned chain: set-aside edits that happen to hold them do
    not count, as they may be dropped next (:func:`narrative.store.refs.kept_for_good`)."""
    with writing(wr):
        name, tip = pick_chain(wr, which)
        label = label_of(name, tip)
        remote = chain_name(name).remote
        if remote is not None:
            raise InvalidInputError(
                f"chain {label} is {remote}'s: dropping this copy would bring it back with the "
                f"next narr pull", hint="only its writer drops it, on their own machine")
        lost = []
        for commit in held_only_by(wr, tip.id, but=name):
            rec = commit.record()
            if rec is not None and rec.kind in TOLD:
                lost.append({"commit": commit.id, "id": rec.id, "content": rec.content})
        if lost and not force:
            raise ConflictError(
                f"chain {label} holds {len(lost)} event(s) no other ref keeps; dropping it "
                "loses them",
                details=[f"{e['commit'][:10]} {e['content'].splitlines()[0] if e['content'] else ''}"
                         for e in lost[:10]],
                hint="{0} brings them back first; {1} drops them for good",
                steps=[Step("replay", {"chain": label}),
                       Step("drop_chain", {"which": label, "force": True})])
        drop_abandoned(wr, name)
        return {"dropped": label, "ref": name, "tip": tip.id, "lost": lost}


class ReplayConflict(Shape):
    """Where a replay stopped: the event's conflict and the fields it names."""

    message: str
    conflicts: list[Obj]


class ReplayResult(Answer):
    """A chain run again on top of the story: the ``events`` told (``total`` in the chain), the
    new ``head``, whether it was a ``fast_forward`` (the chain's own commits back on the line),
    the commits ``skipped`` (plain git, not events), the events whose changes came out
    ``different`` from the original's, and the ``conflict`` it stopped at, if any."""

    NAME: ClassVar[str] = "replay"
    VERSION: ClassVar[int] = 3  # 2: what chapters add (a chapter's record, where an event was
    # told); 3: its events' held-back changes are typed objects, their commands worded by the door

    chain: str
    total: int
    fast_forward: bool
    head: str | None
    skipped: list[Obj]
    warnings: list[str]
    events: list[EventResult]
    different: list[Obj]
    conflict: Annotated[ReplayConflict | None, MAYBE] = None
    _error: ConflictError | None = PrivateAttr(default=None)

    @property
    def error(self) -> ConflictError | None:
        """The conflict the replay stopped at, as the error a command reports."""
        return self._error


@dataclass
class _Replay:
    """What a replay does as it goes, told as a :class:`ReplayResult` at the end."""

    chain: str
    total: int
    events: list[EventResult] = field(default_factory=list)
    ref: str = ""
    fast_forward: bool = False
    head: str | None = None
    conflict: ConflictError | None = None
    # commits in the chain that are not events (made with plain git): not replayed
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # replayed events whose diffusions are not the original's (what they set, not the old values)
    different: list[dict[str, Any]] = field(default_factory=list)

    def told(self) -> ReplayResult:
        data: dict[str, Any] = {
            "chain": self.chain, "total": self.total, "fast_forward": self.fast_forward,
            "head": self.head, "skipped": self.skipped, "warnings": self.warnings,
            "events": [e.to_json() for e in self.events], "different": self.different,
        }
        if self.conflict is not None:
            data["conflict"] = {"message": self.conflict.message,
                                "conflicts": self.conflict.conflicts}
        made = ReplayResult.model_validate(data)
        made._error = self.conflict
        return made


def replay(wr: WorldRepo, which: str, *, reuse: bool = False, diffuser_name: str | None = None,
           progress: Progress | None = None, to: str | None = None,
           again: bool = False) -> ReplayResult:
    """Run chain ``which`` again on top of HEAD, up to and including event ``to`` if given.

    The chain's events the story line already holds a replayed copy of are left out (and
    said so) unless ``again``: telling them once more would put them in the story twice."""
    from narrative.engine.progress import teller

    with writing(wr) as recovered:
        result = _replay(wr, which, reuse, diffuser_name, progress or teller(), to, recovered,
                         again)
        if result.events and result.head is not None:  # a replay stopped half-way told some too
            mark_replayed(wr, result.ref, result.head)
        return result.told()


def _replay(wr: WorldRepo, which: str, reuse: bool, diffuser_name: str | None,
            progress: Progress | None, to: str | None, recovered: list[str],
            again: bool) -> _Replay:
    ref = wr.require_branch()
    name, tip = pick_chain(wr, which)
    head = wr.head_commit()
    assert head is not None
    every = chain_commits(wr, tip, head.id)
    label = label_of(name, tip)
    if to is not None:
        every = every[:_pick_event(every, to, label) + 1]
        tip = every[-1]
    commits = [c for c in every if (r := c.record()) is not None and r.kind in TOLD]
    result = _Replay(label, len(commits), warnings=recovered, ref=name)
    events = {c.id for c in commits}
    result.skipped = [{"commit": c.id, "subject": c.subject}
                      for c in every if c.id not in events]
    if not again and commits:
        commits = _not_told_yet(wr, name, label, which, commits, head, result)
    if not commits:
        result.head = head.id
        return result
    if reuse and commits[0].parent_ids[:1] == (head.id,):
        scan = scan_edits(wr, head.tree)
        if _restorable(scan, commits[0]):
            _fast_forward(wr, ref, head, tip, scan)
            result.fast_forward = True
            result.head = tip.id
            result.events = []
            for c in commits:
                rec = c.record()
                assert rec is not None
                result.events.append(EventResult.of(rec, c.id))
            if progress:
                progress(len(commits), len(commits), "")
            return result
    with batched(wr):  # one scan and one index write for the whole chain
        return _replay_events(wr, commits, result, reuse, diffuser_name, progress)


def _not_told_yet(wr: WorldRepo, name: str, label: str, which: str, commits: list[Commit],
                  head: Commit, result: _Replay) -> list[Commit]:
    """The chain's events the story line holds no replayed copy of. A reset after a replay
    (or a replay stopped at a conflict, or one ``--to`` an event) leaves part of the chain
    told: telling it again would put those events in the story twice."""
    event_of = {c.id: rec.id for c in commits if (rec := c.record()) is not None}
    told = told_on_line(wr, replayed_marks(wr, name), head.id, set(event_of.values()))
    if not told:
        return commits
    rest = [c for c in commits if event_of.get(c.id) not in told]
    if not rest:
        raise NothingToDoError(
            f"every event of chain {label} is in the story already (replayed as "
            f"{', '.join(sorted(cid[:10] for cid in told.values()))})",
            hint="to tell them a second time anyway: {0}",
            steps=[Step("replay", {"chain": which, "again": True})])
    for c in commits:
        if (event := event_of.get(c.id)) in told:
            result.warnings.append(f"{c.subject!r} is in the story already (replayed as "
                                   f"{told[event][:10]}): not told twice (--again would)")
    return rest


def _replay_events(wr: WorldRepo, commits: list[Commit], result: _Replay,
                   reuse: bool, diffuser_name: str | None, progress: Progress | None
                   ) -> _Replay:
    diffuser = None
    if not reuse:
        from narrative.diffusers.base import default_name, get_diffuser

        diffuser = get_diffuser(diffuser_name or default_name(wr), wr)
    chapters: dict[str, str] = {}  # a chapter's record id -> its replayed record's
    for i, commit in enumerate(commits, 1):
        rec = commit.record()
        assert rec is not None
        if progress:
            progress(i - 1, len(commits), rec.content)
        current_head = wr.head_commit()
        assert current_head is not None
        conflicts, edits, diffusions = _conflicts(wr, current_head, rec, diffusions=reuse)
        if conflicts:
            result.conflict = ConflictError(
                f"replay stopped at event {i} of {len(commits)} ({rec.content!r}): "
                f"{len(conflicts)} field(s) changed since it was recorded",
                conflicts=[c.to_json(REPLAY_SPELLING) for c in conflicts],
                details=[c.line(REPLAY_SPELLING) for c in conflicts],
                hint="the events before it are replayed; resolve by hand and carry on with "
                     "new events, or reset and replay again",
            )
            break
        request = _request(rec, reuse, edits, diffusions)
        if rec.in_chapter is not None and rec.in_chapter.chapter in chapters:
            request.in_chapter = rec.in_chapter.model_copy(
                update={"chapter": chapters[rec.in_chapter.chapter]})
        done = run_event(wr, request, diffuser=None if rec.kind == "chapter" else diffuser,
                         keep_failed=False)
        if rec.kind == "chapter":
            chapters[rec.id] = done.record.id
        result.events.append(done)
        if _effects(done.record.diffusions) != _effects(rec.diffusions):
            result.different.append({"original": rec.id, "id": done.record.id,
                                     "commit": done.commit, "content": rec.content,
                                     "original_changes": len(rec.diffusions),
                                     "changes": len(done.record.diffusions)})
    if progress:
        progress(len(result.events), len(commits), "")
    result.head = wr.head_id()
    return result


def _effects(changes: list[Change]) -> set[str]:
    """What changes did, old values aside: a replay onto a moved world starts elsewhere."""
    out = set()
    for ch in changes:
        data = ch.model_dump(mode="json")
        data.pop("old_value", None)
        out.add(fields.canonical(data))
    return out


def _request(rec: EventRecord, reuse: bool, edits: list[Change],
             diffusions: list[Change]) -> EventRequest:
    ops: list[Op] = ops_from_changes(diffusions) if reuse else list(rec.explicit)
    return EventRequest(
        content=rec.content,
        delta=Delta(ops=ops),
        narrative_text=rec.narrative_text,
        timestamp=rec.timestamp,
        close_scene=rec.close_scene,
        causes=list(rec.causes),
        edits=edits,
        replay_of=rec.id,
        chapter=rec.chapter,
        in_chapter=rec.in_chapter,
    )


def ops_from_changes(changes: list[Change]) -> list[Op]:
    """Delta operations that redo recorded field-level changes."""
    ops: list[Op] = []
    for ch in changes:
        if ch.field == "":
            if ch.has_new and not ch.has_old:
                ops.append(CreateOp(node=Node.model_validate(ch.new_value)))
            elif ch.has_old and not ch.has_new:
                ops.append(ExpireOp(target=ch.target))
        elif ch.has_new:
            ops.append(SetOp(target=ch.target, field=ch.field, value=ch.new_value))
        else:
            ops.append(UnsetOp(target=ch.target, field=ch.field))
    return ops


def _conflicts(wr: WorldRepo, head: Commit, rec: EventRecord, *, diffusions: bool
               ) -> tuple[list[FieldConflict], list[Change], list[Change]]:
    """Fields where the world no longer holds what the event recorded as the old value,
    and the recorded edits and diffusions still to apply (those not already in the world).

    The recorded hand edits are checked first; then, for ``reuse``, the diffusions
    against the world with those edits in place.
    """
    scan = scan_for_event(wr, head.tree)
    scan.raise_problems()
    view = WorldView(wr, head.tree, scan)
    nodes: dict[str, NodeDict | None] = {}
    out: list[FieldConflict] = []
    todo: dict[str, list[Change]] = {"edit": [], "diffusion": []}
    groups: list[tuple[str, list[Change]]] = [("edit", list(rec.edits))]
    if diffusions:
        groups.append(("diffusion", list(rec.diffusions)))
    for kind, changes in groups:
        for ch in changes:
            if ch.target not in nodes:
                nodes[ch.target] = view.get(ch.target)
            now = fields.value_in(nodes[ch.target], ch.field)
            if fields.same(now, ch.new):
                continue
            if not fields.same(now, ch.old):
                out.append(FieldConflict(ch.target, ch.field, base=ch.old, ours=now, theirs=ch.new,
                                         event=rec.id, content=rec.content, kind=kind))
                continue
            fields.apply_changes(nodes, [ch], verify_old=False)
            todo[kind].append(ch)
    return out, todo["edit"], todo["diffusion"]


def _restorable(scan: HandEdits, first: Commit) -> bool:
    """The working tree holds nothing but (part of) the first event's own hand edits."""
    if scan.problems:
        return False
    rec = first.record()
    if rec is None:
        return False
    recorded = {fields.canonical(c.model_dump(mode="json")) for c in rec.edits}
    return all(fields.canonical(c.model_dump(mode="json")) in recorded for c in user_changes(scan))


def _fast_forward(wr: WorldRepo, ref: str, head: Commit, tip: Commit,
                  scan: HandEdits) -> None:
    """Nothing changed since the chain was abandoned: its events come back as they were."""
    updates = plan_move(wr, head.tree, tip.tree, scan)
    rec = tip.record()
    move_head(wr, Move(
        ref=ref, old=head.id, new=tip.id,
        message=f"narr replay: fast-forward to {subject_of(rec.content if rec else '')}",
        updates=tuple(updates), tree=tip.tree,
    ))
