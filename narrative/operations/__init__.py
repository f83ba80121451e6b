"""The world's operations as data: one row per use case, the one door every transport uses.

Each row (:class:`Operation`) names a use case, what it takes (a :class:`Params` model) and what
it answers (an :class:`~narrative.answers.Answer` model), whether it writes, where it sits in
the HTTP API and which ``narr`` command runs it. The HTTP API (:mod:`narrative.serve.http`),
the MCP server (:mod:`narrative.serve.mcp`), the OpenAPI document, the library's functions
(:mod:`narrative.calls`, written from the rows) and the CLI's commands (held to the rows by a
test) are all made from :data:`OPERATIONS`, so no two of them can disagree on a name, an
argument or an answer. Arguments are validated strictly (a boolean is a JSON boolean, a count a
JSON integer; an unknown argument is refused) and every violation is an
:class:`~narrative.errors.InvalidInputError` naming the field. Every answer is a JSON object
whose ``"schema"`` field names its shape and version (``"narr.brief/1"``).

The rows are kept by family (``reads``, ``graphs``, ``story``, ``chapters``, ``travel``,
``lines``, ``nodes``, ``upkeep``, ``remotes``, ``lore``) and each row loads its use case only
when it runs, so a command that asks one row imports one family's argument models and nothing
of the engine it does not use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from narrative.errors import Door, InvalidInputError, NotFoundError, Step, validation_error

if TYPE_CHECKING:
    from narrative.answers import Answer
    from narrative.store import WorldRepo

MAX_CONTENT = 256 * 1024
"""Characters in an event's words or text given through an operation (the CLI's own limit aside)."""
MAX_STRING = 4096
"""Characters in a name, revision, query or field argument: none is longer in a real world."""
MAX_LIMIT = 1_000_000

Short = Annotated[str, Field(max_length=MAX_STRING)]
NodeName = Annotated[str, Field(min_length=1, max_length=MAX_STRING,
                                description="a node's id, name or alias")]
Rev = Annotated[str, Field(min_length=1, max_length=MAX_STRING,
                           description="a revision: an event id, a commit, HEAD~N, a branch")]
At = Annotated[str | None, Field(max_length=MAX_STRING,
                                 description="read the world as it was at this revision")]
Limit = Annotated[int | None, Field(ge=1, le=MAX_LIMIT, description="at most this many items")]
Cursor = Annotated[str | None, Field(max_length=64, description=(
    "where the page starts: the ``next`` of the page before (left out: the first page)"))]


class Params(BaseModel):
    """Arguments of an operation: strict JSON types, no unknown field."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class NoParams(Params):
    pass


class Paged(Params):
    """Arguments of a read that returns many items: a page of them (``limit``, ``cursor``)."""

    limit: Limit = None
    cursor: Cursor = None


A = TypeVar("A", bound="Answer")
if TYPE_CHECKING:  # (typing's own TypeVar takes a default from Python 3.13)
    from typing_extensions import TypeVar as DefaultingTypeVar

    P = DefaultingTypeVar("P", bound=Params, default=Params, covariant=True)
else:
    P = TypeVar("P", bound=Params, covariant=True)


@dataclass(frozen=True)
class Operation(Generic[A, P]):
    """One thing a program can ask of a world.

    ``answer`` names the class of its answer (``module:Class``, or two joined by ``|``);
    ``writes`` sends it to the world's one writer; ``destructive`` (moves or drops story a
    user wrote) and ``idempotent`` are what an MCP client is told so it can ask its user
    first. ``method`` and ``path`` place it in the HTTP API; fields of ``params`` named in the
    path are taken from it, the rest from the query (a read) or the JSON body (a write);
    ``body`` names the one field a write's whole body fills instead (a hand edit's node).
    ``cli`` is the command that runs it (``failed retry``), whose options a test holds to
    ``params``; ``positional`` the arguments the library's function takes by position.
    ``run`` is typed with its row's arguments model (``P``) and answer (``A``); a row asked for
    by name is any row, so the typed way in is the row's library function (:mod:`narrative.calls`).

    ``needs_world`` False: it runs on a directory that need not hold a world (``init`` and
    ``clone`` make one there, ``doctor`` says why one will not open), and ``run`` is given
    that directory, or the open world whose root it is when a server of that world runs it.
    ``unserved``: why HTTP and MCP do not offer it (None: they do).
    """

    name: str
    summary: str
    params: type[P]
    run: Callable[[WorldRepo, P], A]
    answer_of: str
    method: str
    path: str
    cli: str
    writes: bool = False
    destructive: bool = False
    idempotent: bool = True
    body: str | None = None
    positional: tuple[str, ...] = ()
    cli_only: Mapping[str, str] = field(default_factory=dict)
    """Options of the command that are its own spelling of an argument (``--set`` of ``ops``)
    or only change how it prints, each with what it is: what the test of the CLI allows."""
    needs_world: bool = True
    unserved: str | None = None

    @property
    def served(self) -> bool:
        """Whether HTTP and MCP offer it."""
        return self.unserved is None

    @property
    def answer(self) -> Any:
        """The answer's class (a union of classes where it is one of two: show)."""
        from importlib import import_module

        kinds = []
        for spec in self.answer_of.split("|"):
            module, _, name = spec.strip().partition(":")
            kinds.append(getattr(import_module(module), name))
        union = kinds[0]
        for kind in kinds[1:]:
            union = union | kind
        return union

    @property
    def schema(self) -> str:
        """``narr.NAME/VERSION`` of the answer."""
        from narrative.answers import schema_name

        return schema_name(self.answer)

    @property
    def answer_name(self) -> str:
        """The answer's name (``retry`` answers as ``event`` does)."""
        return self.schema.removeprefix("narr.").split("/")[0]

    @property
    def pages(self) -> bool:
        """Whether it answers a page of many items (``limit``, ``cursor``)."""
        return issubclass(self.params, Paged)

    def parse(self, arguments: Mapping[str, Any] | None, source: str = "the arguments",
              lax: bool = False) -> Params:
        """The arguments validated, or one :class:`InvalidInputError` naming the field.
        ``lax``: from a query string, where numbers and booleans arrive as text."""
        return parse_params(self.params, arguments, source=source, lax=lax)

    def answer_to(self, wr: WorldRepo | Path, params: Params) -> A:
        """Run on an open world (a directory, for a row that needs none): the answer (a page
        of it, for a paged read)."""
        assert isinstance(params, self.params), (self.name, type(params).__name__)  # parse's
        if isinstance(wr, Path):
            if self.needs_world:
                raise TypeError(f"{self.name} runs on an open world, not on a directory")
            return self._answer(wr, params)
        with wr.command():  # a world kept open follows git's settings from here
            return self._answer(wr, params)

    def _answer(self, wr: WorldRepo | Path, params: Params) -> A:
        found = self.run(wr, params)  # type: ignore[arg-type]  # a directory: needs_world False
        if isinstance(params, Paged):
            from narrative.answers import Items

            assert isinstance(found, Items), self.name
            paged: A = found.page(params.limit, params.cursor)
            return paged
        return found

    def call(self, wr: WorldRepo | Path, params: Params, door: Door = "cli") -> dict[str, Any]:
        """Run on an open world (or directory, as :meth:`answer_to`): the versioned answer, as
        JSON, what it advises worded for ``door``."""
        return self.answer_to(wr, params).answer(door)


def parse_params(model: type[Params], arguments: Mapping[str, Any] | None, *, source: str,
                 lax: bool = False) -> Params:
    from narrative.nodefile import MAX_DEPTH, json_problem

    data = dict(arguments or {})
    for key, value in data.items():  # name the argument, as a validation error does
        problem = json_problem({key: value}, MAX_DEPTH + 8)
        if problem:
            where = f"/{key}" if json_problem(key) is None else f"/{key!r}"
            raise InvalidInputError(f"{source}: {where}: {problem}")
    try:
        return model.model_validate(data, strict=not lax)
    except ValidationError as exc:
        raise validation_error(exc, source) from None


def directory_of(where: WorldRepo | Path) -> Path:
    """The directory a row that needs no world runs in: the one given, or the open world's root."""
    return where if isinstance(where, Path) else where.root


def node_id(wr: WorldRepo, text: str, *, must_exist: bool = False, context: str | None = None) -> str:
    """The id of the node ``text`` names (its id, a name or an alias), as the CLI takes it."""
    from narrative.engine.naming import Names

    return Names(wr).resolve(text, must_exist=must_exist, context=context)


FAMILIES = ("reads", "graphs", "story", "chapters", "travel", "lines", "nodes", "upkeep", "remotes",
            "lore")
"""The modules of this package that hold rows (``ROWS``), in the order the API documents them."""


_TABLE: list[tuple[Operation[Any], ...]] = []


def table() -> tuple[Operation[Any], ...]:
    """:data:`OPERATIONS`, made on first use: a command asks its own row, not the table."""
    if not _TABLE:
        from importlib import import_module

        rows: list[Operation[Any]] = []
        for family in FAMILIES:
            rows.extend(import_module(f"{__name__}.{family}").ROWS)
        names = [row.name for row in rows]
        assert len(set(names)) == len(names), "two rows of one name"
        _TABLE.append(tuple(rows))
    return _TABLE[0]


def operation(name: str) -> Operation[Any]:
    """The operation called ``name``; :class:`NotFoundError` naming the known ones otherwise."""
    for row in table():
        if row.name == name:
            return row
    raise NotFoundError(f"no operation {name!r}",
                        hint="the operations are " + ", ".join(r.name for r in table()))


def __getattr__(name: str) -> Any:
    if name == "OPERATIONS":
        return table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


OPERATIONS: tuple[Operation[Any], ...]
"""Every operation a program can ask of a world, in the order the API documents them."""


def _word(step: Step, door: Door) -> str:
    from narrative.operations.wording import word

    return word(step, door)


def _word_steps() -> None:
    """Hints' steps are worded from the table once it is loaded (:mod:`.wording`, itself
    loaded when a step is first worded)."""
    from narrative.errors import set_wording

    set_wording(_word)


_word_steps()
