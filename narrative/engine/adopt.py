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

from narrative.errors import NothingToDoError
from narrative.ids import is_world_path
from narrative.store import history, move, records, refs, worktree
from narrative.store.worldrepo import WorldRepo


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


def adopt(wr: WorldRepo) -> AdoptResult:
    """Move the branch back to its last event, keeping the working tree byte for byte."""
    with move.writing(wr) as recovered:
        ref = wr.require_branch()  # refuses a detached HEAD and a git merge in progress
        branch = ref.removeprefix("refs/heads/")
        head = wr.head_commit()
        if head is None:
            raise NothingToDoError("the branch has no commits: there is nothing to adopt")
        plain = []
        target = None
        for commit in history.first_parent(head):
            if commit.record() is not None:
                target = commit
                break
            plain.append(commit)
        if target is None:
            raise NothingToDoError("no narr event on this story line: there is nothing to "
                                   "adopt")
        if not plain:
            raise NothingToDoError("HEAD is a narr event: there are no plain commits to adopt",
                                   hint="narr status shows the hand edits the next event records")
        changed = move.changed_paths(wr, head.tree, target.tree)
        world_paths = sorted(p for p in changed if is_world_path(p))
        other_paths = sorted(p for p in changed if not is_world_path(p))
        if not world_paths:
            raise NothingToDoError(
                f"the {len(plain)} plain commit{'s' if len(plain) != 1 else ''} after the last "
                "event do not change world/: there is nothing to adopt",
                hint="narr check accepts commits that leave world/ alone")
        scan = worktree.scan(wr, head.tree)
        keep = frozenset(world_paths) | frozenset(scan.raw)
        updates = [u for u in move.plan(wr, head.tree, target.tree, scan, keep_worktree=keep)
                   if move.journaled(u.path)]
        made = refs.keep_adopted(wr, head.id, branch, f"narr adopt: plain commits on {branch}")
        kept_as = made.name
        rec = target.record()
        content = rec.content if rec is not None else ""
        move.move(wr, move.Move(
            ref=ref, old=head.id, new=target.id,
            message=f"narr adopt: moving to {records.subject_of(content)} "
                    f"({len(plain)} plain commit{'s' if len(plain) != 1 else ''} kept as hand edits)",
            updates=tuple(updates), tree=target.tree, made_refs=(kept_as,) if made.new else (),
        ))
        move.index_to(wr, target.tree, [p for p in changed if not move.journaled(p)])
        return AdoptResult(
            branch=branch, old=head.id, new=target.id,
            event={"commit": target.id, "id": rec.id if rec else None, "content": content},
            adopted=[{"commit": c.id, "subject": c.subject} for c in plain],
            kept_as=kept_as, world_paths=world_paths, other_paths=other_paths,
            warnings=recovered)
