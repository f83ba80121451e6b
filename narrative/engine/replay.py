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
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.delta.request import EventRequest
from narrative.engine.event import EventResult, run_event
from narrative.engine.setaside import user_changes
from narrative.errors import ConflictError, InvalidInputError, NotFoundError
from narrative.ids import EVENT_ID_RE
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
from narrative.store import history, move, records, refs, worktree
from narrative.store.batch import batch
from narrative.store.view import WorldView
from narrative.store.worldrepo import WorldRepo

if TYPE_CHECKING:
    import pygit2

Progress = Callable[[int, int, str], None]


def chain_commits(repo: pygit2.Repository, tip: pygit2.Commit, head: pygit2.Oid | None
                  ) -> list[pygit2.Commit]:
    """The chain's commits not on the current story line, oldest first (first-parent)."""
    out: list[pygit2.Commit] = []
    for commit in history.first_parent(tip):
        if head is not None and (commit.id == head or repo.descendant_of(head, commit.id)):
            break
        out.append(commit)
    out.reverse()
    return out


def list_chains(wr: WorldRepo) -> list[dict[str, Any]]:
    head = wr.head_commit()
    head_id = head.id if head is not None else None
    out = []
    for n, (name, tip) in enumerate(_tips(wr).items(), 1):
        commits = chain_commits(wr.repo, tip, head_id)
        first = _brief(commits[0]) if commits else None
        last = _brief(commits[-1]) if commits else None
        short_name = name.removeprefix(refs.ABANDONED)
        out.append({
            "n": n, "name": short_name, "ref": name, "tip": str(tip.id),
            "tip_event": (records.decode(tip.message) or _NoRecord).id,
            "length": len(commits), "first": first, "last": last,
            "abandoned_at": _when(short_name), "base": str(commits[0].parents[0].id)
            if commits and commits[0].parents else None,
        })
    return out


class _NoRecord:
    id = None


def _brief(commit: pygit2.Commit) -> dict[str, Any]:
    rec = records.decode(commit.message)
    return {"commit": str(commit.id), "id": rec.id if rec else None,
            "content": rec.content if rec else commit.message.strip().splitlines()[0],
            "created_at": rec.created_at if rec else None}


def _when(name: str) -> str | None:
    """The time an abandoned ref was made, read back from its time-ordered id."""
    from datetime import UTC, datetime

    stem = name[:36]
    if not EVENT_ID_RE.match(stem):
        return None
    ms = int(stem.replace("-", "")[:12], 16)
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _tips(wr: WorldRepo) -> dict[str, pygit2.Commit]:
    """Abandoned refs, newest first, with their tips; a ref whose commit is gone (a damaged
    clone) is left out: there is nothing to list or replay."""
    return {name: tip for name in refs.abandoned_refs(wr)
            if (tip := history.peel_commit(wr, name)) is not None}


def pick_chain(wr: WorldRepo, which: str) -> tuple[str, pygit2.Commit]:
    tips = _tips(wr)
    names = list(tips)
    if which.isdigit() and 1 <= int(which) <= len(names):
        name = names[int(which) - 1]
        return name, tips[name]
    for name in names:
        if which in (name, name.removeprefix(refs.ABANDONED)):
            return name, tips[name]
    found: dict[str, pygit2.Commit] = {}
    if len(which) >= 4:
        for name, tip in tips.items():
            rec = records.decode(tip.message)
            if (name.removeprefix(refs.ABANDONED).startswith(which) or str(tip.id).startswith(which)
                    or (rec and rec.id.startswith(which))):
                found[name] = tip
    if len(found) == 1:
        return next(iter(found.items()))
    if found:
        raise InvalidInputError(f"{which!r} matches {len(found)} abandoned chains; give more of it "
                                "or its number (narr chains lists them)")
    listed = f"1..{len(names)}" if names else "there are none"
    raise NotFoundError(f"no abandoned chain {which!r} ({listed}; narr chains lists them)")


@dataclass
class ReplayResult:
    chain: str
    total: int
    events: list[EventResult] = field(default_factory=list)
    fast_forward: bool = False
    head: str | None = None
    conflict: ConflictError | None = None
    # commits in the chain that are not events (made with plain git): not replayed
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "chain": self.chain, "total": self.total, "fast_forward": self.fast_forward,
            "head": self.head, "skipped": self.skipped, "warnings": self.warnings,
            "events": [e.to_json() for e in self.events],
        }
        if self.conflict is not None:
            out["conflict"] = {"message": self.conflict.message, "conflicts": self.conflict.conflicts}
        return out


def replay(wr: WorldRepo, which: str, *, reuse: bool = False, diffuser_name: str | None = None,
           progress: Progress | None = None) -> ReplayResult:
    with move.writing(wr) as recovered:
        ref = wr.require_branch()
        name, tip = pick_chain(wr, which)
        head = wr.head_commit()
        assert head is not None
        every = chain_commits(wr.repo, tip, head.id)
        commits = [c for c in every
                   if (r := records.decode(c.message)) is not None and r.kind == "event"]
        result = ReplayResult(name.removeprefix(refs.ABANDONED), len(commits), warnings=recovered)
        replayed = {c.id for c in commits}
        result.skipped = [{"commit": str(c.id), "subject": c.message.strip().split("\n")[0]}
                          for c in every if c.id not in replayed]
        if not commits:
            result.head = str(head.id)
            return result
        if reuse and commits[0].parents and commits[0].parents[0].id == head.id:
            scan = worktree.scan(wr, head.tree)
            if _restorable(scan, commits[0]):
                _fast_forward(wr, ref, head, tip, scan)
                result.fast_forward = True
                result.head = str(tip.id)
                result.events = []
                for c in commits:
                    rec = records.decode(c.message)
                    assert rec is not None
                    result.events.append(EventResult(rec, str(c.id)))
                if progress:
                    progress(len(commits), len(commits), "")
                return result
        with batch(wr):  # one scan and one index write for the whole chain
            return _replay_events(wr, commits, result, reuse, diffuser_name, progress)


def _replay_events(wr: WorldRepo, commits: list[pygit2.Commit], result: ReplayResult,
                   reuse: bool, diffuser_name: str | None, progress: Progress | None
                   ) -> ReplayResult:
    diffuser = None
    if not reuse:
        from narrative.diffusers.base import default_name, get_diffuser

        diffuser = get_diffuser(diffuser_name or default_name(wr), wr)
    for i, commit in enumerate(commits, 1):
        rec = records.decode(commit.message)
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
                conflicts=conflicts,
                details=[_conflict_line(c) for c in conflicts],
                hint="the events before it are replayed; resolve by hand and carry on with "
                     "new events, or reset and replay again",
            )
            break
        request = _request(rec, reuse, edits, diffusions)
        result.events.append(run_event(wr, request, diffuser=diffuser, keep_failed=False))
    if progress:
        progress(len(result.events), len(commits), "")
    head_now = wr.head_commit()
    result.head = str(head_now.id) if head_now is not None else None
    return result


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
    )


def ops_from_changes(changes: list[Change]) -> list[Op]:
    """Delta operations that redo recorded field-level changes."""
    ops: list[Op] = []
    for ch in changes:
        if ch.field == "":
            if ch.has_new and not ch.has_old:
                ops.append(CreateOp(op="create", node=Node.model_validate(ch.new_value)))
            elif ch.has_old and not ch.has_new:
                ops.append(ExpireOp(op="expire", target=ch.target))
        elif ch.has_new:
            ops.append(SetOp(op="set", target=ch.target, field=ch.field, value=ch.new_value))
        else:
            ops.append(UnsetOp(op="unset", target=ch.target, field=ch.field))
    return ops


def _conflicts(wr: WorldRepo, head: pygit2.Commit, rec: EventRecord, *, diffusions: bool
               ) -> tuple[list[dict[str, Any]], list[Change], list[Change]]:
    """Fields where the world no longer holds what the event recorded as the old value,
    and the recorded edits and diffusions still to apply (those not already in the world).

    The recorded hand edits are checked first; then, for ``reuse``, the diffusions
    against the world with those edits in place.
    """
    scan = worktree.scan_for_event(wr, head.tree)
    scan.raise_problems()
    view = WorldView(wr, head.tree, scan)
    nodes: dict[str, NodeDict | None] = {}
    out: list[dict[str, Any]] = []
    todo: dict[str, list[Change]] = {"edit": [], "diffusion": []}
    groups: list[tuple[str, list[Change]]] = [("edit", list(rec.edits))]
    if diffusions:
        groups.append(("diffusion", list(rec.diffusions)))
    for kind, changes in groups:
        for ch in changes:
            if ch.target not in nodes:
                nodes[ch.target] = view.get(ch.target)
            now = fields.value_in(nodes[ch.target], ch.field)
            old = ch.old
            new = ch.new
            if fields.same(now, new):
                continue
            if not fields.same(now, old):
                item: dict[str, Any] = {"event": rec.id, "content": rec.content, "kind": kind,
                                        "target": ch.target, "field": ch.field}
                if ch.has_old:
                    item["recorded_old"] = ch.old_value
                if ch.has_new:
                    item["recorded_new"] = ch.new_value
                if now is not fields.ABSENT:
                    item["current"] = now
                out.append(item)
                continue
            fields.apply_changes(nodes, [ch], verify_old=False)
            todo[kind].append(ch)
    return out, todo["edit"], todo["diffusion"]


def _conflict_line(c: dict[str, Any]) -> str:
    def val(key: str) -> str:
        return fields.show(c[key]) if key in c else "(absent)"

    return (f"{c['target']} {c['field'] or '(whole node)'}: recorded {val('recorded_old')} → "
            f"{val('recorded_new')}, now {val('current')}")


def _restorable(scan: worktree.HandEdits, first: pygit2.Commit) -> bool:
    """The working tree holds nothing but (part of) the first event's own hand edits."""
    if scan.problems:
        return False
    rec = records.decode(first.message)
    if rec is None:
        return False
    recorded = {fields.canonical(c.model_dump(mode="json")) for c in rec.edits}
    return all(fields.canonical(c.model_dump(mode="json")) in recorded for c in user_changes(scan))


def _fast_forward(wr: WorldRepo, ref: str, head: pygit2.Commit, tip: pygit2.Commit,
                  scan: worktree.HandEdits) -> None:
    """Nothing changed since the chain was abandoned: its events come back as they were."""
    updates = move.plan(wr, head.tree, tip.tree, scan)
    rec = records.decode(tip.message)
    move.move(wr, move.Move(
        ref=ref, old=str(head.id), new=str(tip.id),
        message=f"narr replay: fast-forward to {records.subject_of(rec.content if rec else '')}",
        updates=tuple(updates), tree=tip.tree,
    ))
