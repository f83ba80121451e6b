"""``narr adopt``: plain git commits that changed ``world/`` become hand edits again.

A ``git commit -am`` after a hand edit makes a commit the history cannot explain
(``narr check`` names it). Adopting moves the branch back to the last event on
the first-parent line and leaves every working-tree file as it is, as ``git
reset --mixed`` would: the commits' world changes are hand edits again, which the
next event records, and their changes outside ``world/`` are uncommitted changes.
The commits themselves are kept for good under ``refs/narr/adopted/``.

The move goes through the journal like every other (the ref move is the commit
point); the journal only names ``world/`` paths, so the index entries outside
``world/`` are set afterwards: a crash between the two leaves them staged, which
loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from narrative.errors import ConflictError, NothingToDoError, Step
from narrative.ids import is_world_path
from narrative.store import (
    Commit,
    Move,
    WorldRepo,
    first_parent,
    has_marker,
    index_to,
    journaled,
    keep_adopted,
    move_head,
    paths_between,
    peel_commit,
    plain_world_commits,
    plan_move,
    scan_edits,
    subject_of,
    writing,
)


@dataclass
class AdoptResult:
    branch: str
    old: str
    new: str
    event: dict[str, Any]
    adopted: list[dict[str, str]]  # the plain commits, newest first
    kept_as: str  # the ref keeping them
    world_paths: list[str] = field(default_factory=list)  # world files now hand edits
    other_paths: list[str] = field(default_factory=list)  # files outside world/ now uncommitted
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"branch": self.branch, "from": self.old, "to": self.new, "event": self.event,
                "adopted": self.adopted, "kept_as": self.kept_as,
                "world_paths": self.world_paths, "other_paths": self.other_paths,
                "warnings": self.warnings}


def unadopted(wr: WorldRepo, head: Commit | None) -> ConflictError | None:
    """Why no event may be recorded on ``head`` yet: plain commits since the last event
    changed ``world/``. An event on top would bury them where ``narr adopt`` cannot reach
    and ``narr check`` fails for good, so the event waits for the adoption. A plain git
    merge among them is no such case: ``narr check``'s fix for it replays the events after."""
    plain = plain_world_commits(wr, head) if head is not None else []
    if not plain or any(c.is_merge for c in plain):
        return None
    newest = plain[0]
    what = (f"{len(plain)} plain git commits since the last event ({newest.id[:10]} "
            f"{newest.subject}, ...) changed world/" if len(plain) > 1 else
            f"the plain git commit {newest.id[:10]} {newest.subject!r} changed world/")
    return ConflictError(f"{what}: the history cannot explain it",
                         hint="{0} makes its changes hand edits again, which the next event "
                              "records (the commit is kept under refs/narr/adopted/)",
                         steps=[Step("adopt")])


def buried(wr: WorldRepo, commit_ids: list[str]) -> str | None:
    """How to recover plain commits that changed ``world/`` with events on top of them
    (recorded before events refused to build there): ``narr adopt`` reaches only the
    commits after the last event. None when every one of them is within its reach."""
    head = wr.head_commit()
    reach = {c.id for c in plain_world_commits(wr, head)} if head is not None else set()
    deep = [c for c in commit_ids if c not in reach]
    if not deep:
        return None
    oldest = peel_commit(wr, deep[-1])
    before = next((c for c in first_parent(oldest) if has_marker(c.message)),
                  None) if oldest is not None else None
    if before is None:
        return None
    return (f"plain git commit {deep[-1][:10]} lies under later events, where narr adopt cannot "
            f"reach it: narr reset {before.id[:10]} (the last event before it; the later commits "
            f"are kept as a chain), make its change again by hand (git show {deep[-1][:10]} -- "
            "world/) and record it with an event, then narr replay the chain --reuse")


def adopt(wr: WorldRepo) -> AdoptResult:
    """Move the branch back to its last event, keeping the working tree byte for byte."""
    with writing(wr) as recovered:
        ref = wr.require_branch()  # refuses a detached HEAD and a git merge in progress
        branch = ref.removeprefix("refs/heads/")
        head = wr.head_commit()
        if head is None:
            raise NothingToDoError("the branch has no commits: there is nothing to adopt")
        plain = []
        target = None
        for commit in first_parent(head):
            if commit.record() is not None:
                target = commit
                break
            plain.append(commit)
        if target is None:
            raise NothingToDoError("no narr event on this story line: there is nothing to "
                                   "adopt")
        if not plain:
            raise NothingToDoError("HEAD is a narr event: there are no plain commits to adopt",
                                   hint="{0} shows the hand edits the next event records",
                                   steps=[Step("status")])
        changed = paths_between(wr, head.tree, target.tree)
        world_paths = sorted(p for p in changed if is_world_path(p))
        other_paths = sorted(p for p in changed if not is_world_path(p))
        if not world_paths:
            raise NothingToDoError(
                f"the {len(plain)} plain commit{'s' if len(plain) != 1 else ''} after the last "
                "event do not change world/: there is nothing to adopt",
                hint="{0} accepts commits that leave world/ alone", steps=[Step("check")])
        scan = scan_edits(wr, head.tree)
        keep = frozenset(world_paths) | frozenset(scan.raw)
        updates = [u for u in plan_move(wr, head.tree, target.tree, scan, keep_worktree=keep)
                   if journaled(u.path)]
        made = keep_adopted(wr, head.id, branch, f"narr adopt: plain commits on {branch}")
        kept_as = made.name
        rec = target.record()
        content = rec.content if rec is not None else ""
        move_head(wr, Move(
            ref=ref, old=head.id, new=target.id,
            message=f"narr adopt: moving to {subject_of(content)} "
                    f"({len(plain)} plain commit{'s' if len(plain) != 1 else ''} kept as hand edits)",
            updates=tuple(updates), tree=target.tree, made_refs=(kept_as,) if made.new else (),
        ))
        index_to(wr, target.tree, [p for p in changed if not journaled(p)])
        return AdoptResult(
            branch=branch, old=head.id, new=target.id,
            event={"commit": target.id, "id": rec.id if rec else None, "content": content},
            adopted=[{"commit": c.id, "subject": c.subject} for c in plain],
            kept_as=kept_as, world_paths=world_paths, other_paths=other_paths,
            warnings=recovered)
