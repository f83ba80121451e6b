"""Story branches (git branches) side by side, switching between them, and the reflog."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, ClassVar

from narrative.answers import Answer, Items, Shape
from narrative.errors import ConflictError, InvalidInputError, NotFoundError, NothingToDoError, Step
from narrative.store import (
    HEADS,
    REMOTE_HEADS,
    SYMBOLIC,
    Commit,
    Move,
    WorldRepo,
    branch_exists,
    branch_tip,
    branch_tips_but,
    content_of,
    delete_branch_ref,
    head_reflog,
    is_ancestor,
    keep_abandoned,
    local_branches,
    move_head,
    new_branch_ref,
    peel_commit,
    plan_move,
    ref_exists,
    remote_branch_refs,
    remote_branches_named,
    resolve_rev,
    scan_edits,
    set_aside_edits,
    set_upstream,
    tracking_ref,
    upstream,
    valid_branch_name,
    writing,
)

_HEXLIKE = re.compile(r"[0-9a-f]{4,40}")
_GIT_SPECIAL = re.compile(r"[A-Z_]*HEAD")  # HEAD, ORIG_HEAD, FETCH_HEAD, MERGE_HEAD...
_EVENT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _check_name(name: str) -> str:
    if not name or name.startswith("-") or not valid_branch_name(name):
        raise InvalidInputError(f"{name!r} is not a valid branch name")
    # "dead" and "cafe" are words; "deadbeef" and "3f2a" read as abbreviated hashes
    hexlike = _HEXLIKE.fullmatch(name) and (any(c.isdigit() for c in name) or len(name) >= 7)
    special = name == "@" or _GIT_SPECIAL.fullmatch(name)
    if special or hexlike or _EVENT_ID.fullmatch(name):
        what = "one of git's own names" if special else "a commit hash or an event id"
        raise InvalidInputError(
            f"{name!r} reads like {what}; a branch of that name would make revisions ambiguous",
            hint="pick a word for it")
    return name


def _refuse_clash(wr: WorldRepo, name: str) -> None:
    """git keeps branches as files: 'story' and 'story/alt' cannot both exist."""
    if branch_exists(wr, name):
        raise ConflictError(f"a branch named {name!r} already exists")
    for other in local_branches(wr):
        if other.startswith(name + "/") or name.startswith(other + "/"):
            raise ConflictError(f"branch {name!r} cannot exist beside branch {other!r} "
                                "(one would be a folder of the other)")


def _tip(wr: WorldRepo, name: str) -> Commit:
    tip = branch_tip(wr, name)
    if tip is None:
        raise NotFoundError(f"branch {name!r} points at no commit of this repository")
    return tip


class RemoteBranch(Shape):
    """A remote's branch as last fetched; ``followed_by`` the local branch that follows it."""

    name: str
    remote: str
    commit: str
    content: str
    followed_by: str | None


class RemoteBranches(Items[RemoteBranch]):
    """The remotes' branches as last fetched, with the local branch that follows each."""

    NAME: ClassVar[str] = "remote_branches"
    VERSION: ClassVar[int] = 2  # 2: a page of the list (next), when one was asked for


class BranchCreated(Answer):
    """A new branch at ``commit`` (its event's words in ``content``); the current one stays."""

    NAME: ClassVar[str] = "branch_created"

    name: str
    commit: str
    content: str


class BranchDeleted(Answer):
    """A branch deleted; ``kept_as``: the ref its events stay under when no other branch has them."""

    NAME: ClassVar[str] = "branch_deleted"

    name: str
    commit: str
    kept_as: str | None


class Switched(Answer):
    """The branch now current and its tip; ``set_aside``: where hand edits the switch moved past
    were kept; ``tracking``: the remote branch a new branch was made from."""

    NAME: ClassVar[str] = "switch"

    branch: str
    commit: str
    content: str
    set_aside: str | None
    warnings: list[str]
    tracking: str | None


def list_remote_branches(wr: WorldRepo) -> RemoteBranches:
    """The remotes' branches as last fetched (``origin/alt``), with the local branch that
    follows each, if any."""
    following = {}
    for name in local_branches(wr):
        up_remote, up_branch = upstream(wr, name)
        if up_remote and up_branch:
            following[f"{up_remote}/{up_branch}"] = name
    out = []
    for ref in remote_branch_refs(wr):
        commit = peel_commit(wr, ref)
        if commit is None:
            continue
        name = ref.removeprefix(REMOTE_HEADS)
        out.append({"name": name, "remote": name.partition("/")[0], "commit": commit.id,
                    "content": content_of(wr, commit), "followed_by": following.get(name)})
    return RemoteBranches.model_validate({"items": out})


class Branch(Shape):
    """A story branch: its tip (``commit`` and the event's words) and whether it is current."""

    name: str
    current: bool
    commit: str
    content: str


class Branches(Items[Branch]):
    """The story's branches and which one is current."""

    NAME: ClassVar[str] = "branches"
    VERSION: ClassVar[int] = 2  # 2: a page of the list (next), when one was asked for


def list_branches(wr: WorldRepo) -> Branches:
    """The story's branches, each with its tip and whether it is the current one."""
    current = wr.branch()
    out = []
    for name in local_branches(wr):
        commit = _tip(wr, name)
        out.append(Branch(name=name, current=name == current, commit=commit.id,
                          content=content_of(wr, commit)))
    return Branches(items=out)


def create_branch(wr: WorldRepo, name: str, rev: str | None = None) -> BranchCreated:
    """A new branch ``name`` at ``rev`` (default HEAD); the current branch stays."""
    _check_name(name)
    with wr.lock:
        _refuse_clash(wr, name)
        commit = resolve_rev(wr, rev or "HEAD")
        new_branch_ref(wr, name, commit)
        return BranchCreated(name=name, commit=commit.id, content=content_of(wr, commit))


def delete_branch(wr: WorldRepo, name: str) -> BranchDeleted:
    """Delete a branch; its events stay reachable under refs/narr/abandoned/ when no other ref has them."""
    with wr.lock:
        if not branch_exists(wr, name):
            raise NotFoundError(f"no branch named {name!r}")
        if name == wr.branch():
            raise InvalidInputError(f"{name!r} is the current branch; switch to another first")
        tip = _tip(wr, name)
        kept = None
        if not any(is_ancestor(wr, tip.id, o) for o in branch_tips_but(wr, name)):
            kept = keep_abandoned(wr, tip.id, name, f"narr branch --delete {name}",
                                       wr.head_id())
        delete_branch_ref(wr, name)
        return BranchDeleted(name=name, commit=tip.id, kept_as=kept)


def _remote_branch(wr: WorldRepo, name: str) -> tuple[str, Commit]:
    """A branch no local branch names, found on exactly one remote (as last fetched), as
    ``git switch`` guesses: the remote and the commit a new tracking branch starts at."""
    found = remote_branches_named(wr, name)
    if not found:
        head, _, rest = name.partition("/")
        if rest and ref_exists(wr, tracking_ref(head, rest)):
            raise NotFoundError(f"{name} is {head}'s branch; story lines are written on local "
                                "branches", hint="{0} makes one following it",
                                steps=[Step("switch", {"name": rest})])
        raise NotFoundError(f"no branch named {name!r}",
                            hint="{0} creates it; narr pull fetches a remote's branches",
                            steps=[Step("switch", {"name": name, "create": True},
                                        cli=f"narr switch -c {name}")])
    if len(found) > 1:
        raise InvalidInputError(
            f"{name!r} is a branch of {len(found)} remotes ({', '.join(found)})",
            hint="{0}, then {1}", steps=[Step("create_branch", {"name": name, "rev": f"REMOTE/{name}"}),
                                         Step("switch", {"name": name})])
    tip = peel_commit(wr, tracking_ref(found[0], name))
    if tip is None:
        raise NotFoundError(f"{found[0]}/{name} points at no commit of this repository")
    return found[0], tip


def switch(wr: WorldRepo, name: str, *, set_aside: bool = False, create: bool = False,
           when: datetime | None = None) -> Switched:
    """Make branch ``name`` current (``create``: a new one here); hand edits move or are set aside."""
    _check_name(name)
    tracked: tuple[str, Commit] | None = None
    with writing(wr) as recovered:
        wr.require_no_git_operation()
        head = wr.head_commit()
        assert head is not None
        if create:
            _refuse_clash(wr, name)
            target = head
        elif not branch_exists(wr, name):
            _refuse_clash(wr, name)
            tracked = _remote_branch(wr, name)
            target = tracked[1]
        else:
            if name == wr.branch():
                raise NothingToDoError(f"already on {name}")
            target = _tip(wr, name)
        scan = scan_edits(wr, head.tree)
        saved = None
        if target.tree.id == head.tree.id:
            updates = []  # same world: hand edits simply stay where they are
        else:
            if scan.raw and not set_aside:
                raise ConflictError(
                    f"there are uncommitted hand edits ({len(scan.raw)} file(s)); switching would "
                    "leave them on the wrong story line",
                    hint="record them with an event first, or {0}",
                    steps=[Step("switch", {"name": name, "set_aside": True},
                                cli="narr switch --set-aside")],
                )
            updates = plan_move(wr, head.tree, target.tree, scan)
            if scan.raw:
                kept = set_aside_edits(wr, head, scan, f"switch to {name}", when)
                saved = kept.ref if kept else None
        if create:
            new_branch_ref(wr, name, head)
        elif tracked is not None:
            new_branch_ref(wr, name, target)
            set_upstream(wr, name, tracked[0], name)
        current = wr.head_ref()
        move_head(wr, Move(
            ref="HEAD",
            old=SYMBOLIC + current if current else head.id,
            new=SYMBOLIC + HEADS + name,
            message=f"narr switch: to {name}",
            updates=tuple(updates), tree=target.tree, made_refs=(saved,),
        ))
        return Switched(branch=name, commit=target.id, content=content_of(wr, target),
                        set_aside=saved, warnings=recovered,
                        tracking=f"{tracked[0]}/{name}" if tracked is not None else None)


def reflog(wr: WorldRepo, limit: int | None = None) -> list[dict[str, Any]]:
    """HEAD's reflog, newest first, with the story content each entry landed on."""
    out = []
    for n, entry in enumerate(head_reflog(wr)):
        if limit is not None and n >= limit:
            break
        landed = peel_commit(wr, entry.new)
        content = content_of(wr, landed) if landed is not None else ""
        when = datetime.fromtimestamp(entry.time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append({"n": n, "old": entry.old, "new": entry.new,
                    "message": entry.message, "when": when, "content": content})
    return out
