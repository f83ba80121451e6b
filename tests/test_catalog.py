"""The catalog's one transaction, ``atomic()``, and its named rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from narrative.store.catalog import Catalog, Edge, NodeRow
from narrative.store.worldrepo import WorldRepo

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both


class Boom(Exception):
    pass


def events(cat: Catalog) -> set[str]:
    return {row.event_id for row in cat.find_events("")}


def test_a_block_that_raises_writes_nothing(tmp_path: Path) -> None:
    cat = Catalog(tmp_path / "catalog.sqlite")
    with pytest.raises(Boom), cat.atomic() as db:
        db.execute("INSERT INTO events VALUES ('e1', 'c1')")
        raise Boom
    assert events(cat) == set() and not cat.db.in_transaction
    with cat.atomic() as db:
        db.execute("INSERT INTO events VALUES ('e2', 'c2')")
    assert events(cat) == {"e2"}
    cat.close()


def test_nested_it_is_a_savepoint(tmp_path: Path) -> None:
    """An inner block that raises is undone alone; the outer one still commits, and a change
    made inside a larger one (remember_event inside a transaction) commits with it."""
    cat = Catalog(tmp_path / "catalog.sqlite")
    with cat.atomic() as db:
        db.execute("INSERT INTO events VALUES ('outer', 'c0')")
        with pytest.raises(Boom), cat.atomic():
            db.execute("INSERT INTO events VALUES ('inner', 'c1')")
            raise Boom
        cat.remember_event("joined", "c2")
        assert db.in_transaction
    assert events(cat) == {"outer", "joined"}
    with pytest.raises(Boom), cat.atomic():
        cat.remember_event("lost", "c3")
        raise Boom
    assert "lost" not in events(cat)
    cat.close()


def test_rows_are_named(world: Path) -> None:
    with WorldRepo.open(world) as wr:
        head = wr.head_commit()
        assert head is not None
        cat = wr.catalog_at(head.tree)
        row = next(r for r in cat.listing() if r.id == "lin-yuan")
        assert isinstance(row, NodeRow) and (row.layer, row.kind) == ("character", "person")
        edges = cat.outgoing(["lin-yuan"])
        assert edges and all(isinstance(e, Edge) and e.src == "lin-yuan" for e in edges)
        assert {n.id for n in cat.names_in_layer("character")} >= {"lin-yuan"}


def test_leaving_the_world_closes_it(world: Path) -> None:
    with pytest.raises(Boom), WorldRepo.open(world) as wr:
        assert wr.catalog.count() > 0  # opened
        raise Boom
    assert wr.catalog._db is None  # closed, though the block raised
    with WorldRepo.open(world) as again:
        assert again.head_commit() is not None  # the world opens again as usual


def test_reference_ending_and_clock_rows_are_named(world: Path) -> None:
    """The tables main's continuity work added (reference fields, ended names, the story
    clock) answer in named rows, and follow the world as the other tables do."""
    from narrative import api
    from narrative.model import ExpireOp, SetOp
    from narrative.store.catalog import Reference
    from narrative.store.catalog.story import EndedName, FieldWriter, TimeInForce

    with WorldRepo.open(world) as wr:
        api.event(wr, "Lin Yuan goes down to the ferry",
                  SetOp(target="lin-yuan", field="/state/location", value="ferry"),
                  story_time="Day 3, dusk")
        api.event(wr, "The crowd leaves the ferry", ExpireOp(target="ferry-crowd"))
        head = wr.head_commit()
        assert head is not None
        cat = wr.catalog_at(head.tree)
        at_ferry = cat.references_to(["ferry"], ["/state/location"])
        assert Reference("lin-yuan", "/state/location", "ferry") in at_ferry
        assert all(isinstance(r, Reference) for r in at_ferry)
        assert Reference("lin-yuan", "/state/location", "qingyun-gate") not in \
            cat.references_from(["lin-yuan"], ["/state/location"])

        graph = cat.graph
        graph.follow_chain(head)
        gone = graph.ended_by_names(head.id, [], ["ferry-crowd"])
        assert [(g.node, g.commit) for g in gone] == [("ferry-crowd", head.id)]
        assert isinstance(gone[0], EndedName)
        assert "ferry-crowd" in {row.node for row in graph.ended_names(head.id)}
        moved = graph.last_writer(head.id, "lin-yuan", "/state/location")
        assert isinstance(moved, FieldWriter) and (moved.value, moved.source) == ('"ferry"', "diffusion")
        clock = graph.story_time(head.id)
        assert isinstance(clock, TimeInForce) and clock.value == "Day 3, dusk"
        assert clock.commit == head.parent_ids[0]  # the second event kept the time it found
        assert "lin-yuan" in graph.ever_located(head.id, ["ferry"])


def _catalog_tree(root: Path) -> str | None:
    with WorldRepo.open(root) as wr:
        return wr.catalog.tree()


def _head_world(root: Path) -> str:
    with WorldRepo.open(root) as wr:
        head = wr.head_commit()
        assert head is not None
        return wr.world_tree_id(head.tree)


def test_a_server_brings_the_catalog_along_after_the_answer(world: Path) -> None:
    """Collected (as a server does while a command runs), the catalog's update waits; a
    reader that comes first still reads the moved world, and the work done later agrees."""
    from helpers import CLI

    from narrative.store import deferred

    narr = CLI(world)
    narr("event", "E0", "--set", "lin-yuan.state.mood=calm")
    assert _catalog_tree(world) == _head_world(world)  # nobody collects: done at once
    for args in [("event", "E1", "--set", "lin-yuan.state.mood=wary", "--unset",
                  "black-ring.state.colour"), ("reset", "HEAD~1")]:
        with deferred.collecting() as pending:
            narr(*args)
        assert len(pending) == 1
        moved = _head_world(world)
        assert _catalog_tree(world) != moved
        shown = narr.json("nodes")  # a reader of the catalog brings it along itself
        assert _catalog_tree(world) == moved
        pending[0]()  # the late work finds it done and agrees
        assert _catalog_tree(world) == moved
        assert narr.json("nodes") == shown
    with deferred.collecting() as pending:  # nobody reads before the late work
        narr("event", "E2", "--set", "lin-yuan.state.mood=sad", "--set", "lin-yuan.name=Lin Y")
    pending[0]()
    assert _catalog_tree(world) == _head_world(world)
    assert any(node["name"] == "Lin Y" for node in narr.json("nodes")["items"])



NODE_TABLES = ("nodes", "names", "edges", "refs", "node_text_src", "in_view")


def node_rows(path: Path) -> dict[str, object]:
    """Every row the world's nodes give the catalog, table by table, and its indexes."""
    import sqlite3

    db = sqlite3.connect(path)
    try:
        out: dict[str, object] = {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall())
                                  for t in NODE_TABLES}
        out["indexes"] = sorted(db.execute(
            "SELECT name, tbl_name, sql FROM sqlite_master WHERE type='index'").fetchall())
        return out
    finally:
        db.close()


def test_a_catalog_made_from_nothing_is_the_one_events_kept(world: Path) -> None:
    """Rows written node by node as events go (creations, relations, names, an end) and rows
    written in bulk from the tree alone, indexes made again after them: the same catalog."""
    from helpers import CLI

    narr = CLI(world)
    narr("event", "Wei Lan arrives", "--diffuser", "explicit", "--create", _node_file(world))
    narr("event", "Dusk", "--diffuser", "explicit", "--set", "lin-yuan.state.location=wei-lan",
         "--relate", "lin-yuan:trusts:wei-lan", "--set", "wei-lan.aliases=[\"魏兰\"]")
    narr("event", "The ring is gone", "--diffuser", "explicit", "--expire", "black-ring")
    narr("nodes")
    path = world / ".git" / "narr" / "catalog.sqlite"
    followed = node_rows(path)
    assert followed["indexes"] and any(r[0] == "wei-lan" for r in followed["nodes"])  # type: ignore[union-attr]
    for p in path.parent.glob("catalog.sqlite*"):
        p.unlink()
    narr("nodes")
    assert node_rows(path) == followed


def test_a_rebuild_cut_short_leaves_the_catalog_it_had(world: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from narrative.store.catalog import nodes

    with WorldRepo.open(world) as wr:
        head = wr.head_commit()
        assert head is not None
        wr.catalog_at(head.tree)
        path = wr.narr_dir / "catalog.sqlite"
        before = node_rows(path)
        wr.catalog.db.execute("DELETE FROM meta WHERE key='tree'")  # forgotten: made again

        def boom(self: object, db: object) -> None:
            raise Boom

        monkeypatch.setattr(nodes._Rows, "write", boom)
        with pytest.raises(Boom):
            wr.catalog.sync(wr.repo, wr.world_tree_id(head.tree), wr.config.layout)
        assert node_rows(path) == before


def _node_file(world: Path) -> str:
    import json

    spec = world.parent / "wei-lan.json"
    spec.write_text(json.dumps({"id": "wei-lan", "name": "Wei Lan", "layer": "character",
                                "kind": "healer", "always_in_view": True,
                                "state": {"location": "ferry"},
                                "relations": {"owes": {"lin-yuan": {"what": "a boat"}}}}),
                    encoding="utf-8")
    return str(spec)
