"""The one interface every diffuser implements, and the registry that names them.

A diffuser reads an event's words and the part of the world they concern and
*proposes* a delta; it never writes. The engine merges the proposal with the
user's explicit changes (explicit ones win on the same field), validates the
whole and records it. Diffusers are looked up by name: ``--diffuser NAME`` on
the command line, else ``[diffuser] default`` in ``narr.toml``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from narrative.errors import InvalidInputError
from narrative.model import Delta

if TYPE_CHECKING:
    from narrative.engine.pending import EventRequest
    from narrative.store.worldrepo import WorldRepo
    from narrative.world import WorldView


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


@runtime_checkable
class Diffuser(Protocol):
    name: str

    def propose(self, view: WorldView, request: EventRequest) -> Proposal: ...


class ExplicitOnly:
    """No proposal at all: only what the user spelled out with --set, --delta, ..."""

    name = "explicit"

    def propose(self, view: WorldView, request: EventRequest) -> Proposal:
        return Proposal()


Factory = Callable[["WorldRepo"], Diffuser]

_REGISTRY: dict[str, Factory] = {
    "explicit": lambda wr: ExplicitOnly(),
    "none": lambda wr: ExplicitOnly(),
}


def register(name: str, factory: Factory) -> None:
    _REGISTRY[name] = factory


def _load_builtins() -> None:
    """Import the built-in diffuser modules, each of which registers itself."""
    import importlib

    for module in ("rules", "llm", "exec"):
        try:
            importlib.import_module(f"narrative.diffusers.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"narrative.diffusers.{module}":
                raise


def names() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def get_diffuser(name: str, wr: WorldRepo) -> Diffuser:
    if name not in _REGISTRY:
        _load_builtins()
    factory = _REGISTRY.get(name)
    if factory is None:
        raise InvalidInputError(
            f"unknown diffuser {name!r}; known: {', '.join(names())}",
            hint="pick one with --diffuser NAME, or set [diffuser] default in narr.toml",
        )
    return factory(wr)
