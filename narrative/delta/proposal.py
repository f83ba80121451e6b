"""What a diffuser is and what it returns.

A diffuser reads an event's words and the part of the world they concern and
*proposes* a delta; it never writes. The pipeline arbitrates and screens the
proposal, merges it with the user's explicit changes (explicit ones win on the
same field) and validates the whole in a draft.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from narrative.model import Delta, Op

if TYPE_CHECKING:
    from narrative.delta.request import EventRequest
    from narrative.delta.world import World


class HeldChange(BaseModel):
    """A change a diffuser found but did not propose: the words are under a structure it does
    not know. ``narr event --accept N`` (the same words again) applies it."""

    n: int
    rule: str | None = None
    source: str | None = None
    words: str
    reason: str
    ops: list[Op] = Field(default_factory=list)


class Origin(BaseModel):
    """Which rule, and which of the event's words, made one proposed operation."""

    op: Op
    rule: str | None = None
    source: str | None = None
    words: str


class Proposal(BaseModel):
    """What a diffuser returns: a delta, plus what a reader of the decision needs."""

    delta: Delta = Field(default_factory=Delta)
    narrative_text: str | None = None
    causes: list[str] = Field(default_factory=list)
    notes: list[str] = Field(
        default_factory=list,
        description="Decisions worth printing: rules that fired, duplicates merged, refusals.",
    )
    raw_reply: str | None = Field(default=None, description="A model's raw answer, kept for --retry.")
    held: list[HeldChange] = Field(
        default_factory=list,
        description="Changes held back, not proposed: each says why, and --accept N applies it.")
    origins: list[Origin] = Field(
        default_factory=list,
        description="Where operations came from (a rule and its words), for a reader who asks "
                    "change by change; a diffuser that cannot say leaves it empty.")


@runtime_checkable
class Diffuser(Protocol):
    name: str

    def propose(self, world: World, request: EventRequest) -> Proposal: ...


def merge(proposed: Delta, explicit: Delta) -> Delta:
    """One delta from a diffuser's proposal and the user's explicit changes.

    The explicit operations come last, so on the same field they win.
    """
    return Delta(
        ops=[*proposed.ops, *explicit.ops],
        narrative_text=explicit.narrative_text or proposed.narrative_text,
        timestamp=explicit.timestamp or proposed.timestamp,
        close_scene=explicit.close_scene or proposed.close_scene,
        causes=list(dict.fromkeys([*proposed.causes, *explicit.causes])),
    )
