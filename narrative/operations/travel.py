"""Rows that move through the story's time: reset, revert, replay, and the chains a reset leaves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from narrative.operations import (
    MAX_CONTENT,
    MAX_STRING,
    NodeName,
    NoParams,
    Operation,
    Params,
    Rev,
    Short,
    node_id,
)

if TYPE_CHECKING:
    from narrative.answer_models import ChainDroppedAnswer
    from narrative.engine.chains import Chains
    from narrative.engine.event import RevertResult
    from narrative.engine.replay import ReplayResult
    from narrative.engine.reset import ResetResult
    from narrative.store import WorldRepo


class ResetParams(Params):
    rev: Rev | None = None
    before: NodeName | None = Field(None, description="back to just before this node was created")
    chapter: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(
        None, description="back to just before this chapter began")
    keep_edits: bool = False
    hard: bool = False


class RevertParams(Params):
    rev: Rev
    content: Annotated[str, Field(max_length=MAX_CONTENT)] | None = None


class ReplayParams(Params):
    chain: Annotated[str, Field(min_length=1, max_length=MAX_STRING,
                                description="the chain's number or name (as chains lists them)")]
    reuse: bool = Field(False, description="reuse the recorded deltas instead of diffusing again")
    diffuser: Short | None = None
    again: bool = Field(False, description="replay every event, even those the story holds an "
                                           "earlier replay of (told twice)")
    to: Short | None = Field(None, description="replay the chain only up to this event (its id)")


class DropChainParams(Params):
    which: Annotated[str, Field(min_length=1, max_length=MAX_STRING,
                                description="the chain's number or name (as chains lists them)")]
    force: bool = Field(False, description=(
        "drop it even when some of its events are kept by no other ref (they are lost)"))


def run_reset(wr: WorldRepo, p: ResetParams) -> ResetResult:
    from narrative.engine.reset import reset

    before = node_id(wr, p.before, context="before") if p.before is not None else None
    return reset(wr, p.rev, before=before, keep_edits=p.keep_edits, hard=p.hard,
                 chapter=p.chapter)


def run_revert(wr: WorldRepo, p: RevertParams) -> RevertResult:
    from narrative.engine.revert import revert

    return revert(wr, p.rev, content=p.content)


def run_replay(wr: WorldRepo, p: ReplayParams) -> ReplayResult:
    from narrative.engine.replay import replay

    return replay(wr, p.chain, reuse=p.reuse, diffuser_name=p.diffuser, again=p.again, to=p.to)


def run_chains(wr: WorldRepo, p: NoParams) -> Chains:
    from narrative.engine.chains import list_chains

    return list_chains(wr)


def run_drop_chain(wr: WorldRepo, p: DropChainParams) -> ChainDroppedAnswer:
    from narrative.answer_models import ChainDroppedAnswer
    from narrative.engine.replay import drop_chain

    return ChainDroppedAnswer.model_validate(drop_chain(wr, p.which, force=p.force))


E = "narrative.engine"
DROP_CHAIN = Operation(
    "drop_chain", "Delete an abandoned chain; refused while it alone keeps events (force: drop "
    "them too).", DropChainParams, run_drop_chain, "narrative.answer_models:ChainDroppedAnswer",
    "POST", "/api/chains/drop", "chains drop", positional=("which",), writes=True,
    destructive=True, idempotent=False)
ROWS = (
    Operation("chains", "Abandoned chains of events (left by reset), which replay can bring back.",
              NoParams, run_chains, f"{E}.chains:Chains", "GET", "/api/chains", "chains"),
    Operation("reset", "Move the story back to rev (or to just before a node was made); the undone "
              "events stay as a chain for replay.", ResetParams, run_reset, f"{E}.reset:ResetResult",
              "POST", "/api/reset", "reset", writes=True, destructive=True, idempotent=False,
              positional=("rev",)),
    Operation("revert", "Record an event that undoes an earlier one.",
              RevertParams, run_revert, f"{E}.event:RevertResult", "POST", "/api/revert", "revert",
              positional=("rev",), writes=True, idempotent=False),
    Operation("replay", "Run an abandoned chain again on top of the story.",
              ReplayParams, run_replay, f"{E}.replay:ReplayResult", "POST", "/api/replay", "replay",
              positional=("chain",), writes=True, idempotent=False),
    DROP_CHAIN,
)
