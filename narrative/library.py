"""The library's own functions: what a program calls that is more than one use case's function.

Everything here is reached through the package (``narrative.open_world``, ``narrative.event``
...), with the rest of the library's names (the package's table).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from narrative.errors import InvalidInputError

if TYPE_CHECKING:
    from narrative.engine.chains import Chain, Chains
    from narrative.engine.event import EventResult
    from narrative.engine.replay import ReplayResult
    from narrative.model import Op
    from narrative.store import WorldRepo


def open_world(path: str | os.PathLike[str] = ".", *, lock_timeout: float | None = None) -> WorldRepo:
    """The world containing ``path`` (searching upwards, as git does); close it when done, or
    use it as a context manager (``with narr.open_world(path) as world: ...``).

    ``lock_timeout``: seconds a write waits for another writer before :class:`BusyError`
    (default: ``NARR_LOCK_TIMEOUT``, else a few seconds)."""
    from narrative.store import WorldRepo

    world = WorldRepo.open(path)
    if lock_timeout is not None:
        if lock_timeout < 0:
            world.close()
            raise InvalidInputError(f"lock_timeout must be 0 or more seconds, not {lock_timeout}")
        world.lock.timeout = lock_timeout
    return world


def list_chains(world: WorldRepo) -> Chains:
    """Abandoned chains (left by :func:`reset`), newest first."""
    from narrative.engine.chains import list_chains as listing

    return listing(world)


def replay(world: WorldRepo, chain: Chain | str | int, *, reuse: bool = False,
           diffuser_name: str | None = None, to: str | None = None,
           again: bool = False) -> ReplayResult:
    """Run ``chain`` (a :class:`Chain`, its number or its name) again on top of HEAD, up to
    and including event ``to`` if given; ``reuse`` the recorded deltas instead of diffusing.
    Events the story already holds a replay of are left out unless ``again``."""
    from narrative.engine import replay as use_case
    from narrative.engine.chains import Chain

    which = chain.selector if isinstance(chain, Chain) else str(chain)
    return use_case.replay(world, which, reuse=reuse, diffuser_name=diffuser_name, to=to,
                          again=again)


def event(world: WorldRepo, content: str, *ops: Op | Sequence[Op], diffuser: str | None = None,
          close_scene: bool = False, timestamp: str | None = None, causes: Iterable[str] = (),
          dry_run: bool = False, when: datetime | None = None) -> EventResult:
    """Record one event: ``content`` in words, ``ops`` the changes you spell out yourself.

    Each of ``ops`` is an op (``SetOp(...)``) or a list of them, as the :mod:`narrative.ops`
    helpers return. ``diffuser`` names what turns the words into further changes
    (``"rules"``, ``"llm"``, ...; :func:`default_diffuser` is what ``narr event`` would
    pick); without it only ``ops`` change the world. On an error nothing changes and
    the request is kept for :func:`retry`.
    """
    from pydantic import ValidationError

    from narrative.delta.request import EventRequest
    from narrative.engine.event import run_event
    from narrative.errors import validation_error
    from narrative.model import Delta

    try:
        request = EventRequest(content=content, delta=Delta(ops=_flat_ops(ops)),
                               diffuser=diffuser, close_scene=close_scene, timestamp=timestamp,
                               causes=list(causes))
    except ValidationError as exc:
        raise validation_error(exc, "event") from None
    return run_event(world, request, dry_run=dry_run, when=when)


def _flat_ops(ops: tuple[Any, ...]) -> list[Op]:
    """The ops a caller passed, lists (a helper's answer) spread and dicts (an op's JSON) read:
    anything else is named here, by its place, rather than deep in a validation report."""
    from pydantic import TypeAdapter, ValidationError

    from narrative.errors import validation_error
    from narrative.model import Op, _Op

    flat: list[Op] = []
    for i, given in enumerate(ops):
        items = given if isinstance(given, list | tuple) else [given]
        for item in items:
            if isinstance(item, dict):
                try:
                    item = TypeAdapter(Op).validate_python(item)
                except ValidationError as exc:
                    raise validation_error(exc, f"op {i + 1}") from None
            if not isinstance(item, _Op):
                raise InvalidInputError(
                    f"op {i + 1}: {type(item).__name__} {str(item)[:60]!r} is not an op",
                    hint="build ops with narr.SetOp(...), narr.RelateOp(...) or the narr.ops "
                         "helpers (which return lists: pass them as they are)")
            flat.append(item)  # type: ignore[arg-type]
    return flat
