"""The library's own functions: what a program calls that is more than one use case's function.

Everything here is reached through the package (``narrative.open_world``, ``narrative.event``
...), with the rest of the library's names (the package's table).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from narrative.errors import InvalidInputError

if TYPE_CHECKING:
    from pathlib import Path

    from narrative.answers import Answer
    from narrative.engine.chains import Chain, Chains
    from narrative.engine.chapters import ChapterInfo
    from narrative.engine.event import EventResult
    from narrative.engine.replay import ReplayResult
    from narrative.model import Op
    from narrative.store import WorldRepo


def open_world(path: str | os.PathLike[str] = ".", *, lock_timeout: float | None = None,
               watch: bool = False) -> WorldRepo:
    """The world containing ``path`` (searching upwards, as git does); close it when done, or
    use it as a context manager (``with narr.open_world(path) as world: ...``).

    ``lock_timeout``: seconds a write waits for another writer before :class:`BusyError`
    (default: ``NARR_LOCK_TIMEOUT``, else a few seconds). ``watch``: keep a file watcher on
    the world while it is open, as a server does, so that each event looks only at the files
    touched since the last one instead of every file (for a program that keeps a world open
    for many events: a notebook, an agent; it costs a thread and the watches)."""
    from narrative.store import WorldRepo

    world = WorldRepo.open(path)
    if lock_timeout is not None:
        if lock_timeout < 0:
            world.close()
            raise InvalidInputError(f"lock_timeout must be 0 or more seconds, not {lock_timeout}")
        world.lock.timeout = lock_timeout
    if watch:
        world.watch()
    return world


def list_chains(world: WorldRepo) -> Chains:
    """Abandoned chains (left by :func:`reset`), newest first."""
    from narrative.engine.chains import list_chains as listing

    return listing(world)


def replay(world: WorldRepo, chain: Chain | str | int, *, reuse: bool = False,
           diffuser: str | None = None, again: bool = False, to: str | None = None,
           diffuser_name: str | None = None) -> ReplayResult:
    """Run ``chain`` (a :class:`Chain`, its number or its name) again on top of HEAD, up to
    and including event ``to`` if given; ``reuse`` the recorded deltas instead of diffusing,
    ``diffuser`` (or its older spelling ``diffuser_name``) to diffuse them with another one.
    Events the story already holds a replay of are left out unless ``again``. The ``replay``
    row of every other door, which takes the chain by its number or name."""
    from narrative.engine.chains import Chain
    from narrative.engine.replay import ReplayResult

    which = chain.selector if isinstance(chain, Chain) else str(chain)
    found = run_row(world, "replay", chain=which, reuse=reuse, diffuser=diffuser or diffuser_name,
                    again=again, to=to)
    assert isinstance(found, ReplayResult)
    return found


def list_chapters(world: WorldRepo, rev: str | None = None) -> list[ChapterInfo]:
    """The chapters of the story line (ending at HEAD, or ``rev``), oldest first, those a merge
    brought included (each with the branch it came from)."""
    from narrative.engine.chapters import chapters_on_line

    return chapters_on_line(world, rev, merged=True)


def event(world: WorldRepo, content: str | None = None, *ops: Op | Sequence[Op],
          set: Iterable[str] = (), unset: Iterable[str] = (), relate: Iterable[str] = (),
          unrelate: Iterable[str] = (), expire: Iterable[str] = (), diffuser: str | None = None,
          story_time: str | None = None, text: str | None = None, close_scene: bool = False,
          causes: Iterable[str] = (), accept: Iterable[int] = (), render: bool = False,
          large: bool = False, dry_run: bool = False, retry: bool = False) -> EventResult:
    """Record one event: ``content`` in words, ``ops`` the changes you spell out yourself
    (each an op, ``SetOp(...)``, or a list of them, as the :mod:`narrative.ops` helpers
    return), or in the command line's forms (``set=["lin-yuan.state.mood=calm"]``, a node
    named by its id, name or alias). The world's diffuser (:func:`default_diffuser`, the rules
    unless ``narr.toml`` says otherwise) adds what the words say; ``diffuser="explicit"``
    records only the changes spelt out. The same arguments as the ``event`` operation of every
    other door (:mod:`narrative.operations.story`); on an error nothing changes and the
    request is kept for a retry (``retry=True``, with no words or changes: the newest failed
    event runs again, as the ``retry`` operation runs it).
    """
    from narrative.engine.event import EventResult

    if retry:
        if content is not None or ops or any((set, unset, relate, unrelate, expire, story_time, text,
                                                close_scene, causes, accept, render, large)):
            from narrative.errors import InvalidInputError

            raise InvalidInputError("a retry takes no words, changes or settings of its own: it "
                                    "runs the kept event as it was asked")
        rerun = run_row(world, "retry", dry_run=dry_run, diffuser=diffuser)
        assert isinstance(rerun, EventResult)
        return rerun
    found = run_row(world, "event", content=content, ops=_flat_ops(ops), set=list(set),
                    unset=list(unset), relate=list(relate), unrelate=list(unrelate),
                    expire=list(expire), diffuser=diffuser, story_time=story_time, text=text,
                    close_scene=close_scene, causes=list(causes), accept=list(accept),
                    render=render, large=large, dry_run=dry_run)
    assert isinstance(found, EventResult)
    return found


def run_row(world: WorldRepo | Path, name: str, /, **arguments: Any) -> Answer:
    """The answer of the row called ``name`` on ``world``, with the arguments a caller gave:
    those left at their default stay out (as a door leaves out what it was not sent), a
    sequence is a list; the rest the row checks as every door's arguments are checked."""
    from narrative.fields import ABSENT
    from narrative.operations import operation

    row = operation(name)
    fields = row.params.model_fields
    given: dict[str, Any] = {}
    for key, value in arguments.items():
        info = fields[key]
        default = () if info.default_factory is not None else info.default
        if value is ABSENT:
            continue  # (the default of an argument that may be any JSON, null too)
        if info.annotation is not Any and (
                value is default or (value is None and info.is_required())
                or (type(value) is type(default) and value == default)
                or (info.default_factory is not None and value == [])):
            continue
        given[key] = list(value) if isinstance(value, tuple) else value
    found: Answer = row.answer_to(world, row.parse(given))
    return found


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
