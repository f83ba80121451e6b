"""Rows of the story's lines: branches, switching between them, merging them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from narrative.operations import MAX_STRING, NodeName, NoParams, Operation, Paged, Params, Rev

if TYPE_CHECKING:
    from narrative.engine.branches import (
        BranchCreated,
        BranchDeleted,
        Branches,
        RemoteBranches,
        Switched,
    )
    from narrative.engine.merge import Conflicts, MergeAborted, MergeResult, Resolved
    from narrative.store import WorldRepo

Branch = Annotated[str, Field(min_length=1, max_length=MAX_STRING, description="a branch's name")]


class CreateBranchParams(Params):
    name: Branch
    rev: Rev | None = Field(None, description="where it starts (left out: the current event)")


class DeleteBranchParams(Params):
    name: Branch


class SwitchParams(Params):
    name: Branch
    create: bool = Field(False, description="create the branch at the current event first")
    set_aside: bool = Field(False, description="set uncommitted hand edits aside instead of refusing")


class MergeParams(Params):
    branch: Annotated[str, Field(min_length=1, max_length=MAX_STRING, description=(
        "the story line to merge: a branch, a remote's (origin/main), any revision"))]


class ResolveParams(Params):
    node: NodeName
    field: Annotated[str, Field(max_length=MAX_STRING, description=(
        "the conflict's field: state.mood or /state/mood; \"\" is the whole node"))]
    take: Literal["ours", "theirs"] | None = Field(
        None, description="keep this line's value (ours) or take the merged one's (theirs)")
    value: Any = Field(None, description="the value to set instead (given: any JSON, null too)")


def run_branches(wr: WorldRepo, p: Paged) -> Branches:
    from narrative.engine.branches import list_branches

    return list_branches(wr)


def run_remote_branches(wr: WorldRepo, p: Paged) -> RemoteBranches:
    from narrative.engine.branches import list_remote_branches

    return list_remote_branches(wr)


def run_create_branch(wr: WorldRepo, p: CreateBranchParams) -> BranchCreated:
    from narrative.engine.branches import create_branch

    return create_branch(wr, p.name, p.rev)


def run_delete_branch(wr: WorldRepo, p: DeleteBranchParams) -> BranchDeleted:
    from narrative.engine.branches import delete_branch

    return delete_branch(wr, p.name)


def run_switch(wr: WorldRepo, p: SwitchParams) -> Switched:
    from narrative.engine.branches import switch

    return switch(wr, p.name, set_aside=p.set_aside, create=p.create)


def run_merge(wr: WorldRepo, p: MergeParams) -> MergeResult:
    from narrative.engine.merge import merge

    return merge(wr, p.branch)


def run_continue_merge(wr: WorldRepo, p: NoParams) -> MergeResult:
    from narrative.engine.merge import continue_merge

    return continue_merge(wr)


def run_abort_merge(wr: WorldRepo, p: NoParams) -> MergeAborted:
    from narrative.engine.merge import abort

    return abort(wr)


def run_conflicts(wr: WorldRepo, p: NoParams) -> Conflicts:
    from narrative.engine.merge import conflicts

    return conflicts(wr)


def run_resolve(wr: WorldRepo, p: ResolveParams) -> Resolved:
    from narrative.engine.merge import ABSENT, resolve
    from narrative.errors import InvalidInputError

    given = "value" in p.model_fields_set
    if (p.take is None) == (not given):
        raise InvalidInputError("the arguments: /take: say which: take ours or theirs, or give a value")
    return resolve(wr, p.node, p.field, take=p.take, value=p.value if given else ABSENT)


E = "narrative.engine"
BRANCHES = Operation(
    "branches", "The story's branches and which one is current.",
    Paged, run_branches, f"{E}.branches:Branches", "GET", "/api/branches", "branch",
    cli_only={"remotes": "--remotes: the remote_branches row", "delete": "--delete: delete_branch"})
REMOTE_BRANCHES = Operation(
    "remote_branches", "The remotes' branches as last fetched, and the local branch following each.",
    Paged, run_remote_branches, f"{E}.branches:RemoteBranches", "GET", "/api/branches/remote",
    "branch --remotes", cli_only={"remotes": "--remotes: this row"})
CREATE_BRANCH = Operation(
    "create_branch", "Make a branch at rev (the current event by default); the current one stays.",
    CreateBranchParams, run_create_branch, f"{E}.branches:BranchCreated", "POST", "/api/branches",
    "branch", writes=True, idempotent=False, positional=("name", "rev"))
DELETE_BRANCH = Operation(
    "delete_branch", "Delete a branch; its events stay kept when no other branch has them.",
    DeleteBranchParams, run_delete_branch, f"{E}.branches:BranchDeleted", "POST",
    "/api/branches/delete", "branch --delete", writes=True, destructive=True, idempotent=False,
    positional=("name",), cli_only={"delete": "--delete: this row"})
SWITCH = Operation(
    "switch", "Make a branch current (create: a new one here); hand edits move along or are set aside.",
    SwitchParams, run_switch, f"{E}.branches:Switched", "POST", "/api/switch", "switch",
    writes=True, idempotent=False, positional=("name",))
MERGE = Operation(
    "merge", "Merge a story line into the current one, node by node and field by field; it stops "
    "with nothing written on a conflict.", MergeParams, run_merge, f"{E}.merge:MergeResult",
    "POST", "/api/merge", "merge", writes=True, idempotent=False, positional=("branch",),
    cli_only={"go_on": "--continue: continue_merge", "abort": "--abort: abort_merge"})
CONTINUE_MERGE = Operation(
    "continue_merge", "Seal the stopped merge once every conflict is resolved.",
    NoParams, run_continue_merge, f"{E}.merge:MergeResult", "POST", "/api/merge/continue",
    "merge --continue", writes=True, idempotent=False, cli_only={"go_on": "--continue: this row"})
ABORT_MERGE = Operation(
    "abort_merge", "Forget the stopped merge (the world never changed).",
    NoParams, run_abort_merge, f"{E}.merge:MergeAborted", "POST", "/api/merge/abort",
    "merge --abort", writes=True, destructive=True, idempotent=False,
    cli_only={"abort": "--abort: this row"})
CONFLICTS = Operation(
    "conflicts", "The conflicts of the merge in progress, with the resolutions chosen so far.",
    NoParams, run_conflicts, f"{E}.merge:Conflicts", "GET", "/api/merge/conflicts", "conflicts")
RESOLVE = Operation(
    "resolve", "Choose a conflict's outcome: take ours or theirs, or give the value.",
    ResolveParams, run_resolve, f"{E}.merge:Resolved", "POST", "/api/merge/resolve", "resolve",
    writes=True, idempotent=True, positional=("node", "field"),
    cli_only={"take": "--ours or --theirs: take"})
ROWS = (BRANCHES, REMOTE_BRANCHES, CREATE_BRANCH, DELETE_BRANCH, SWITCH, MERGE, CONTINUE_MERGE,
        ABORT_MERGE, CONFLICTS, RESOLVE)
