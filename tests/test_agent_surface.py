"""The Python surface as an agent builder meets it: the example agent runs and passes
``mypy --strict`` importing only ``narrative``; ops are built with either field spelling and
the story's conventions; every mistake is a NarrError; results are typed and exported."""

from __future__ import annotations

import inspect
import subprocess
import sys
import time
from pathlib import Path

import pytest

import narrative as narr
from narrative import api

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "examples" / "agent.py"
READER = ROOT / "examples" / "reader.py"

# What a type checker sees of the answers a program reads most: the classes and their fields,
# never Any (a node's values are JSON: the union of its kinds, not Any).
JSON = "dict[str, dict[str, ...] | list[...] | str | int | float | bool | None]"
REVEALED = {
    "narr.brief(world)": "narrative.engine.brief.Brief",
    "narr.brief(world).items": "list[narrative.engine.brief.BriefItem]",
    "narr.brief(world).items[0].event": "narrative.engine.brief.BriefEvent | None",
    "narr.status(world).edits": "list[narrative.shapes.Change]",
    "narr.status(world).edits[0].new_value": JSON,
    "narr.status(world).head": "narrative.shapes.Record | narrative.shapes.PlainCommit | None",
    "narr.why(world, 'a', 'b')": "narrative.engine.why.WhyResult",
    "narr.why(world, 'a', 'b').value": JSON,
    "narr.why(world, 'a', 'b').event": "narrative.shapes.EventRef | None",
    "narr.list_nodes(world)": "narrative.engine.nodes.NodeList",
    "narr.list_nodes(world)[0]": "narrative.engine.nodes.NodeRow",
    "narr.list_nodes(world).items": "list[narrative.engine.nodes.NodeRow]",
    "narr.get_node(world, 'a').node.state": JSON,
    "narr.get_value(world, 'a', 'b')": JSON,
    "narr.log(world)[0]": "narrative.shapes.Record | narrative.shapes.PlainCommit",
    "narr.show(world)": "narrative.engine.log.ShownEvent | narrative.engine.log.ShownCommit",
    "narr.check(world).ok": "bool",
}


def test_the_example_agent_runs(tmp_path: Path) -> None:
    narr.init_world(tmp_path / "w", sample=True)
    out = subprocess.run([sys.executable, str(AGENT), str(tmp_path / "w")], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0].startswith("brief: ")
    assert "event 'Lin Yuan hands Su Qing the black ring': lin-yuan /relations/holds/black-ring, " \
           "su-qing /relations/holds/black-ring, black-ring /state/holder" in out
    assert "before the walk Lin Yuan was at qingyun-gate" in out
    assert "the ring is with su-qing since 'Lin Yuan hands Su Qing the black ring'" in out
    assert "reset: 2 events undone" in out and "replayed chain 1: 2 events" in out
    assert [line.split(":")[0] for line in out[-3:]] == [
        "refused (InvalidOpError, exit 12)", "refused (NotFoundError, exit 11)",
        "refused (NotFoundError, exit 11)"]


def test_the_example_reader_runs(tmp_path: Path) -> None:
    narr.init_world(tmp_path / "w", sample=True)
    node = tmp_path / "w/world/character/lin-yuan.json"
    node.write_text(node.read_text("utf-8").replace('"mood": "anxious"', '"mood": "calm"'), "utf-8")
    out = subprocess.run([sys.executable, str(READER), str(tmp_path / "w")], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[:2] == ["status: on main, at 'Genesis: The Black Ring of Qingyun', 1 hand edits",
                       "  edited lin-yuan /state/mood: 'calm'"]
    assert "nodes: 5 characters, the first Elder Mo (elder-mo)" in out
    assert "a page of nodes: ['autumn-rain', 'black-ring'], next 2" in out
    assert out[4].startswith("brief: ") and out[5].startswith("  about lin-yuan, ferry")
    assert "why: Lin Yuan is at 'qingyun-gate' since 'Genesis: The Black Ring of Qingyun'" in out
    assert out[-1] == "get_node: Lin Yuan in world/character/lin-yuan.json, mood 'calm'"


@pytest.mark.slow
def test_the_example_agent_passes_mypy_strict_and_mistakes_do_not(tmp_path: Path) -> None:
    bad = tmp_path / "bad_agent.py"
    bad.write_text("import narrative as narr\n"
                   "world = narr.open_world('.')\n"
                   "narr.brief(world, 5)\n"
                   "status: int = narr.status(world)\n"
                   "narr.SetOp(target='lin-yuan', value=1)\n", encoding="utf-8")
    probe = tmp_path / "probe.py"
    probe.write_text("import narrative as narr\n"
                     "def probe(world: narr.WorldRepo) -> None:\n"
                     + "".join(f"    reveal_type({expr})\n" for expr in REVEALED), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(AGENT),
                           str(READER), str(bad), str(probe)], capture_output=True, text=True,
                          cwd=ROOT)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert errors and all(line.startswith(str(bad)) for line in errors), proc.stdout
    assert len(errors) == 3, proc.stdout  # each mistake found: the names are typed, not Any
    revealed = [line.split('Revealed type is "', 1)[1].rstrip('"').replace("builtins.", "")
                for line in proc.stdout.splitlines() if "Revealed type is" in line]
    assert len(revealed) == len(REVEALED), proc.stdout
    for (expr, expected), seen in zip(REVEALED.items(), revealed, strict=True):
        assert seen.startswith(expected) and "Any" not in seen, (expr, seen)


def test_ops_take_either_field_spelling_and_mistakes_are_narr_errors() -> None:
    assert narr.SetOp(target="lin-yuan", field="state.location", value="ferry").field == "/state/location"
    assert narr.UnsetOp(target="lin-yuan", field="/state/mood").field == "/state/mood"
    with pytest.raises(narr.InvalidInputError, match=r"^SetOp: /field: Field required"):
        narr.SetOp(target="lin-yuan", value=1)  # type: ignore[call-arg]
    with pytest.raises(narr.InvalidInputError, match=r"^RelateOp: /type: "):
        narr.RelateOp(source="a", type="has spaces", target="b")
    with pytest.raises(narr.InvalidInputError, match="not a JSON pointer"):
        narr.SetOp(target="lin-yuan", field="state/mood", value=1)  # a relative pointer stays wrong


def test_the_conventions_as_ops() -> None:
    give = narr.ops.give("black-ring", "lin-yuan", "su-qing")
    assert [op.model_dump() for op in give] == [
        {"op": "unrelate", "source": "lin-yuan", "type": "holds", "target": "black-ring"},
        {"op": "relate", "source": "su-qing", "type": "holds", "target": "black-ring", "attrs": {}},
        {"op": "set", "target": "black-ring", "field": "/state/holder", "value": "su-qing"}]
    assert len(narr.ops.give("black-ring", None, "su-qing")) == 2
    assert narr.ops.move("lin-yuan", "ferry")[0].model_dump() == {
        "op": "set", "target": "lin-yuan", "field": "/state/location", "value": "ferry"}
    learn = narr.ops.learn("su-qing", "ring-origin", since="dusk")
    assert learn[0].model_dump()["attrs"] == {"since": "dusk"}


def test_changes_say_created_and_removed(tmp_path: Path) -> None:
    narr.init_world(tmp_path / "w", sample=True)
    with narr.open_world(tmp_path / "w") as world:
        result = narr.event(world, "The ring is set down",
                            narr.UnsetOp(target="black-ring", field="state.holder"),
                            narr.SetOp(target="black-ring", field="state.glow", value=None))
        by_field = {c.field: c for c in result.record.diffusions}
        assert by_field["/state/holder"].removed and not by_field["/state/holder"].created
        glow = by_field["/state/glow"]
        assert glow.created and not glow.removed and glow.new_value is None  # a real null


def test_chains_are_typed_and_replay_takes_one(tmp_path: Path) -> None:
    narr.init_world(tmp_path / "w", sample=True)
    with narr.open_world(tmp_path / "w") as world:
        narr.event(world, "Lin Yuan walks to the ferry", *narr.ops.move("lin-yuan", "ferry"))
        narr.reset(world, "HEAD~1")
        chains = narr.list_chains(world)
        assert [type(c) for c in chains] == [narr.Chain] and chains[0].number == 1
        assert chains[0].last is not None and chains[0].last["content"] == "Lin Yuan walks to the ferry"
        result = narr.replay(world, chains[0])
        assert narr.get_value(world, "lin-yuan", "state.location") == "ferry"
        assert [e["content"] for e in result.to_json()["events"]] == ["Lin Yuan walks to the ferry"]


def test_open_world_takes_a_lock_timeout(tmp_path: Path) -> None:
    narr.init_world(tmp_path / "w", sample=True)
    with narr.open_world(tmp_path / "w") as holder, holder.lock, \
            narr.open_world(tmp_path / "w", lock_timeout=0.2) as world:
        started = time.monotonic()
        with pytest.raises(narr.BusyError):
            narr.event(world, "Lin Yuan waits", *narr.ops.move("lin-yuan", "ferry"))
        assert time.monotonic() - started < 5
    with pytest.raises(narr.InvalidInputError, match="lock_timeout"):
        narr.open_world(tmp_path / "w", lock_timeout=-1)


def test_every_function_of_the_api_says_what_it_does() -> None:
    missing = [name for name in api.__all__
               if inspect.isfunction(getattr(api, name)) and not inspect.getdoc(getattr(api, name))]
    assert missing == []


def test_an_event_takes_the_helpers_lists_and_names_what_is_no_op(tmp_path: Path) -> None:
    """The ops helpers return lists; passed as they are (not spread), they are ops all the same,
    and whatever is no op is a narr error naming its place, never pydantic's report."""
    narr.init_world(tmp_path / "w", sample=True)
    with narr.open_world(tmp_path / "w") as world:
        done = narr.event(world, "Su Qing goes to the ferry", narr.ops.move("su-qing", "ferry"),
                          {"op": "set", "target": "su-qing", "field": "state.mood", "value": "calm"})
        assert narr.get_value(world, "su-qing", "state.location") == "ferry"
        assert narr.get_value(world, "su-qing", "state.mood") == "calm"
        head = done.commit
        for bad, said in [("set su-qing", "op 1: str 'set su-qing' is not an op"),
                          ({"op": "set", "target": "su-qing"}, "op 1: "),
                          ([narr.ops.move("su-qing", "gate"), 5], "op 1: list "),
                          (None, "op 1: NoneType")]:
            with pytest.raises(narr.InvalidInputError) as caught:
                narr.event(world, "nothing", bad)  # type: ignore[arg-type]
            assert caught.value.message.startswith(said), caught.value.message
        assert world.head_id() == head


def test_register_refuses_a_factory_that_cannot_take_the_world() -> None:
    with pytest.raises(narr.InvalidInputError, match="must take one argument, the open world"):
        narr.register("zero-args", lambda: None)  # type: ignore[arg-type,misc,return-value]
    with pytest.raises(narr.InvalidInputError, match="is not callable"):
        narr.register("not-callable", "rules")  # type: ignore[arg-type]
    from narrative.diffusers.base import names

    assert "zero-args" not in names() and "not-callable" not in names()


def test_the_package_offers_only_its_names() -> None:
    import types

    public = {name for name in dir(narr) if not name.startswith("_")
              and not isinstance(getattr(narr, name), types.ModuleType)}  # submodules once imported
    assert public == {name for name in narr.__all__ if name != "ops"}
    assert not hasattr(narr, "TYPE_CHECKING") and not hasattr(narr, "annotations")
