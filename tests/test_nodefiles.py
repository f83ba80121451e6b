"""The one node writer (``narr new``, ``narr edit``, ``PUT /api/nodes/ID``): validated, whole,
canonical, at the path its id and layer give, never over a file someone else just made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from narrative.errors import ConflictError, InvalidInputError, InvalidWorldError
from narrative.nodefile import NodeDict, dump
from narrative.store.nodefiles import write_node
from narrative.store.worldrepo import WorldRepo
from tests.helpers import CLI, snapshot

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both


def lamp(**changes: Any) -> NodeDict:
    node: dict[str, Any] = {"id": "oil-lamp", "name": "Oil Lamp", "layer": "item", "kind": "lamp",
                            "aliases": [], "summary": "", "lifecycle": "permanent",
                            "created_by_event": None, "traits": {}, "state": {}, "relations": {}}
    node.update(changes)
    return node  # type: ignore[return-value]


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "world").rglob(".narr-edit-*"))


def test_the_path_comes_from_the_id_and_the_layer(flat_world: Path) -> None:
    with WorldRepo.open(flat_world) as wr:
        path = write_node(wr, lamp(state={"lit": True}), create=True)
    assert path == "world/item/oil-lamp.json"
    data = (flat_world / path).read_bytes()
    assert data == dump(lamp(state={"lit": True}))  # canonical: what narr commits
    assert leftovers(flat_world) == []


def test_a_sharded_world_gets_its_bucket(tmp_path: Path) -> None:
    from narrative.engine.init import init_world
    from narrative.ids import node_path

    init_world(tmp_path / "w", sample=True, layout="sharded")
    with WorldRepo.open(tmp_path / "w") as wr:
        assert write_node(wr, lamp()) == node_path("oil-lamp", "item", "sharded")


@pytest.mark.parametrize("bad", ["../escape", "a/b", "", "x" * 300])
def test_an_unsafe_id_writes_nothing(flat_world: Path, bad: str) -> None:
    before = snapshot(flat_world)
    with WorldRepo.open(flat_world) as wr, pytest.raises(InvalidInputError):
        write_node(wr, lamp(id=bad))
    assert snapshot(flat_world) == before
    assert not (flat_world / "escape.json").exists()


def test_an_invalid_node_writes_nothing(flat_world: Path) -> None:
    before = snapshot(flat_world)
    with WorldRepo.open(flat_world) as wr, pytest.raises(InvalidWorldError):
        write_node(wr, lamp(lifecycle="forever"))
    assert snapshot(flat_world) == before
    assert leftovers(flat_world) == []


def test_a_new_node_never_replaces_a_file_made_meanwhile(flat_world: Path) -> None:
    mine = flat_world / "world/item/oil-lamp.json"
    mine.write_text('{"made": "by someone else"}', encoding="utf-8")
    with WorldRepo.open(flat_world) as wr, pytest.raises(ConflictError, match="made meanwhile"):
        write_node(wr, lamp(), create=True)
    assert json.loads(mine.read_text("utf-8")) == {"made": "by someone else"}
    assert leftovers(flat_world) == []


def test_replacing_swaps_the_whole_file(flat_world: Path) -> None:
    with WorldRepo.open(flat_world) as wr:
        write_node(wr, lamp(state={"lit": False}), create=True)
        write_node(wr, lamp(state={"lit": True}))
    assert json.loads((flat_world / "world/item/oil-lamp.json").read_text("utf-8"))["state"] == {
        "lit": True}
    assert leftovers(flat_world) == []


def test_narr_new_racing_another_writer_is_a_clear_conflict(
        flat_world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file appearing between choosing the id and writing it is refused, not overwritten
    (and not a traceback)."""
    from narrative.engine import new

    chosen = new.free_id

    def racing(*args: Any, **kwargs: Any) -> str:
        node_id = chosen(*args, **kwargs)
        (flat_world / f"world/item/{node_id}.json").write_text("{}", encoding="utf-8")
        return node_id

    monkeypatch.setattr(new, "free_id", racing)
    result = CLI(flat_world)("new", "item", "Oil Lamp", expect=14)
    assert "made meanwhile" in result.stderr
    assert (flat_world / "world/item/oil-lamp.json").read_text("utf-8") == "{}"
