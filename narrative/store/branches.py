"""Story branches as git keeps them: local branches, and the remotes' branches as last fetched.

The engine decides what a branch may be called and what deleting one must keep;
this module only reads and writes the refs (``refs/heads/``, ``refs/remotes/``).
"""

from __future__ import annotations

from narrative.store.history import peel_commit
from narrative.store.objects import Commit, git_commit
from narrative.store.worldrepo import WorldRepo

HEADS = "refs/heads/"
REMOTE_HEADS = "refs/remotes/"


def local(wr: WorldRepo) -> list[str]:
    """The local branches' names, sorted."""
    return sorted(wr.repo.branches.local)


def exists(wr: WorldRepo, name: str) -> bool:
    return name in wr.repo.branches.local


def tip(wr: WorldRepo, name: str) -> Commit | None:
    """The commit local branch ``name`` points at (None: no such branch, or a dangling one)."""
    return peel_commit(wr, HEADS + name)


def create(wr: WorldRepo, name: str, at: Commit) -> None:
    """A new local branch at ``at`` (git refuses an existing name)."""
    wr.repo.branches.local.create(name, git_commit(at))


def delete(wr: WorldRepo, name: str) -> None:
    wr.repo.branches.local[name].delete()


def tips_but(wr: WorldRepo, name: str) -> list[str]:
    """The commit ids every local branch but ``name`` points at."""
    branches = wr.repo.branches.local
    return [str(branches[b].target) for b in branches if b != name]


def remote_refs(wr: WorldRepo, remote: str | None = None) -> list[str]:
    """The remotes' branch refs as last fetched (``refs/remotes/origin/alt``, of ``remote``
    only if given), sorted, without the remotes' ``HEAD`` pointers."""
    prefix = REMOTE_HEADS + (f"{remote}/" if remote else "")
    return sorted(n for n in wr.repo.references if n.startswith(prefix) and not n.endswith("/HEAD"))


def at_commit(wr: WorldRepo, commit_id: str) -> list[str]:
    """The branches (local, then the remotes' as last fetched: ``origin/alt``) that point at
    ``commit_id``, each group sorted: the names a user knows that commit by."""
    out: list[tuple[bool, str]] = []
    for ref in wr.repo.references:
        remote = ref.startswith(REMOTE_HEADS)
        if not (ref.startswith(HEADS) or remote) or ref.endswith("/HEAD"):
            continue
        found = peel_commit(wr, ref)
        if found is not None and found.id == commit_id:
            out.append((remote, ref.removeprefix(HEADS).removeprefix(REMOTE_HEADS)))
    return [name for _, name in sorted(out)]
