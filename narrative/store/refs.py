"""narr's own refs: abandoned story chains, set-aside hand edits, adopted plain commits.

All live under ``refs/narr/``, so every git tool (and ``git gc``) treats them as
reachable: a reset never makes an event or a hand edit unreachable. Names sort
chronologically (they start with a time-ordered id), and the newest is number 1
in ``narr chains`` and ``narr edits``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pygit2

from narrative.ids import new_event_id
from narrative.store.worldrepo import WorldRepo

ABANDONED = "refs/narr/abandoned/"
SET_ASIDE = "refs/narr/edits/"
ADOPTED = "refs/narr/adopted/"
SET_ASIDE_MARKER = "narr-set-aside v1"


def valid_branch_name(name: str) -> bool:
    """Whether git accepts ``refs/heads/NAME``."""
    return bool(pygit2.reference_is_valid_name("refs/heads/" + name))


def head_reflog(wr: WorldRepo) -> list[pygit2.RefLogEntry]:
    """HEAD's reflog, newest first (empty when there is none)."""
    try:
        return list(wr.repo.references["HEAD"].log())
    except (KeyError, pygit2.GitError):
        return []


def _listed(wr: WorldRepo, prefix: str) -> list[str]:
    """Names under ``prefix`` whose commit is here, newest first (see :func:`dangling`)."""
    return sorted((n for n in wr.repo.references if n.startswith(prefix)
                   and _target_present(wr, n)), reverse=True)


def dangling(wr: WorldRepo) -> list[str]:
    """narr's refs naming a commit the repository does not hold (lost objects, a bad copy).

    They are left out of every listing, so one lost chain does not stop the rest
    from being listed or replayed; ``narr check`` names them.
    """
    return sorted(n for n in wr.repo.references
                  if n.startswith((ABANDONED, SET_ASIDE, ADOPTED)) and not _target_present(wr, n))


def _target_present(wr: WorldRepo, name: str) -> bool:
    try:
        target = wr.repo.references[name].resolve().target
    except (KeyError, pygit2.GitError):
        return False
    return isinstance(target, pygit2.Oid) and target in wr.repo


def abandoned_refs(wr: WorldRepo) -> list[str]:
    return _listed(wr, ABANDONED)


def set_aside_refs(wr: WorldRepo) -> list[str]:
    return _listed(wr, SET_ASIDE)


def keep_abandoned(wr: WorldRepo, tip: pygit2.Oid, branch: str, message: str) -> str | None:
    """Keep ``tip`` under ``refs/narr/abandoned/`` unless an abandoned ref already keeps it."""
    repo = wr.repo
    for name in abandoned_refs(wr):
        kept = repo.references[name].target
        if kept == tip or repo.descendant_of(kept, tip):
            return None
    name = f"{ABANDONED}{new_event_id()}-{branch.replace('/', '-')}"
    repo.create_reference_direct(name, tip, False, message=message)
    return name


@dataclass(frozen=True)
class Kept:
    name: str
    new: bool  # made now (False: an existing ref already kept the commit)


def keep_adopted(wr: WorldRepo, tip: pygit2.Oid, branch: str, message: str) -> Kept:
    """Keep plain commits ``narr adopt`` moves off a branch under ``refs/narr/adopted/``.

    An adopted ref that already keeps ``tip`` (an adopt a crash cut short) is reused.
    """
    repo = wr.repo
    for name in _listed(wr, ADOPTED):
        if repo.references[name].target == tip:
            return Kept(name, False)
    name = f"{ADOPTED}{new_event_id()}-{branch.replace('/', '-')}"
    repo.create_reference_direct(name, tip, False, message=message)
    return Kept(name, True)


@dataclass
class SetAside:
    """Hand edits a reset (or a switch) moved out of the way, stored as a commit."""

    ref: str
    commit: pygit2.Commit
    meta: dict[str, Any]

    @property
    def base(self) -> pygit2.Commit:
        return self.commit.parents[0]


def save_set_aside(wr: WorldRepo, head: pygit2.Commit, blobs: dict[str, pygit2.Oid | None],
                   reason: str, when: datetime | None = None) -> SetAside:
    """A commit on top of ``head`` holding the working tree's changed world files."""
    from narrative.store.trees import update_tree

    repo = wr.repo
    tree = update_tree(repo, head.tree.id, blobs)
    meta = {"reason": reason, "head": str(head.id), "paths": sorted(blobs),
            "created_at": (when or datetime.now().astimezone()).strftime("%Y-%m-%dT%H:%M:%S%z")}
    message = (f"narr: hand edits set aside ({reason})\n\n{SET_ASIDE_MARKER}\n"
               f"{json.dumps(meta, ensure_ascii=False, indent=2)}\n")
    sig = wr.signature(when)
    commit_id = repo.create_commit(None, sig, sig, message, tree, [head.id])
    name = f"{SET_ASIDE}{new_event_id()}"
    repo.create_reference_direct(name, commit_id, False, message=f"narr: set aside ({reason})")
    commit = repo[commit_id]
    assert isinstance(commit, pygit2.Commit)
    return SetAside(name, commit, meta)


def load_set_aside(wr: WorldRepo, name: str) -> SetAside:
    commit = wr.repo.references[name].peel(pygit2.Commit)
    _, _, rest = commit.message.partition(f"\n\n{SET_ASIDE_MARKER}\n")
    try:
        meta = json.loads(rest) if rest else {}
    except ValueError:
        meta = {}
    return SetAside(name, commit, meta)
