"""The library's functions are the operations' rows: one function per row, with the row's name,
its arguments (by position as the row says, the rest by keyword) and its answer, written from
the table so that no function and no row can drift apart."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

import narrative as narr
from narrative.answers import classes
from narrative.operations import OPERATIONS, Operation
from narrative.operations.writer import HAND_WRITTEN, PATH, source

ROOT = Path(__file__).resolve().parent.parent


def test_the_functions_are_written_from_the_rows() -> None:
    assert (ROOT / PATH).read_text("utf-8") == source(OPERATIONS), (
        f"{PATH} is stale: run python tools/names_table.py")


KEPT: dict[str, str] = {
    "get_value": "narrative.engine.nodes", "doctor": "narrative.engine.doctor",
    "connect": "narrative.engine.graphs", "clone": "narrative.engine.remote",
    "push": "narrative.engine.remote", "pull": "narrative.engine.remote",
    "export_lorebook": "narrative.engine.lorebook", "export_card": "narrative.engine.lorebook"}
"""Rows whose name the library had for a function of its own before the row (it answers the
value, or the engine's result): ``narrative.NAME`` stays that function, and the row's is
``narrative.calls.NAME``."""


def _function(row: Operation[Any]) -> Any:
    if row.name in KEPT:
        import narrative.calls

        assert narr._FACE[row.name] == KEPT[row.name], row.name
        return getattr(narrative.calls, row.name)
    function = getattr(narr, row.name)
    assert narr._FACE[row.name] == HAND_WRITTEN.get(row.name, "narrative.calls"), row.name
    return function


@pytest.mark.parametrize("row", OPERATIONS, ids=lambda row: row.name)
def test_every_row_is_a_function_with_its_arguments_and_answer(row: Operation[Any]) -> None:
    function = _function(row)
    params = list(inspect.signature(function).parameters.values())
    assert params[0].name == "world", row.name
    fields = row.params.model_fields
    if row.name in HAND_WRITTEN:  # more than the row takes, but every argument of it
        names = {p.name for p in params}
        assert set(fields) <= names, (row.name, set(fields) - names)
        return
    by_position = [p.name for p in params[1:] if p.kind is p.POSITIONAL_OR_KEYWORD]
    by_keyword = [p.name for p in params[1:] if p.kind is p.KEYWORD_ONLY]
    assert by_position == list(row.positional), row.name
    assert set(by_keyword) == set(fields) - set(row.positional), row.name
    for p in params[1:]:
        assert (p.default is p.empty) == fields[p.name].is_required(), (row.name, p.name)
    returns = inspect.signature(function).return_annotation  # as written: the answer's classes
    assert set(returns.split(" | ")) == {kind.__name__ for kind in classes(row.answer)}, row.name
    said = " ".join((inspect.getdoc(function) or "").split())
    assert said.startswith(" ".join(row.summary.split())), row.name


def test_every_answer_of_a_row_is_a_name_of_the_library() -> None:
    """A program annotates what it reads with the answer's class: ``narr.CheckAnswer``."""
    for row in OPERATIONS:
        for kind in classes(row.answer):
            assert getattr(narr, kind.__name__, None) is kind, (row.name, kind.__name__)


def test_a_function_answers_as_its_row_does_through_every_door(tmp_path: Path) -> None:
    """A node named by its name, a revision, a tuple where the row takes a list: the function's
    answer is the row's, the one HTTP and MCP give for the same arguments."""
    narr.init_world(tmp_path / "w", sample=True)
    with narr.open_world(tmp_path / "w") as world:
        narr.event(world, "Lin Yuan walks to the ferry", *narr.ops.move("lin-yuan", "ferry"))
        why = narr.why(world, "Lin Yuan", "state.location", at="HEAD")
        row = narr.operation("why")
        assert why.answer() == row.call(world, row.parse(
            {"node": "Lin Yuan", "field": "state.location", "at": "HEAD"}))
        assert why.value == "ferry" and why.node == "lin-yuan"

        everyone = narr.list_nodes(world)
        page = narr.list_nodes(world, limit=2)
        assert [n.id for n in page] == [n.id for n in everyone][:2] and page.next == "2"
        rest = narr.list_nodes(world, limit=1000, cursor=page.next)
        assert [n.id for n in page] + [n.id for n in rest] == [n.id for n in everyone]

        pack = narr.brief(world, "the ferry", focus=("Lin Yuan",), budget=800)
        assert "lin-yuan" in pack.focus and pack.budget == 800
        assert [e.content for e in narr.log(world, limit=1)] == ["Lin Yuan walks to the ferry"]
        assert narr.get_node(world, "lin-yuan").node.state["location"] == "ferry"


def test_a_functions_bad_argument_is_the_rows_typed_error(tmp_path: Path) -> None:
    narr.init_world(tmp_path / "w", sample=True)
    with narr.open_world(tmp_path / "w") as world:
        head = world.head_id()
        with pytest.raises(narr.InvalidInputError, match="/limit"):
            narr.search(world, "ferry", limit="5")  # type: ignore[arg-type]
        with pytest.raises(narr.InvalidInputError, match="/budget"):
            narr.brief(world, budget=0)
        with pytest.raises(narr.InvalidInputError, match="/rev"):
            narr.log(world, 2)  # type: ignore[arg-type]
        with pytest.raises(narr.NotFoundError):
            narr.get_node(world, "nobody")
        # a value left out and a null value are two things: null is a value to resolve with
        with pytest.raises(narr.InvalidInputError, match="/take: say which"):
            narr.resolve(world, "lin-yuan", "state.mood")
        with pytest.raises(narr.NarrError) as null:
            narr.resolve(world, "lin-yuan", "state.mood", value=None)
        assert "/take" not in null.value.message
        assert world.head_id() == head


def _shapes(kind: Any, seen: set[type]) -> None:
    """``kind`` and every model its fields hold, into ``seen``."""
    from pydantic import BaseModel

    for arg in typing.get_args(kind) or (kind,):
        if typing.get_args(arg):
            _shapes(arg, seen)
        elif isinstance(arg, type) and issubclass(arg, BaseModel) and arg not in seen:
            seen.add(arg)
            for info in arg.model_fields.values():
                _shapes(info.annotation, seen)


def test_no_field_of_an_answer_is_any() -> None:
    """What an answer holds is typed to its shape; where the world decides (a node's values,
    an object of them) it is ``JSON``, never ``Any``: a program's type checker sees it all."""
    seen: set[type] = set()
    for row in OPERATIONS:
        _shapes(row.answer, seen)
    loose = []
    for model in seen:
        for klass in model.__mro__:
            for name, written in vars(klass).get("__annotations__", {}).items():
                if name in model.model_fields and "Any" in str(written):
                    loose.append(f"{model.__module__}.{model.__qualname__}.{name}: {written}")
    assert sorted(set(loose)) == []
