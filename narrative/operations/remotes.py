"""Rows of one world on several machines: clone it, push a story line and one's narr refs to a
remote, pull one from it.

Git reaches remotes with the credentials of the process that runs it (its SSH agent, its
credential helpers), and never asks for a password (prompts are off unless the user turns them
on). The command line runs these in the caller's own process for that reason. A world's server
(HTTP, MCP) runs push and pull with its own: a program that asks it to push sends what the
server's owner may send, to the remotes the world names (a remote is named, never a URL).
A clone makes a world where none is, so only the command line and the library run it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from narrative.operations import MAX_STRING, Operation, Params, directory_of

if TYPE_CHECKING:
    from pathlib import Path

    from narrative.answer_models import CloneAnswer, PullAnswer, PushAnswer
    from narrative.store import WorldRepo

Name = Annotated[str, Field(min_length=1, max_length=MAX_STRING)]


class CloneParams(Params):
    url: Annotated[str, Field(min_length=1, max_length=MAX_STRING, description=(
        "the world to copy: any git URL, or a path"))]
    directory: Name | None = Field(None, description=(
        "where the copy goes, relative to the directory narr runs in (left out: named after "
        "the URL)"))


class PushParams(Params):
    remote: Name | None = Field(None, description="the remote (left out: the branch's upstream, "
                                                  "else origin)")
    branch: Name | None = Field(None, description="the story line to send (left out: the current)")
    edits: bool | None = Field(None, description=(
        "send one's set-aside edits too (left out: git config narr.pushEdits, else yes)"))


class PullParams(Params):
    remote: Name | None = Field(None, description="the remote (left out: the branch's upstream, "
                                                  "else origin)")
    branch: Name | None = Field(None, description=(
        "the remote's story line to bring in (left out: the one the current branch follows)"))


def run_clone(where: WorldRepo | Path, p: CloneParams) -> CloneAnswer:
    from narrative.answer_models import CloneAnswer
    from narrative.engine.remote import clone, default_directory

    base = directory_of(where)
    url = p.url
    local = base / url
    if "://" not in url and local.exists():  # a path is read from where narr runs
        url = str(local.resolve())
    target = base / (p.directory if p.directory is not None else default_directory(url))
    return CloneAnswer.model_validate(clone(url, target).to_json())


def run_push(wr: WorldRepo, p: PushParams) -> PushAnswer:
    from narrative.answer_models import PushAnswer
    from narrative.engine.remote import push

    return PushAnswer.model_validate(push(wr, p.remote, p.branch, edits=p.edits).to_json())


def run_pull(wr: WorldRepo, p: PullParams) -> PullAnswer:
    from narrative.answer_models import PullAnswer
    from narrative.engine.remote import pull

    return PullAnswer.model_validate(pull(wr, p.remote, p.branch).to_json())


A = "narrative.answer_models"
CLONE = Operation(
    "clone", "Copy the world at a URL (or path) into a new directory, every writer's undone "
    "chains and set-aside edits included.",
    CloneParams, run_clone, f"{A}:CloneAnswer", "POST", "/api/clone", "clone", writes=True,
    idempotent=False, positional=("url", "directory"), needs_world=False,
    unserved="it makes a world where none is, with the caller's git credentials; a server "
             "serves the world it runs in")
PUSH = Operation(
    "push", "Send a story line (fast-forward only) and one's undone chains and set-aside edits "
    "to a remote the world names.",
    PushParams, run_push, f"{A}:PushAnswer", "POST", "/api/push", "push", writes=True,
    positional=("remote", "branch"))
PULL = Operation(
    "pull", "Fetch from a remote, then fast-forward or merge its story line into the current "
    "one (stopping at conflicts, as merge does).",
    PullParams, run_pull, f"{A}:PullAnswer", "POST", "/api/pull", "pull", writes=True,
    idempotent=False, positional=("remote", "branch"))
ROWS = (CLONE, PUSH, PULL)
