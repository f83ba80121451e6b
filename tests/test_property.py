"""Property tests: random stories of events and hand edits keep every promise.

After every step: ``narr check`` passes; the last event satisfies
``tree(parent) + edits + diffusions == tree(event)`` (checked here with an
applier of its own, not narr's); every hand edit is either still pending or
recorded; the git index equals HEAD's tree; and a refused event changed nothing.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pygit2
import pytest
from helpers import rel_path, snapshot
from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st

from narrative.delta.request import EventRequest
from narrative.engine.check import check
from narrative.engine.event import run_event
from narrative.engine.status import status
from narrative.errors import NarrError
from narrative.ids import LAYERS
from narrative.model import (
    CreateOp,
    Delta,
    ExpireOp,
    Node,
    RelateOp,
    SetOp,
    UnrelateOp,
    UnsetOp,
)
from narrative.store import records
from narrative.store.worldrepo import WorldRepo

pytestmark = pytest.mark.both_layouts  # the layout is the store's: prove both

EXPLICIT = ["--diffuser", "explicit"]  # exactly the changes a test spells out
SAMPLE_IDS = ["lin-yuan", "su-qing", "old-zhou", "black-ring", "jade-token", "ferry", "autumn-rain",
              "temple-bell", "paper-lantern", "ferry-crowd"]
NEW_IDS = ["n-one", "n-two"]  # created by events
HAND_IDS = ["h-one", "h-two"]  # created by hand
NEVER = "nobody"  # never exists
IDS = SAMPLE_IDS + NEW_IDS + HAND_IDS + [NEVER]
FORBIDDEN_HEADS = {"traits", "id", "layer", "created_by_event", "bogus"}

GOOD_FIELDS = ["/state/mood", "/state/a/b", "/state/mood/x", "/name", "/summary", "/kind",
               "/lifecycle", "/aliases", "/aliases/-", "/relations/knows/lin-yuan"]
BAD_FIELDS = ["/traits/speech", "/id", "/layer", "/bogus", "/created_by_event"]
VALUES = st.one_of(st.sampled_from(["calm", "storm", "", "雨"]), st.integers(-2, 3), st.none(),
                   st.booleans(), st.sampled_from(["permanent", "scene", "event"]),
                   st.just({"k": 1}), st.just([1, "two"]))
REL_TYPES = ["knows", "holds", "fears"]

PERMANENT = ["lin-yuan", "su-qing", "old-zhou", "black-ring", "jade-token", "ferry"]
SCALARS = st.one_of(st.sampled_from(["calm", "storm", "", "雨"]), st.integers(-2, 3), st.none(),
                    st.booleans())

# ops that are valid on the sample world as long as their nodes live ...
good_ops = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(PERMANENT), st.sampled_from(["/state/mood", "/state/hp"]),
              SCALARS),
    st.tuples(st.just("set"), st.sampled_from(PERMANENT), st.just("/summary"),
              st.sampled_from(["", "changed"])),
    st.tuples(st.just("unset"), st.sampled_from(PERMANENT), st.sampled_from(["/state/mood", "/state/hp"])),
    st.tuples(st.just("relate"), st.sampled_from(PERMANENT), st.sampled_from(REL_TYPES),
              st.sampled_from(PERMANENT)),
    st.tuples(st.just("unrelate"), st.sampled_from(PERMANENT), st.sampled_from(REL_TYPES),
              st.sampled_from(PERMANENT)),
    st.tuples(st.just("create"), st.sampled_from(NEW_IDS), st.sampled_from(LAYERS),
              st.sampled_from(["permanent", "scene", "event"])),
    st.tuples(st.just("expire"), st.sampled_from(SAMPLE_IDS + NEW_IDS + HAND_IDS)),
)
# ... and anything at all, now and then one that must be refused
ids = st.one_of(st.sampled_from(SAMPLE_IDS + NEW_IDS + HAND_IDS), st.just(NEVER))
any_ops = st.one_of(
    st.tuples(st.just("set"), ids, st.sampled_from(GOOD_FIELDS + BAD_FIELDS), VALUES),
    st.tuples(st.just("unset"), ids, st.sampled_from(GOOD_FIELDS + BAD_FIELDS)),
    st.tuples(st.just("relate"), ids, st.sampled_from(REL_TYPES), ids),
    st.tuples(st.just("unrelate"), ids, st.sampled_from(REL_TYPES), ids),
    st.tuples(st.just("create"), st.sampled_from(NEW_IDS + HAND_IDS + SAMPLE_IDS[:2]),
              st.sampled_from(LAYERS), st.sampled_from(["permanent", "scene", "event"])),
    st.tuples(st.just("expire"), ids),
    st.tuples(st.just("unsafe"), st.sampled_from(["../x", "a/b", "", "UP"])),
)
op_specs = st.one_of(good_ops, good_ops, good_ops, any_ops)
event_steps = st.tuples(st.just("event"), st.lists(op_specs, max_size=4), st.booleans())
actions = st.one_of(
    event_steps, event_steps, event_steps,
    st.tuples(st.just("hand-modify"), st.sampled_from(SAMPLE_IDS + NEW_IDS + HAND_IDS),
              st.sampled_from(["mood", "weather", "count"]), VALUES),
    st.tuples(st.just("hand-relate"), st.sampled_from(SAMPLE_IDS[:4]), st.sampled_from(SAMPLE_IDS)),
    st.tuples(st.just("hand-create"), st.sampled_from(HAND_IDS), st.sampled_from(LAYERS),
              st.sampled_from(["permanent", "event"])),
    st.tuples(st.just("hand-delete"), st.sampled_from(SAMPLE_IDS + NEW_IDS + HAND_IDS)),
)


# --- an applier of our own, to referee narr's records ------------------------------------------


def _tokens(ptr: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in ptr[1:].split("/")]


def apply_records(nodes: dict[str, Any], changes: list[dict[str, Any]], what: str) -> None:
    """Apply recorded changes, checking each ``old_value`` against what is there."""
    for ch in changes:
        target, field = ch["target"], ch["field"]
        if field == "":
            assert ("old_value" in ch) == (nodes.get(target) is not None), (what, ch)
            if "old_value" in ch:
                assert ch["old_value"] == nodes[target], (what, ch)
            nodes[target] = copy.deepcopy(ch["new_value"]) if "new_value" in ch else None
            continue
        node = nodes.get(target)
        assert node is not None, (what, ch)
        *path, last = _tokens(field)
        cur = node
        for token in path:
            cur = cur.setdefault(token, {}) if isinstance(cur, dict) else cur[int(token)]
        present = isinstance(cur, dict) and last in cur
        assert ("old_value" in ch) == present, (what, ch)
        if present:
            assert json.dumps(cur[last], sort_keys=True) == json.dumps(ch["old_value"], sort_keys=True), (
                what, ch)
        if "new_value" in ch:
            cur[last] = copy.deepcopy(ch["new_value"])
        else:
            del cur[last]
        rels = node.get("relations", {})
        for rtype in [t for t, targets in rels.items() if not targets]:
            del rels[rtype]  # an edge's type exists only while it has edges


def tree_nodes(repo: pygit2.Repository, tree: pygit2.Tree) -> dict[str, Any]:
    from narrative.store.trees import subtree, walk_blobs

    world = subtree(tree, "world")
    if world is None:
        return {}
    out = {}
    for _, oid in walk_blobs(repo, world, "world"):
        node = json.loads(repo[oid].read_raw())
        out[node["id"]] = node
    return out


def same_world(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def norm(nodes: dict[str, Any]) -> str:
        return json.dumps({k: v for k, v in nodes.items() if v is not None}, sort_keys=True)

    return norm(a) == norm(b)


# --- the world under test ----------------------------------------------------------------------


class Story:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.pending: dict[str, Any] = {}  # id -> what the user left in the working tree (None: deleted)

    def open(self) -> WorldRepo:
        return WorldRepo.open(self.root)

    def head_nodes(self) -> tuple[str, dict[str, Any]]:
        repo = pygit2.Repository(str(self.root))
        try:
            head = repo.head.peel(pygit2.Commit)
            return str(head.id), tree_nodes(repo, head.tree)
        finally:
            repo.free()

    def live(self) -> dict[str, Any]:
        """The world as the user sees it: HEAD plus hand edits."""
        _, nodes = self.head_nodes()
        nodes.update(self.pending)
        return {k: v for k, v in nodes.items() if v is not None}

    def file_of(self, node_id: str, layer: str) -> Path:
        return self.root / rel_path(self.root, node_id, layer)

    # --- hand edits -----------------------------------------------------------------------

    def write(self, node: dict[str, Any]) -> None:
        path = self.file_of(node["id"], node["layer"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(node, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                        encoding="utf-8")
        self.pending[node["id"]] = copy.deepcopy(node)

    def hand(self, action: tuple[Any, ...]) -> None:
        live = self.live()
        kind = action[0]
        if kind == "hand-modify":
            _, node_id, key, value = action
            if node_id in live:
                node = copy.deepcopy(live[node_id])
                node["state"][key] = value
                self.write(node)
        elif kind == "hand-relate":
            _, src, dst = action
            if src in live and dst in live and src != dst:
                node = copy.deepcopy(live[src])
                node["relations"].setdefault("trusts", {})[dst] = {"by": "hand"}
                self.write(node)
        elif kind == "hand-create":
            _, node_id, layer, lifecycle = action
            if node_id not in live:
                self.write(Node(id=node_id, name=node_id.title(), layer=layer,
                                lifecycle=lifecycle, state={"made": "by hand"}).model_dump(mode="json"))
        elif kind == "hand-delete":
            _, node_id = action
            if node_id in live:
                node = live[node_id]
                self.file_of(node_id, node["layer"]).unlink()
                self.pending[node_id] = None
                # relations pointing at it would now dangle: take them out by hand too
                for other in live.values():
                    rels = other.get("relations", {})
                    if any(node_id in targets for targets in rels.values()) and other["id"] != node_id:
                        fixed = copy.deepcopy(other)
                        for targets in fixed["relations"].values():
                            targets.pop(node_id, None)
                        fixed["relations"] = {t: d for t, d in fixed["relations"].items() if d}
                        self.write(fixed)
        else:
            raise AssertionError(kind)

    # --- events -----------------------------------------------------------------------------

    def delta(self, specs: list[tuple[Any, ...]]) -> tuple[Delta, bool]:
        """The delta, and whether it is certainly invalid (so it must be refused)."""
        live = self.live()
        ops: list[Any] = []
        invalid = False
        for spec in specs:
            kind = spec[0]
            if kind == "set":
                _, target, field, value = spec
                ops.append(SetOp(op="set", target=target, field=field, value=value))
                invalid |= field.split("/")[1] in FORBIDDEN_HEADS or target == NEVER
            elif kind == "unset":
                _, target, field = spec
                ops.append(UnsetOp(op="unset", target=target, field=field))
                invalid |= field.split("/")[1] in FORBIDDEN_HEADS or target == NEVER
            elif kind == "relate":
                _, src, rtype, dst = spec
                ops.append(RelateOp(op="relate", source=src, type=rtype, target=dst))
                invalid |= src == NEVER or dst == NEVER or ("expire", dst) in specs
            elif kind == "unrelate":
                _, src, rtype, dst = spec
                ops.append(UnrelateOp(op="unrelate", source=src, type=rtype, target=dst))
                invalid |= src == NEVER
            elif kind == "create":
                _, node_id, layer, lifecycle = spec
                ops.append(CreateOp(op="create", node=Node(id=node_id, name=node_id.title(),
                                                           layer=layer, lifecycle=lifecycle)))
                invalid |= node_id in live
            elif kind == "expire":
                _, target = spec
                ops.append(ExpireOp(op="expire", target=target))
                invalid |= target == NEVER
            elif kind == "unsafe":  # past the model's validation, as a buggy program might
                ops.append(SetOp.model_construct(op="set", target=spec[1], field="/state/a", value=1))
                invalid = True
        return Delta.model_construct(ops=ops, narrative_text=None, timestamp=None,
                                     close_scene=False, causes=[]), invalid

    def event(self, n: int, specs: list[tuple[Any, ...]], close_scene: bool,
              must_record: bool = False) -> None:
        delta, invalid = self.delta(specs)
        before = snapshot(self.root)
        head_before, nodes_before = self.head_nodes()
        wr = self.open()
        try:
            run_event(wr, EventRequest.model_construct(
                content=f"Event {n}", delta=delta, narrative_text=None, timestamp=None,
                close_scene=close_scene, diffuser=None, causes=[]), keep_failed=False)
            refused = None
        except NarrError as exc:
            refused = exc
        finally:
            wr.close()
        if refused is not None:
            assert not must_record, refused
            note("event refused" + (" (certainly invalid)" if invalid else ""))
            assert refused.exit_code == 12, refused
            assert snapshot(self.root) == before, "a refused event changed something"
            return
        assert not invalid, f"an invalid delta was accepted: {specs}"
        note("event recorded" + (" with hand edits" if self.pending else "")
             + (f" and {len(specs)} ops" if specs else ""))
        head, nodes_after = self.head_nodes()
        repo = pygit2.Repository(str(self.root))
        try:
            commit = repo.get(head)
            assert isinstance(commit, pygit2.Commit)
            assert [str(p) for p in commit.parent_ids] == [head_before]
            record = records.decode(commit.message)
        finally:
            repo.free()
        assert record is not None and record.content == f"Event {n}"
        data = records.record_json(record)
        # every hand edit is recorded: the parent plus the record's edits is what the user left
        edited = copy.deepcopy(nodes_before)
        apply_records(edited, data["edits"], "edits")
        expected = copy.deepcopy(nodes_before)
        expected.update(copy.deepcopy(self.pending))
        assert same_world(edited, expected), "the record's edits are not the hand edits made"
        # tree(parent) + edits + diffusions == tree(event)
        apply_records(edited, data["diffusions"], "diffusions")
        assert same_world(edited, nodes_after), "parent + edits + diffusions != event"
        self.pending.clear()

    # --- after every step ----------------------------------------------------------------------

    def invariants(self) -> None:
        wr = self.open()
        try:
            report = check(wr)
            assert report.ok, [str(p) for p in report.problems] + report.worktree_problems
            st_ = status(wr).to_json()
        finally:
            wr.close()
        assert st_["problems"] == []
        # what narr sees as hand edits is exactly what was edited by hand
        _, head = self.head_nodes()
        seen = copy.deepcopy(head)
        apply_records(seen, st_["edits"], "status")
        expected = copy.deepcopy(head)
        expected.update(copy.deepcopy(self.pending))
        assert same_world(seen, expected), "a hand edit is missing from narr status"
        # the index is HEAD's tree: git diff --cached is empty
        repo = pygit2.Repository(str(self.root))
        try:
            assert len(repo.index.diff_to_tree(repo.head.peel(pygit2.Commit).tree)) == 0
        finally:
            repo.free()


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from narrative.engine.init import init_world

    base = tmp_path_factory.mktemp("templates")
    out = {}
    for layout in ("flat", "sharded"):
        init_world(base / layout, sample=True, layout=layout)
        out[layout] = base / layout
    return out


@pytest.mark.slow
@settings(max_examples=25)
@given(steps=st.lists(actions, min_size=1, max_size=7))
def test_random_stories_keep_every_promise(templates: dict[str, Path], tmp_path: Path,
                                           layout: str, steps: list[tuple[Any, ...]]) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path)) / "world"
    shutil.copytree(templates[layout], root, symlinks=True)
    try:
        story = Story(root)
        for n, action in enumerate(steps, 1):
            if action[0] == "event":
                story.event(n, action[1], action[2])
            else:
                story.hand(action)
            story.invariants()
        # and a final event always records whatever hand edits are left (they are all valid)
        story.event(len(steps) + 1, [], False, must_record=True)
        story.invariants()
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


def test_expiring_a_node_created_by_hand_removes_its_file(world: Path) -> None:
    from helpers import CLI, write_node

    narr = CLI(world)
    rel = rel_path(world, "h-one", "character")
    write_node(world, rel, {"id": "h-one", "name": "H One", "layer": "character"})
    rec = narr.json("event", "A beat", *EXPLICIT, "--expire", "h-one")
    assert [(c["target"], "old_value" in c, "new_value" in c) for c in rec["edits"]] == [
        ("h-one", False, True)]
    assert ("h-one", "") in {(c["target"], c["field"]) for c in rec["diffusions"]}
    assert narr.json("status")["edits"] == []
    assert not (world / rel).exists()
