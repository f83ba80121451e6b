"""``narr doctor``: each problem named with its fix, and the exit code of its kind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, node_file, snapshot
from llm_stubs import Answer, Stub, serving
from test_requirements import OLD_PYGIT2, narr_with

from narrative.engine.doctor import doctor
from narrative.errors import DiffuserError, InvalidWorldError, RequirementError

NAMES = ["python", "pygit2", "libgit2", "sqlite", "git", "locale", "config", "world", "journal", "server",
         "history", "hand edits", "failed events", "llm"]


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in report["findings"]}


def test_a_healthy_world(narr: CLI, world: Path) -> None:
    before = snapshot(world)
    report = narr.json("doctor")
    assert report["ok"] and report["exit_code"] == 0 and report["world"] == str(world.resolve())
    assert [f["name"] for f in report["findings"]] == NAMES
    found = by_name(report)
    assert all(f["status"] in ("ok", "skipped") for f in report["findings"]), report
    assert found["llm"]["status"] == "skipped"  # none configured: nothing is asked
    assert "events explain their commits" in found["history"]["found"]
    assert found["pygit2"]["found"].endswith("(needs 1.20.1 or newer)")
    text = narr("doctor").stdout
    assert text.splitlines()[0] == "narr doctor: all well"
    assert any(line.split()[:2] == ["ok", "history"] for line in text.splitlines())
    assert snapshot(world) == before


def test_a_failed_event_is_named_with_its_fix_and_its_kind(narr: CLI, world: Path) -> None:
    failed = narr("event", "Lin Yuan walks to the ferry", "--diffuser", "llm", expect=DiffuserError.exit_code)
    assert "kept" in failed.stderr
    result = narr("doctor", "--json", expect=DiffuserError.exit_code)
    report = json.loads(result.stdout)
    assert not report["ok"] and report["exit_code"] == 18
    problem = by_name(report)["failed events"]
    assert problem["status"] == "problem" and problem["kind"] == "DiffuserError"
    assert "'Lin Yuan walks to the ferry'" in problem["problem"]
    assert problem["fix"] == "fix what it says, then narr failed retry 1; or narr failed drop 1"
    error = json.loads(result.stderr)
    assert error["type"] == "DiffuserError" and error["hint"] == problem["fix"]
    text = narr("doctor", expect=18).stdout
    assert text.splitlines()[0] == "narr doctor: 1 problem"
    assert "fix: fix what it says, then narr failed retry 1" in text


def test_a_broken_hand_edit_comes_before_a_failed_event(narr: CLI, world: Path) -> None:
    narr("event", "Lin Yuan walks to the ferry", "--diffuser", "llm", expect=DiffuserError.exit_code)
    node_file(world, "lin-yuan").write_text("{ not json", encoding="utf-8")
    report = json.loads(narr("doctor", "--json", expect=InvalidWorldError.exit_code).stdout)
    problems = [f for f in report["findings"] if f["status"] == "problem"]
    assert [p["name"] for p in problems] == ["hand edits", "failed events"]
    assert "lin-yuan" in problems[0]["problem"] and "narr edit" in problems[0]["fix"]
    assert report["exit_code"] == 13


def test_a_too_old_pygit2_is_named_and_the_world_left_closed(world: Path) -> None:
    before = snapshot(world)
    result = narr_with(OLD_PYGIT2, "doctor", "--json", cwd=world)
    assert result.returncode == RequirementError.exit_code
    report = json.loads(result.stdout)
    found = by_name(report)
    assert found["pygit2"] == {
        "name": "pygit2", "status": "problem", "found": "1.19.1", "kind": "RequirementError", "exit_code": 21,
        "problem": "pygit2 1.19.1 is too old: narr needs pygit2 1.20.1 or newer",
        "fix": "pip install --upgrade 'pygit2>=1.20.1' (in the environment narr runs from; pip keeps an "
               "old pygit2 that an earlier floor allowed)"}
    assert found["world"]["status"] == "skipped" and "journal" not in found
    assert "Traceback" not in result.stderr and json.loads(result.stderr)["exit_code"] == 21
    assert snapshot(world) == before
    text = narr_with(OLD_PYGIT2, "doctor", cwd=world)
    assert "PROBLEM  pygit2" in text.stdout and "fix: pip install --upgrade 'pygit2>=1.20.1'" in text.stdout


def test_outside_a_world_the_machine_is_still_checked(tmp_path: Path) -> None:
    report = doctor(tmp_path)
    assert report.ok and report.world is None
    assert by_name(report.to_json())["world"]["status"] == "skipped"
    assert "not a narr world" in (by_name(report.to_json())["world"]["problem"] or "")


@pytest.fixture
def llm_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with serving(Stub(dialect="openai", default=Answer(content="ready"))) as stub:
        yield stub.base_url


def test_the_llm_server_is_asked_only_when_configured(narr: CLI, llm_server: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARR_LLM_BASE_URL", llm_server)
    monkeypatch.setenv("NARR_LLM_CONTEXT", "8192")
    found = by_name(narr.json("doctor"))
    assert found["llm"]["status"] == "ok"
    assert found["llm"]["found"].startswith(f"{llm_server}/chat/completions (openai, model test-model) "
                                            "answered a 8-token request in ")
    assert found["llm context"]["status"] == "ok"
    monkeypatch.setenv("NARR_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # the discard port: refused
    report = json.loads(narr("doctor", "--json", "--llm-timeout", "1", expect=18).stdout)
    found = by_name(report)["llm"]
    assert found["status"] == "problem" and found["kind"] == "DiffuserError"
    assert found["problem"] == ("cannot reach the LLM server at http://127.0.0.1:9/v1/chat/completions: "
                                "Connection refused")
    assert "is the server running" in found["fix"]


def test_a_problem_s_fix_is_worded_by_the_door_that_asks(narr: CLI, world: Path) -> None:
    from narrative.operations.upkeep import DOCTOR
    from narrative.store import WorldRepo
    from narrative.store.private import MERGE_STATE

    with WorldRepo.open(world) as wr:  # a narr merge stopped on conflicts, as far as the doctor sees
        (wr.private.path / MERGE_STATE).write_text("{}", encoding="utf-8")
    fixes = {door: by_name(DOCTOR.call(world, DOCTOR.parse({}), door))["merge"]["fix"]
             for door in ("cli", "mcp", "http")}
    assert fixes["cli"].startswith("narr conflicts lists them: narr resolve each")
    assert fixes["mcp"].startswith("the conflicts tool lists them: the resolve tool each")
    assert fixes["http"].startswith("GET /api/merge/conflicts lists them")
    result = narr("doctor", "--json", expect=14)
    assert by_name(json.loads(result.stdout))["merge"]["fix"] == fixes["cli"]
    assert json.loads(result.stderr)["hint"] == fixes["cli"]
