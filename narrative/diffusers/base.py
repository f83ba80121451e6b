"""The registry that names the diffusers, and the one that proposes nothing.

The interface a diffuser implements (:class:`~narrative.delta.proposal.Diffuser`)
lives with the event pipeline it feeds. Diffusers are looked up by name:
``--diffuser NAME`` on the command line, else ``[diffuser] default`` in
``narr.toml`` (within what your own config allows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from narrative.delta.proposal import Diffuser, Proposal
from narrative.errors import InvalidInputError, InvalidWorldError

if TYPE_CHECKING:
    from narrative.delta.request import EventRequest
    from narrative.delta.world import World
    from narrative.store import WorldRepo

__all__ = ["OFFLINE", "Diffuser", "ExplicitOnly", "Proposal", "default_name", "get_diffuser", "names",
           "register"]


class ExplicitOnly:
    """No proposal at all: only what the user spelled out with --set, --delta, ..."""

    name = "explicit"

    def propose(self, world: World, request: EventRequest) -> Proposal:
        return Proposal()


Factory = Callable[["WorldRepo"], Diffuser]

_REGISTRY: dict[str, Factory] = {
    "explicit": lambda wr: ExplicitOnly(),
    "none": lambda wr: ExplicitOnly(),
}


def register(name: str, factory: Factory) -> None:
    """Make ``factory`` the diffuser called ``name`` (a plug-in's own diffuser).

    ``factory(world)`` is called with the open world (a :class:`WorldRepo`) each time an event
    asks for the diffuser, and returns it; a factory that cannot take that one argument is
    refused here rather than failing at the first event."""
    import inspect

    from narrative.errors import InvalidInputError

    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(f"a diffuser needs a name, not {name!r}")
    if not callable(factory):
        raise InvalidInputError(f"diffuser {name!r}: the factory {factory!r} is not callable",
                                hint="register(name, lambda world: MyDiffuser())")
    try:
        inspect.signature(factory).bind(None)
    except TypeError:
        raise InvalidInputError(
            f"diffuser {name!r}: the factory must take one argument, the open world",
            hint="register(name, lambda world: MyDiffuser())") from None
    except ValueError:
        pass  # a builtin without a readable signature: trusted as it is
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
    if name not in _REGISTRY:  # the built-in modules load only for a name not registered yet
        _load_builtins()
    if name not in _REGISTRY:
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
    """The diffuser registered as ``name``, made for this world (its settings read)."""
    if name not in _REGISTRY:
        _load_builtins()
    factory = _REGISTRY.get(name)
    if factory is None:
        raise InvalidInputError(
            f"unknown diffuser {name!r}; known: {', '.join(names())}",
            hint="pick one with --diffuser NAME, or set [diffuser] default in narr.toml",
        )
    return factory(wr)
