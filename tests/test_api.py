"""``narrative.api``: the supported surface for programs, and what it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import narrative
from narrative import api

# Names programs may rely on. Removing one breaks them: this list only grows.
PROMISED = {
    "open_world", "init_world", "event", "run_event", "retry", "batch", "reset", "replay",
    "list_chains", "revert", "switch", "create_branch", "delete_branch", "list_branches", "reflog",
    "get_node", "get_value", "list_nodes", "status", "log", "show", "check", "restore",
    "list_set_asides", "failed_events", "default_diffuser", "get_diffuser", "register",
    "EventRequest", "EventResult", "ResetResult", "ReplayResult", "RestoreResult", "Status", "Entry",
    "CheckReport", "InitResult", "WorldRepo", "World", "DictWorld", "Draft", "Diffuser", "Proposal",
    "Delta", "Op", "SetOp", "UnsetOp", "RelateOp", "UnrelateOp", "CreateOp", "ExpireOp", "Node",
    "Change", "EventRecord", "NarrError", "NotAWorldError", "NotFoundError", "InvalidInputError",
    "InvalidWorldError", "ConflictError", "BusyError", "NothingToDoError", "CheckFailedError",
    "DiffuserError",
}


def test_no_promised_name_disappears() -> None:
    assert set(api.__all__) >= PROMISED
    for name in api.__all__:
        assert getattr(narrative, name) is getattr(api, name), name


def test_the_package_lists_the_api_without_loading_it() -> None:
    assert set(narrative._FACE) == set(api.__all__) == set(narrative.__all__)
    assert set(api.__all__) <= set(dir(narrative))


def test_importing_the_package_stays_cheap() -> None:
    """A thin client imports ``narrative`` (and asks for a missing name) without git or pydantic."""
    code = ("import sys, narrative\n"
            "from narrative import ids\n"
            "try:\n    narrative.no_such_name\nexcept AttributeError:\n    pass\n"
            "print(sorted(m for m in ('pygit2', 'pydantic', 'networkx', 'narrative.api')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_name_loads_only_the_module_that_defines_it() -> None:
    """``narrative.open_world`` opens a world without the engine: a program or a notebook pays
    for the use cases it calls, not for the whole library at its first name."""
    code = ("import sys, narrative\n"
            "narrative.open_world, narrative.SetOp, narrative.NotFoundError\n"
            "print(sorted(m for m in sys.modules if m.startswith(('narrative.engine', "
            "'narrative.api', 'narrative.operations', 'narrative.diffusers', 'networkx'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_story_through_the_api(tmp_path: Path) -> None:
    root = tmp_path / "w"
    narrative.init_world(root, sample=True)
    world = narrative.open_world(root / "world")  # any folder inside the world will do
    try:
        first = narrative.event(world, "Lin Yuan walks to the ferry", narrative.SetOp(
            op="set", target="lin-yuan", field="/state/location", value="ferry"))
        assert first.commit is not None
        assert narrative.get_value(world, "lin-yuan", "state.location") == "ferry"
        assert narrative.get_value(world, "lin-yuan", "state.location", at="HEAD~1") == "qingyun-gate"
        assert narrative.get_value(world, "lin-yuan", "state.location",
                                   at=first.record.id) == "ferry"  # an event id names a moment
        ruled = narrative.event(world, "苏晴怀疑林远", diffuser="rules")
        assert any(d.target == "su-qing" for d in ruled.record.diffusions)
        with narrative.batch(world):
            for mood in ("calm", "tired"):
                narrative.event(world, f"Lin Yuan feels {mood}", narrative.SetOp(
                    op="set", target="lin-yuan", field="/state/mood", value=mood))
        assert [e.content for e in narrative.log(world, limit=2)] == [
            "Lin Yuan feels tired", "Lin Yuan feels calm"]
        assert narrative.status(world).edits == []

        back = narrative.reset(world, "HEAD~2")
        assert len(back.undone) == 2 and back.warnings == []
        assert narrative.get_value(world, "lin-yuan", "state.mood") == "anxious"
        again = narrative.replay(world, "1", reuse=True)
        assert again.fast_forward
        assert narrative.get_value(world, "lin-yuan", "state.mood") == "tired"
        undo = narrative.revert(world, "HEAD")
        assert narrative.get_value(world, "lin-yuan", "state.mood") == "calm"
        assert undo.record.reverts is not None
        assert narrative.check(world).ok
    finally:
        world.close()


def test_errors_keep_their_types_and_exit_codes(tmp_path: Path) -> None:
    root = tmp_path / "w"
    narrative.init_world(root, sample=True)
    world = narrative.open_world(root)
    try:
        with pytest.raises(narrative.NotFoundError) as missing:
            narrative.get_value(world, "nobody")
        assert missing.value.exit_code == 11
        with pytest.raises(narrative.InvalidInputError) as bad:
            narrative.event(world, "x", narrative.SetOp(op="set", target="lin-yuan",
                                                        field="/traits/speech", value="loud"))
        assert bad.value.exit_code == 12
        assert [f["content"] for f in narrative.failed_events(world)] == ["x"]  # kept for retry
        with pytest.raises(narrative.NotAWorldError):
            narrative.open_world(tmp_path)
    finally:
        world.close()

