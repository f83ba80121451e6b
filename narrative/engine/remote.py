"""``narr clone``, ``narr push``, ``narr pull``: one world, several machines, any git server.

A clone is a git clone that also brings every writer's undone chains and
set-aside edits (``refs/narr/*``), then builds narr's derived catalog, so the
copy answers at once and ``narr check`` accepts it. A push sends the story line
(fast-forward only, as git) and one's own narr refs; a pull fetches, then either
moves the story forward or merges (``narr merge REMOTE/BRANCH``: the same
three-way merge per field, the same conflicts). What each fetch brings of the
others' refs sits under ``refs/narr/remotes/<remote>/``, so nobody's undone
chains ever replace anybody else's (:mod:`narrative.store.remote`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative.engine.merge import MergeResult, merge
from narrative.errors import InvalidInputError, InvalidWorldError, NotAWorldError, NotFoundError, Step
from narrative.store import (
    REMOTE_KINDS,
    REMOTES,
    WorldRepo,
    branch_exists,
    clone_repository,
    default_remote,
    dropped_refs,
    dropped_there,
    fetch_remote,
    hazards,
    index_all_events,
    is_ancestor,
    is_own_ref,
    names_under,
    peel_commit,
    push_edits_setting,
    push_remote,
    ref_exists,
    remote_branch_refs,
    remote_cleared,
    remove_clone,
    set_upstream,
    tracking_ref,
    unreadable_records,
    upstream,
)


def _content(wr: WorldRepo, commit_id: str) -> str:
    commit = peel_commit(wr, commit_id)
    if commit is None:
        return ""
    rec = commit.record()
    return rec.content if rec else commit.message.strip().splitlines()[0]


def _fetched(wr: WorldRepo, name: str) -> set[str]:
    """narr refs fetched from remote ``name`` that are not one's own come back."""
    prefix = f"{REMOTES}{name}/"
    out = set()
    gone = dropped_refs(wr)
    for ref in names_under(wr, prefix):
        kind, _, tail = ref.removeprefix(prefix).partition("/")
        if not is_own_ref(wr, kind, tail, gone):
            out.add(ref)
    return out


def _kinds(names: set[str]) -> dict[str, int]:
    out = {kind: 0 for kind in REMOTE_KINDS}
    for name in names:
        for kind in REMOTE_KINDS:
            if f"/{kind}/" in name:
                out[kind] += 1
                break
    return out


@dataclass
class CloneResult:
    path: str
    url: str
    remote: str
    branch: str | None
    commit: str | None
    content: str
    branches: list[str]
    fetched: dict[str, int]  # narr refs of the remote's writers, by kind
    events: int
    # links and re-encoding attributes in what came (narr refuses to go through them)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "url": self.url, "remote": self.remote, "branch": self.branch,
                "commit": self.commit, "content": self.content, "branches": self.branches,
                "fetched": self.fetched, "events": self.events, "warnings": self.warnings}


def default_directory(url: str) -> str:
    """The directory a clone of ``url`` goes into when none is given (as git names it)."""
    stem = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
    if not stem or stem in (".", ".."):
        raise InvalidInputError(f"cannot make a directory name from {url!r}; give DIR")
    return stem


def clone(url: str, directory: str | Path | None = None, *, remote_name: str = "origin"
          ) -> CloneResult:
    """Clone the world at ``url`` into ``directory`` (default: named after the URL)."""
    if not url or url.startswith("-"):
        raise InvalidInputError(f"{url!r} is not a repository URL or path")
    if directory is None:
        directory = default_directory(url)
    target = Path(directory).absolute()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InvalidInputError(f"{target} already exists and is not an empty directory")
    existed = target.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    if not clone_repository(url, target, remote_name):
        remove_clone(target, existed)
        raise NotFoundError(f"{url} holds no story yet (an empty repository); nothing was cloned",
                            hint="narr push from a world sends one there")
    try:
        wr = WorldRepo.open(target)
    except NotAWorldError:
        remove_clone(target, existed)
        raise NotAWorldError(f"{url} is a git repository but not a narr world (no narr.toml); "
                             "nothing was cloned", hint="git clone copies it as it is") from None
    except InvalidWorldError as exc:  # e.g. a narr.toml that is a link to a file elsewhere
        remove_clone(target, existed)
        raise InvalidWorldError(f"{url}: {exc.message}; nothing was cloned",
                                details=exc.details) from None
    with wr:
        head = wr.head_commit()
        if head is not None:
            wr.catalog_at(head.tree)
        events = index_all_events(wr)
        names = [n.removeprefix(f"refs/remotes/{remote_name}/")
                 for n in remote_branch_refs(wr, remote_name)]
        return CloneResult(str(target), url, remote_name, wr.branch(),
                           head.id if head is not None else None,
                           _content(wr, head.id) if head is not None else "", names,
                           _kinds(_fetched(wr, remote_name)), events,
                           [*hazards(wr, full=True),
                            *(unreadable_records(wr, head.id) if head is not None else [])])


@dataclass
class PushResult:
    remote: str
    branch: str
    commit: str
    status: str  # "new", "updated" or "up to date"
    narr_refs: int  # narr refs sent (chains, set-aside edits, adopted commits, replay marks)
    refused: dict[str, str] = field(default_factory=dict)  # narr refs the remote refused
    upstream_set: bool = False
    edits: bool = True  # whether one's set-aside edits went along
    deleted: list[str] = field(default_factory=list)  # one's own narr refs dropped, gone there too

    def to_json(self) -> dict[str, Any]:
        return {"remote": self.remote, "branch": self.branch, "commit": self.commit,
                "status": self.status, "narr_refs": self.narr_refs,
                "refused": [{"ref": ref, "reason": why} for ref, why in sorted(self.refused.items())],
                "upstream_set": self.upstream_set, "edits": self.edits, "deleted": self.deleted}


def push(wr: WorldRepo, remote_name: str | None = None, branch: str | None = None, *,
         edits: bool | None = None) -> PushResult:
    """Send ``branch`` (default: the current one) and one's narr refs to the remote.

    ``edits`` False keeps one's set-aside edits on this machine; None follows git
    config ``narr.pushEdits`` (default true). Edits pushed before stay on the remote.
    """
    branch = branch or wr.branch()
    if branch is None:
        raise InvalidInputError("HEAD is detached: which branch?", hint="narr push REMOTE BRANCH")
    if not branch_exists(wr, branch):
        raise NotFoundError(f"no branch named {branch!r}", hint="{0} lists them",
                            steps=[Step("branches")])
    name = remote_name or default_remote(wr, branch)
    tip = peel_commit(wr, f"refs/heads/{branch}")
    if tip is None:
        raise NotFoundError(f"branch {branch!r} points at no commit of this repository")
    tracking = tracking_ref(name, branch)
    was_there = ref_exists(wr, tracking)
    # No write lock: git reads each ref once, and every ref narr moves moves atomically, so
    # a push never sends half an event; a slow network must not stop the writer meanwhile.
    if edits is None:
        edits = push_edits_setting(wr)
    pending, held = dropped_there(wr, name)
    pushed = push_remote(wr, name, branch, edits=edits, delete=held)
    if pending:
        remote_cleared(wr, name, [n for n in pending if n not in held or n in pushed.deleted])
    head_ref = f"refs/heads/{branch}"
    status = "up to date" if head_ref in pushed.up_to_date else (
        "updated" if was_there else "new")
    result = PushResult(name, branch, tip.id, status,
                        sum(1 for r in pushed.updated if r.startswith("refs/narr/")),
                        refused={k: v for k, v in pushed.rejected.items() if k != head_ref},
                        edits=edits, deleted=pushed.deleted)
    if upstream(wr, branch) == (None, None):
        set_upstream(wr, branch, name, branch)
        result.upstream_set = True
    return result


@dataclass
class PullResult:
    remote: str
    branch: str
    status: str  # "up to date", "fast-forward" or "merged"
    commit: str
    merge: MergeResult | None
    fetched: dict[str, int]  # narr refs new from the remote's writers, by kind
    warnings: list[str] = field(default_factory=list)  # commits brought whose record is unreadable

    def to_json(self) -> dict[str, Any]:
        return {"remote": self.remote, "branch": self.branch, "status": self.status,
                "commit": self.commit, "fetched": self.fetched,
                "merge": self.merge.to_json() if self.merge is not None else None,
                "warnings": self.warnings}


def pull(wr: WorldRepo, remote_name: str | None = None, branch: str | None = None) -> PullResult:
    """Fetch, then bring the remote's ``branch`` into the current story line.

    ``branch`` defaults to the one the current branch follows, else its own name. A
    merge that stops on conflicts raises ConflictError with the merge kept, as
    ``narr merge`` does; what was fetched stays fetched.
    """
    wr.require_branch()
    current = wr.branch()
    assert current is not None
    name = remote_name or default_remote(wr, current)
    configured_remote, configured = upstream(wr, current)
    branch = branch or (configured if configured and configured_remote == name else current)
    before = _fetched(wr, name)
    fetch_remote(wr, name)
    fetched = _kinds(_fetched(wr, name) - before)
    theirs = peel_commit(wr, tracking_ref(name, branch))
    if theirs is None:
        raise NotFoundError(f"{name} has no branch {branch!r}",
                            hint=f"narr push {name} {branch} makes it there")
    head = wr.head_commit()
    assert head is not None
    if is_ancestor(wr, theirs.id, head.id):
        return PullResult(name, branch, "up to date", head.id, None, fetched)
    unreadable = unreadable_records(wr, theirs.id, head.id)
    merged = merge(wr, f"{name}/{branch}")
    status = "fast-forward" if merged.fast_forward else "merged"
    assert merged.commit is not None
    return PullResult(name, branch, status, merged.commit, merged, fetched, unreadable)
