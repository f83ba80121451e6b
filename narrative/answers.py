"""Answers: every result narr gives a program is a pydantic model, and the model is all of it.

The CLI's ``--json``, the HTTP API and the MCP tools answer a JSON object whose
``"schema"`` field names its shape (``"narr.status/1"``; a list comes as
``{"schema": ..., "items": [...]}``), so a program can tell which shape it got, and the same
operation answers the same JSON through each transport. That JSON, the published JSON Schema
(``schemas/answers/``), the OpenAPI and MCP output schemas and the Python type a program
reads are all one class: an :class:`Answer` (its parts are :class:`Shape`s). A change of
shape bumps the class's ``VERSION`` (tests/test_answer_shapes.py fails until it does); an old
number is never reused for a new shape.

Objects are closed (no key the model does not name). A key that may be left out is a field
marked :data:`MAYBE`: absent from the JSON unless it was set (so ``null`` and "absent" stay
two things, as they are in a node), typed ``X | None`` for Python.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, ClassVar, Generic, Self, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")


def _absent(schema: dict[str, Any]) -> None:
    """A key left out has no value to default to: it is absent."""
    schema.pop("default", None)


def _absent_not_null(schema: dict[str, Any]) -> None:
    """...and absent is what stands for "none": the key is never ``null``."""
    _absent(schema)
    branches = schema.pop("anyOf", None)
    if isinstance(branches, list):
        kept = [b for b in branches if b != {"type": "null"}]
        schema.update(kept[0] if len(kept) == 1 else {"anyOf": kept})


MAYBE: Any = Field(json_schema_extra=_absent_not_null)
"""``field: Annotated[X | None, MAYBE] = None``: a key the answer may leave out."""
MAYBE_OR_NULL: Any = Field(json_schema_extra=_absent)
"""A key the answer may leave out, and that may be ``null`` when it is there."""


class Shape(BaseModel):
    """A JSON object of an answer: closed, every key required but the MAYBE ones, which are
    left out unless they were set.

    That rule (no other default) is what lets the JSON come straight from pydantic's
    serializer: a key not set is a MAYBE key, so leaving out what was not set leaves out
    exactly the absent keys (a test holds every shape to it). Parts of an answer that are
    models of their own (a node, an op) come from JSON, so what they hold is what was set.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        """The object as JSON data (what ``--json`` prints, without the answer's ``schema``)."""
        data = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        assert isinstance(data, dict)
        return data

    def __getitem__(self, key: str) -> Any:
        """A key of the JSON object, read as from a dict (``answer["content"]``)."""
        name = self._names().get(key)
        if name is None or (name not in self.model_fields_set
                            and _is_maybe(type(self).model_fields[name])):
            raise KeyError(key)  # not a key of this object, or one left out
        return getattr(self, name)

    def get(self, key: str, default: Any = None) -> Any:
        """A key of the JSON object, or ``default`` where the object has none (as a dict's)."""
        try:
            return self[key]
        except KeyError:
            return default

    @classmethod
    def _names(cls) -> dict[str, str]:
        """Field name by JSON key (an alias where a key is a Python keyword: ``from``)."""
        return {(info.alias or name): name for name, info in cls.model_fields.items()}


def _is_maybe(info: Any) -> bool:
    return info.json_schema_extra in (_absent, _absent_not_null)


class Answer(Shape):
    """A whole answer: its ``NAME`` and ``VERSION`` make the ``schema`` field it is sent with."""

    NAME: ClassVar[str]
    VERSION: ClassVar[int] = 1

    @classmethod
    def schema_name(cls) -> str:
        """``narr.NAME/VERSION``."""
        return f"narr.{cls.NAME}/{cls.VERSION}"

    def answer(self) -> dict[str, Any]:
        """The answer as every transport sends it: ``{"schema": ..., ...}``."""
        return {"schema": self.schema_name(), **self.to_json()}


class Items(Answer, Generic[T]):
    """A list answer, ``{"schema": ..., "items": [...]}``, that a program reads as the list;
    ``next`` is where the next page starts, when a page was asked for and more items follow."""

    items: list[T]
    next: Annotated[str | None, MAYBE] = None

    def page(self, limit: int | None, cursor: str | None) -> Self:
        """The items from ``cursor`` (the ``next`` of the page before), at most ``limit`` of them."""
        start = 0
        if cursor:
            if not cursor.isdigit() or int(cursor) > len(self.items):
                from narrative.errors import InvalidInputError

                raise InvalidInputError(f"the arguments: /cursor: {cursor!r} is no page of this "
                                        "list (give the next of the page before)")
            start = int(cursor)
        if limit is None and not start:
            return self
        stop = len(self.items) if limit is None else start + limit
        page = self.model_copy(update={"items": self.items[start:stop]})
        if stop < len(self.items):
            page.next = str(stop)
        return page

    def __iter__(self) -> Iterator[T]:  # type: ignore[override]  # the items, not the fields
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __eq__(self, other: object) -> bool:
        """Equal to a list of the same items, as a list answer reads as its list."""
        if isinstance(other, list):
            return self.items == other
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a model with a list is not hashable anyway

    @overload
    def __getitem__(self, key: int) -> T: ...

    @overload
    def __getitem__(self, key: str) -> Any: ...

    def __getitem__(self, key: int | str) -> Any:
        """An item by its place (``answer[0]``), or a key of the JSON (``answer["items"]``)."""
        return self.items[key] if isinstance(key, int) else super().__getitem__(key)


def classes(kind: Any) -> tuple[type[Answer], ...]:
    """The answer classes ``kind`` names: a class, or a union of them (an event or a commit)."""
    return tuple(getattr(kind, "__args__", None) or (kind,))


def schema_name(kind: Any) -> str:
    """``narr.NAME/VERSION`` of the answer ``kind`` (a union's members share theirs)."""
    names = {cls.schema_name() for cls in classes(kind)}
    assert len(names) == 1, names
    return names.pop()


VERSIONS: dict[str, int] = {
    # the operations of narrative.api.OPERATIONS: the CLI, HTTP and MCP alike
    "status": 2, "list_nodes": 2, "get_node": 1, "log": 2, "show": 2, "branches": 2,
    "chains": 2, "why": 2, "history": 2, "search": 1, "brief": 2, "threads": 1, "audit": 1,
    "event": 2, "reset": 1, "revert": 2, "replay": 2, "edit_node": 1, "chapter": 1,
    # answers only the CLI gives
    "adopt": 1, "branch_created": 1, "branch_deleted": 1, "remote_branches": 2,
    "chain_dropped": 1, "chapters": 2, "check": 1, "clone": 1, "codex": 1, "conflicts": 1, "doctor": 1,
    "edits": 1, "edit_restored": 1, "edit_dropped": 2, "error": 1, "export_written": 1,
    "failed": 2, "failed_dropped": 1, "gc": 1, "get_value": 1, "graph": 1, "graph_sizes": 1,
    "connect": 1, "import": 2, "init": 1, "merge": 2, "merge_aborted": 1, "new": 1,
    "path": 1, "pull": 2, "push": 2, "reflog": 1, "resolve": 1, "server": 3, "story": 2,
    "studio": 1, "switch": 1, "vault": 2,
    # the studio page's own reads over HTTP
    "studio_world": 2, "studio_events": 1, "studio_lines": 1, "studio_diffusers": 1,
    "studio_node": 2, "studio_names": 1, "studio_problems": 1, "studio_where": 1,
    "studio_manuscript": 2, "studio_mentions": 1,
}


def schema(name: str) -> str:
    """``narr.NAME/VERSION`` of the answer called ``name``."""
    return f"narr.{name}/{VERSIONS[name]}"


def answer(schema: str, value: Any) -> dict[str, Any]:
    """``value`` (a result with ``to_json``, a dict or a list) named by its schema."""
    if hasattr(value, "to_json"):
        value = value.to_json()
    if isinstance(value, list):
        return {"schema": schema, "items": value}
    assert isinstance(value, dict), type(value)
    return {"schema": schema, **value}
