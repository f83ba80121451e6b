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

from narrative.errors import InvalidInputError, InvalidWorldError
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


# Diffusers that neither reach a network nor run a program: a world may pick them freely.
OFFLINE = frozenset({"rules", "explicit", "none"})


def default_name(wr: WorldRepo) -> str:
    """The diffuser an event runs when it names none.

    Yours (user config ``[diffuser] default``) first; else the world's
    ``narr.toml``, but a world may only pick an offline diffuser unless you have
    allowed more (``allow_world``): cloning someone's story must not send your
    events to your model, or run your program, without your say.
    """
    from narrative.userconfig import load_user_config

    settings = load_user_config().diffuser
    if settings.default:
        return settings.default
    name = wr.config.diffuser
    if name not in names():
        raise InvalidWorldError(
            f"narr.toml: [diffuser] default is {name!r}, which is not a diffuser; "
            f"known: {', '.join(names())}", hint="fix narr.toml, or pick one with --diffuser NAME")
    if name in OFFLINE or name in settings.allow_world:
        return name
    raise InvalidInputError(
        f"this world's narr.toml picks the {name!r} diffuser by default, which narr runs only "
        "when you choose it",
        hint=f"--diffuser {name} for one event, or allow it in your config "
             f"(~/.config/narr/config.toml: [diffuser] allow_world = [\"{name}\"])",
    )


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
