"""Real answers, from the CLI's ``--json`` and from the HTTP API on the sample world, are valid
against the published ``schemas/answers/*.schema.json``: every key they carry is one the schema
names (no "any other keys"), with its type, and every key it requires is there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, HTTP, check_answer, git, narr_subprocess

jsonschema = pytest.importorskip("jsonschema")

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas" / "answers"


def check(answer: dict[str, Any]) -> None:
    assert (SCHEMAS / f"{answer['schema'].removeprefix('narr.').split('/')[0]}.schema.json").is_file()
    check_answer(answer)


CLI_CALLS: list[tuple[str, ...]] = [
    ("status",), ("nodes",), ("get", "lin-yuan"), ("log",), ("show", "HEAD"), ("branch",),
    ("event", "Lin Yuan walks to the ferry", "--dry-run"),  # the rules' proposal, shown
    ("event", "Lin Yuan walks to the ferry", "--diffuser", "rules"),
    ("event", "Dusk", "--set", "lin-yuan.state.mood=wary", "--diffuser", "none"),
    ("why", "lin-yuan", "state.mood"), ("why", "lin-yuan", "state.no_such_thing"),
    ("history", "lin-yuan"), ("search", "ring"), ("brief", "the ferry", "--pov", "su-qing"),
    ("threads", "--all"), ("revert", "HEAD"), ("reset", "HEAD~1"), ("chains",),
    ("replay", "1", "--reuse"), ("log", "-n", "3"),
]


def test_the_clis_answers_are_valid_against_their_schemas(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    seen = set()
    for args in CLI_CALLS:
        result = narr(*args, "--json", expect=0 if args[:2] != ("why", "lin-yuan") or
                      args[2] != "state.no_such_thing" else 11)
        answer = json.loads(result.stdout or result.stderr)
        check(answer)
        seen.add(answer["schema"])
    for document in SCHEMAS.glob("*.schema.json"):
        jsonschema.Draft202012Validator.check_schema(json.loads(document.read_text("utf-8")))
    chapter = tmp_path / "chapter.md"
    chapter.write_text("Lin Yuan walks to the gate. Su Qing smiles.", "utf-8")
    check(narr.json("audit", str(chapter)))
    for answer in (narr.json("chapter", str(chapter), "--dry-run"),
                   narr.json("chapter", str(chapter), "--accept", "all")):
        check(answer)
        seen.add(answer["schema"])
    from narrative.answers import schema as versioned
    from narrative.operations import OPERATIONS

    below = {versioned(name) for name in ROWS_OF_THE_NEXT_TESTS | SHARING_AND_EXPORTS}
    assert seen | {"narr.audit/1"} >= {op.schema for op in OPERATIONS} - {"narr.edit_node/1"} - below


ROWS_OF_THE_NEXT_TESTS = {"failed", "failed_dropped", "branch_created", "branch_deleted", "switch",
                          "merge", "check", "new", "edits", "gc", "edit_restored", "edit_dropped",
                          "chain_dropped", "reflog", "adopt", "init", "doctor", "path", "get_value",
                          "chapters"}
"""Answers of rows that the next test, which makes the state they need, checks."""


def test_the_answers_only_the_cli_gives_are_valid_against_their_schemas(flat_world: Path,
                                                                          tmp_path: Path) -> None:
    """Each answer only the CLI gives that has a typed model (CLI_ANSWERS), in good and bad
    cases alike, is valid against its schema."""
    from narrative.answer_models import CLI_ANSWERS

    seen = set()
    for answer in [
        CLI(tmp_path).json("init", "fresh", "--sample"), CLI(tmp_path).json("init", "bare"),
        CLI(flat_world).json("check"), CLI(flat_world).json("check", "--full"),
        CLI(flat_world).json("doctor"), CLI(tmp_path).json("doctor"),
        CLI(tmp_path).json("status", expect=10), CLI(flat_world).json("get", "nobody", expect=11),
        CLI(flat_world).json("event", "x", "--set", "lin-yuan.state", expect=12),
        CLI(flat_world).json("new", "character", "Mo Li"), CLI(flat_world).json("path", "lin-yuan"),
        CLI(flat_world).json("get", "lin-yuan", "state.mood"), CLI(flat_world).json("branch", "alt"),
        CLI(flat_world).json("switch", "alt"), CLI(flat_world).json("switch", "main"),
        CLI(flat_world).json("branch", "--delete", "alt"), CLI(flat_world).json("failed"),
        CLI(flat_world).json("edits"),
        CLI(flat_world).json("event", "Lin Yuan walks", "--delta", str(tmp_path / "nope.json"), expect=12),
        CLI(flat_world).json("failed"), CLI(flat_world).json("gc"),
    ]:
        check(answer)
        seen.add(answer["schema"])
    narr = CLI(flat_world)
    narr("switch", "-c", "ahead")
    narr("event", "Su Qing frowns", "--set", "su-qing.state.mood=cold", "--diffuser", "none")
    narr("switch", "main")
    narr("branch", "later")
    narr("event", "Rain", "--set", "lin-yuan.state.weather=rain", "--diffuser", "none")
    joined = narr.json("merge", "ahead")
    assert joined["record"] and not joined["fast_forward"]
    narr("switch", "later")
    forward = narr.json("merge", "main")
    assert forward["fast_forward"]
    narr("switch", "main")
    for answer in [joined, forward]:
        check(answer)
        seen.add(answer["schema"])
    assert CLI(flat_world).json("failed")["items"][0]["unread"]
    node = flat_world / "world/character/lin-yuan.json"
    CLI(flat_world)("event", "Dusk", "--set", "lin-yuan.state.weather=rain", "--diffuser", "none")
    node.write_text(node.read_text("utf-8").replace('"state": {', '"state": {"hum": 1, ', 1), "utf-8")
    CLI(flat_world)("reset", "HEAD~1")
    set_aside = CLI(flat_world).json("edits")
    check(set_aside)
    assert set_aside["items"][0]["changes"]
    chapter = tmp_path / "chapter.md"
    chapter.write_text("# Chapter 1\n\nLin Yuan walks to the gate.\n", "utf-8")
    narr("chapter", str(chapter), "--accept", "all")
    for answer in [narr.json("edits", "restore", "1"), narr.json("edits", "drop", "1"),
                   narr.json("log", "--chapters"),
                   narr.json("failed", "drop", "1"), narr.json("chains", "drop", "1", "--force"),
                   narr.json("reflog")]:
        check(answer)
        seen.add(answer["schema"])
    assert not narr.json("failed")["items"] and not narr.json("edits")["items"]
    notes = Path(__file__).resolve().parent / "data" / "import" / "notes"
    for answer in [narr.json("import", str(notes), "--dry-run"), narr.json("import", str(notes)),
                   narr.json("export", "lorebook", "-o", str(tmp_path / "book.json"))]:
        check(answer)
        seen.add(answer["schema"])
    node.write_text("{ not json", "utf-8")
    broken = CLI(flat_world).json("check", expect=17)
    check(broken)
    assert broken["ok"] is False and broken["worktree_problems"]
    sick = CLI(flat_world).json("doctor", expect=13)
    check(sick)
    assert any(finding["status"] == "problem" for finding in sick["findings"])
    from narrative.answers import schema as versioned

    assert seen >= {versioned(name)
                    for name in (CLI_ANSWERS.keys() | ROWS_OF_THE_NEXT_TESTS) - SHARING_AND_EXPORTS}


SHARING_AND_EXPORTS = {
    "adopt", "clone", "push", "pull", "remote_branches", "conflicts", "resolve", "merge_aborted",
    "graph_sizes", "graph", "connect", "story", "codex", "vault", "studio", "server"}
"""The answers of the next test: sharing a world, merging, graphs, exports and the server."""


def test_sharing_merging_graphs_exports_and_the_server_answer_as_their_schemas_say(
        flat_world: Path, tmp_path: Path) -> None:
    """Each of these answers, from the real command in good and edge cases (a pull that
    fast-forwards, merges, finds nothing; a conflict with a side absent; two nodes with no
    path between them; a revert in the book), is valid against its schema."""
    import subprocess

    from narrative.answer_models import CLI_ANSWERS
    from narrative.answers import schema as versioned

    answers: list[dict[str, Any]] = []
    alice = CLI(flat_world)
    hub = tmp_path / "hub.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(hub)], check=True)
    git(flat_world, "remote", "add", "origin", str(hub))
    answers += [alice.json("push"), CLI(tmp_path).json("clone", str(hub), "bob")]
    bob = CLI(tmp_path / "bob")
    bob("event", "Bob", "--set", "su-qing.state.mood=calm", "--diffuser", "none")
    answers += [bob.json("push"), alice.json("pull"), alice.json("pull")]
    alice("event", "A", "--set", "old-zhou.state.mood=sleepy", "--diffuser", "none")
    bob("event", "B", "--set", "lin-yuan.state.mood=glad", "--diffuser", "none")
    alice("push")
    merged = bob.json("pull")
    assert merged["status"] == "merged" and merged["merge"]["record"]["kind"] == "merge"
    answers += [merged, alice.json("branch", "-r")]
    alice("switch", "-c", "alt")
    alice("event", "x", "--set", "lin-yuan.state.mood=a", "--unset", "su-qing.state.mood",
          "--diffuser", "none")
    alice("switch", "main")
    alice("event", "y", "--set", "lin-yuan.state.mood=b", "--set", "su-qing.state.mood=c",
          "--diffuser", "none")
    alice.json("merge", "alt", expect=14)
    conflicts = alice.json("conflicts")
    assert [("theirs" in c, c["resolved"]) for c in conflicts["conflicts"]] == [(True, False),
                                                                                 (False, False)]
    answers += [conflicts, alice.json("resolve", "lin-yuan", "state.mood", "--value", "mid"),
                alice.json("resolve", "su-qing", "state.mood", "--theirs"),
                alice.json("merge", "--abort")]
    alice("new", "character", "Mo Li")
    alice("event", "Mo Li arrives", "--diffuser", "none")
    alice("revert", "HEAD~1")
    apart = alice.json("graph", "connect", "lin-yuan", "mo-li")
    assert (apart["length"], apart["paths"]) == (None, [])
    book = alice.json("story")
    assert book["reverts"] and any(chapter["reverted_by"] for chapter in book["events"])
    answers += [alice.json("graph"), alice.json("graph", "world", "--format", "mermaid"),
                alice.json("graph", "events"), alice.json("graph", "connect", "lin-yuan", "su-qing"),
                apart, book, alice.json("story", "--from", "HEAD~2"), alice.json("export", "codex"),
                alice.json("export", "codex", "--at", "HEAD~1"),
                alice.json("export", "vault", str(tmp_path / "vault"))]
    node = flat_world / "world/character/lin-yuan.json"
    node.write_text(node.read_text("utf-8").replace('"state": {', '"state": {"hum": 1, ', 1), "utf-8")
    git(flat_world, "commit", "--quiet", "-am", "a plain commit")
    answers.append(alice.json("adopt"))
    try:
        for args in (["serve", "--detach"], ["serve", "--status"], ["studio", "--url"],
                     ["serve", "--stop"], ["serve", "--status"], ["serve", "--stop"]):
            proc = narr_subprocess(flat_world, *args, "--json")
            assert proc.returncode == 0, proc.stderr
            answers.append(json.loads(proc.stdout))
    finally:
        narr_subprocess(flat_world, "serve", "--stop")
    served = [a for a in answers if a["schema"] == versioned("server")]
    assert [(a["running"], a["stopped"], a["watcher"] is not None) for a in served] == [
        (True, False, False), (True, False, True), (False, True, False), (False, False, False),
        (False, False, False)]
    assert sorted(served[0]) == sorted(served[2])  # one shape, running or not
    for answer in answers:
        check(answer)
    assert {a["schema"] for a in answers} - {versioned("error")} == {
        versioned(name) for name in SHARING_AND_EXPORTS}
    from narrative.operations import OPERATIONS

    assert CLI_ANSWERS.keys() | {row.answer_name for row in OPERATIONS} >= SHARING_AND_EXPORTS


def test_a_missing_token_is_answered_as_every_error_is(flat_world: Path) -> None:
    """The 401 the HTTP API gives has the keys of any other error (details, hint)."""
    answer = HTTP(flat_world, bearer="another token").get("/api/status")
    assert answer.status_code == 401
    check(answer.json())
    assert answer.json()["type"] == "Unauthorized" and answer.json()["details"] == []


def test_the_http_answers_are_valid_against_their_schemas(flat_world: Path) -> None:
    http = HTTP(flat_world)
    node = json.loads((flat_world / "world/character/lin-yuan.json").read_text("utf-8"))
    node["state"]["mood"] = "curious"
    answers = [
        http.get("/api/status"), http.get("/api/nodes"), http.get("/api/nodes/lin-yuan"),
        http.post("/api/events", json={"content": "Lin Yuan walks to the ferry", "diffuser": "rules"}),
        http.get("/api/log"), http.get("/api/show/HEAD"), http.get("/api/branches"),
        http.get("/api/why/lin-yuan?field=state.location"), http.get("/api/history/lin-yuan"),
        http.get("/api/search?q=ferry"), http.get("/api/brief?goal=the+ferry"),
        http.get("/api/threads?all=true"), http.post("/api/audit", json={"text": "Lin Yuan sleeps."}),
        http.put("/api/nodes/lin-yuan", json.dumps(node).encode()),
        http.post("/api/revert", json={"rev": "HEAD"}), http.post("/api/reset", json={"rev": "HEAD~1"}),
        http.get("/api/chains"), http.post("/api/replay", json={"chain": "1", "reuse": True}),
    ]
    for response in answers:
        assert response.status_code == 200, response.text
        check(response.json())


def test_a_key_the_schema_does_not_name_is_refused(flat_world: Path) -> None:
    """The schemas are closed: an answer that grew a key would fail the tests above."""
    answer = CLI(flat_world).json("status")
    check(answer)
    with pytest.raises(AssertionError, match="Additional properties"):
        check({**answer, "mood": "new key"})
    event = CLI(flat_world).json("event", "Lin Yuan walks to the ferry", "--dry-run")
    assert "proposal" in event
    with pytest.raises(AssertionError, match="Additional properties"):
        check({**event, "proposal": {**event["proposal"], "extra": 1}})
    without = {k: v for k, v in event.items() if k != "dry_run"}
    with pytest.raises(AssertionError, match="'dry_run' is a required property"):
        check(without)
