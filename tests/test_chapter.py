"""``narr chapter``: a whole chapter in, its changes reviewed, the chapter recorded as one unit.

A chapter of three scenes whose later sentences depend on what earlier ones changed, in
English and in Chinese on the sample world and in a world made with the generic rules of both
languages: reviewed (every change numbered at its sentence), recorded with each change at its
sentence, a rejected change left out, a planted contradiction shown before anything is written;
then ``reset --chapter``, replay, recording again, the chapter list, ``show chapter:N``, ``why``
and ``history`` naming the sentence, and bad input refused with nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, git, read_node, snapshot

from narrative.errors import ConflictError, InvalidInputError, NotFoundError, NothingToDoError

EN = """\
# Chapter 3: The Ferry

Lin Yuan walks to the ferry. Su Qing walks to the ferry.

* * *

Lin Yuan gives the black ring to Su Qing.

◇◇◇

Su Qing gives the black ring to Old Zhou.
"""

ZH = """\
第三章 渡口

林远来到渡口。苏晴来到渡口。

◇◇◇

林远把黑戒交给苏晴。

（二）

苏晴把黑戒交给老周。
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def review(narr: CLI, path: Path, *args: str) -> dict[str, Any]:
    answer = narr.json("chapter", str(path), "--dry-run", *args)
    assert answer["dry_run"] is True and answer["chapter"] is None
    return answer["review"]  # type: ignore[no-any-return]


def changes_at(rv: dict[str, Any]) -> dict[int, list[tuple[str, str, Any]]]:
    """Sentence number -> (target, field, new value) of its numbered changes."""
    out: dict[int, list[tuple[str, str, Any]]] = {}
    for c in rv["changes"]:
        for ch in c["changes"]:
            out.setdefault(c["sentence"], []).append((ch["target"], ch["field"],
                                                      ch.get("new_value", "(gone)")))
    return out


@pytest.mark.parametrize("text", [EN, ZH], ids=["en", "zh"])
def test_a_chapter_is_reviewed_on_the_world_as_it_changes(flat_world: Path, tmp_path: Path,
                                                          text: str) -> None:
    narr = CLI(flat_world)
    before = snapshot(flat_world)
    rv = review(narr, write(tmp_path, "ch.md", text))
    assert snapshot(flat_world) == before  # a review writes nothing
    assert (rv["number"], len(rv["scenes"]), len(rv["sentences"])) == (3, 3, 4)
    assert [s["scene"] for s in rv["sentences"]] == [1, 1, 2, 3]
    at = changes_at(rv)
    assert at[1] == [("lin-yuan", "/state/location", "ferry")]
    assert at[2] == [("su-qing", "/state/location", "ferry")]
    assert ("su-qing", "/relations/holds/black-ring", {}) in at[3]
    # sentence 4 gives what sentence 3 gave, between two people sentences 1-2 put together
    assert ("old-zhou", "/relations/holds/black-ring", {}) in at[4]
    assert rv["findings"] == [] and rv["held"] == []
    assert [c["n"] for c in rv["changes"]] == list(range(1, len(rv["changes"]) + 1))
    assert all(c["rule"] == "give" for c in rv["changes"] if c["sentence"] in (3, 4))
    # read alone, the last scene contradicts the world: the review read it after the others
    alone = text.split("◇◇◇")[-1].split("（二）")[-1]
    audit = narr.json("audit", "-", input=alone, expect=20)
    assert audit["findings"]


@pytest.mark.parametrize("text", [EN, ZH], ids=["en", "zh"])
def test_a_chapter_is_recorded_with_each_change_at_its_sentence(flat_world: Path,
                                                                tmp_path: Path, text: str) -> None:
    narr = CLI(flat_world)
    head = git(flat_world, "rev-parse", "HEAD").strip()
    out = narr.json("chapter", str(write(tmp_path, "ch.md", text)), "--accept", "all")
    assert out["dry_run"] is False and out["already"] is False
    chapter = out["chapter"]
    assert (chapter["number"], chapter["events"], chapter["sentences"]) == (3, 4, 4)
    log = narr.json("log", "-n", "6")["items"]
    assert [e["kind"] for e in log] == ["event"] * 4 + ["chapter", "genesis"]
    sentences = [s["text"] for s in out["review"]["sentences"]]
    assert [e["content"] for e in reversed(log[:4])] == sentences  # each event is its sentence
    assert [e["in_chapter"]["sentence"] for e in reversed(log[:4])] == [1, 2, 3, 4]
    assert {e["in_chapter"]["chapter"] for e in log[:4]} == {chapter["id"]}
    opening = log[4]
    assert opening["chapter"]["text"] == text and opening["chapter"]["number"] == 3
    assert [s["sentences"] for s in opening["chapter"]["scenes"]] == [2, 1, 1]
    assert git(flat_world, "rev-parse", "HEAD~5").strip() == head  # one unit on top of HEAD
    assert read_node(flat_world, "old-zhou")["relations"]["holds"]["black-ring"] == {}
    assert "black-ring" not in read_node(flat_world, "lin-yuan")["relations"]["holds"]
    assert narr.json("check")["ok"] is True
    git(flat_world, "fsck", "--strict")
    assert git(flat_world, "status", "--porcelain") == ""
    # why and history name the sentence and the chapter
    why = narr.json("why", "old-zhou", "relations.holds.black-ring")
    assert why["chapter"]["sentence"] == 4 and why["chapter"]["number"] == 3
    assert why["event"]["content"] == sentences[3]
    assert "sentence 4 of " in narr("why", "old-zhou", "relations.holds.black-ring").stdout
    history = narr.json("history", "su-qing")["events"]
    assert [(e["chapter"] or {}).get("sentence") for e in history if e["changes"]] == [2, 3, 4]


def test_a_rejected_change_is_not_written(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    path = write(tmp_path, "ch.md", EN)
    rv = review(narr, path)
    moving_su_qing = next(c["n"] for c in rv["changes"] if c["sentence"] == 2)
    out = narr.json("chapter", str(path), "--accept", "all", "--reject", str(moving_su_qing))
    assert out["rejected"] == [moving_su_qing]
    assert read_node(flat_world, "su-qing")["state"]["location"] == "qingyun-gate"
    assert [e["sentence"] for e in out["events"]] == [1, 3, 4]  # sentence 2 changes nothing now
    contents = [e["content"] for e in narr.json("log", "-n", "3")["items"]]
    assert "Su Qing walks to the ferry." not in contents
    assert narr.json("check")["ok"] is True


def test_an_accept_list_and_a_change_added_by_hand(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    path = write(tmp_path, "ch.md", EN)
    out = narr.json("chapter", str(path), "--accept", "1-2", "--set", "2:Su Qing.state.mood=wary")
    assert out["accepted"] == [1, 2] and [e["sentence"] for e in out["events"]] == [1, 2]
    assert read_node(flat_world, "su-qing")["state"]["mood"] == "wary"
    second = narr.json("show", "HEAD")
    assert second["explicit"] == [{"op": "set", "target": "su-qing", "field": "/state/mood",
                                   "value": "wary"}]
    assert read_node(flat_world, "lin-yuan")["relations"]["holds"]["black-ring"]  # 3+ not taken


def test_a_planted_contradiction_is_shown_before_anything_is_written(flat_world: Path,
                                                                     tmp_path: Path) -> None:
    narr = CLI(flat_world)
    planted = EN + "\nOld Zhou dies. Old Zhou gives the black ring to Lin Yuan.\n"
    path = write(tmp_path, "ch.md", planted)
    before = snapshot(flat_world)
    result = narr("chapter", str(path))  # no terminal: the review, and nothing recorded
    assert "! contradiction" in result.stdout and "Old Zhou is dead" in result.stdout
    assert "Nothing recorded" in result.stdout
    rv = review(narr, path)
    finding = rv["findings"][0]
    assert (finding["number"], finding["check"], finding["node"]) == (6, "dead", "old-zhou")
    assert "since sentence 5 of this chapter" in finding["fact"]
    assert snapshot(flat_world) == before


def test_the_chapter_list_and_one_chapter_shown(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    narr("chapter", str(write(tmp_path, "ch.md", EN)), "--accept", "all")
    listed = narr.json("log", "--chapters")["items"]
    assert [(c["number"], c["heading"], c["events_on_line"]) for c in listed] == [
        (3, "Chapter 3: The Ferry", 4)]
    assert listed[0]["first"]["content"] == "Lin Yuan walks to the ferry."
    assert listed[0]["last"]["content"] == "Su Qing gives the black ring to Old Zhou."
    assert "Old Zhou" in listed[0]["summary"]
    text = narr("log", "--chapters").stdout
    assert text.startswith("   3  ") and "Chapter 3: The Ferry  (4 events, 4 sentences)" in text
    shown = narr.json("show", "chapter:3")
    assert shown["kind"] == "chapter" and shown["chapter"]["text"] == EN
    page = narr("show", "chapter:3").stdout
    assert "scene 3 (sentences 4-4)" in page and "Su Qing gives the black ring to Old Zhou." in page
    err = narr("show", "chapter:9", expect=NotFoundError.exit_code).stderr
    assert err.startswith("narr: error: no chapter 9 on this story line (chapters: 3)")


def test_reset_replay_and_recording_again(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    path = write(tmp_path, "ch.md", EN)
    first = narr.json("chapter", str(path), "--accept", "all")
    narr("event", "Old Zhou sighs", "--set", "old-zhou.state.mood=weary")
    # the same chapter again on the same line is refused: reset first
    err = narr("chapter", str(path), "--accept", "all", expect=ConflictError.exit_code).stderr
    assert "chapter 3 is on the story line already" in err and "narr reset --chapter 3" in err
    reset = narr.json("reset", "--chapter", "3")
    assert len(reset["undone"]) == 6  # the chapter, its four events, the event after it
    assert narr.json("log", "--chapters")["items"] == []
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "qingyun-gate"
    # replayed, the chapter is told again: its own record, and its events naming it
    replayed = narr.json("replay", "1")
    assert [e["kind"] for e in replayed["events"]] == ["chapter", *["event"] * 5]
    again = narr.json("log", "--chapters")["items"]
    assert [(c["number"], c["events_on_line"]) for c in again] == [(3, 4)]
    assert again[0]["id"] != first["chapter"]["id"]
    assert narr.json("check")["ok"] is True
    # recorded again after a reset, it replaces the one the line held
    narr("reset", "--chapter", "3")
    shorter = write(tmp_path, "ch2.md", EN.split("* * *")[0])
    out = narr.json("chapter", str(shorter), "--accept", "all")
    listed = narr.json("log", "--chapters")["items"]
    assert [(c["id"], c["events_on_line"]) for c in listed] == [(out["chapter"]["id"], 2)]
    assert narr.json("check")["ok"] is True


def test_a_retried_key_records_nothing_twice_and_retry_finishes_a_kept_chapter(
        flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    path = write(tmp_path, "ch.md", EN)
    one = narr.json("chapter", str(path), "--accept", "all", "--key", "ch3")
    head = git(flat_world, "rev-parse", "HEAD")
    two = narr.json("chapter", str(path), "--accept", "all", "--key", "ch3")
    assert two["already"] is True and two["chapter"]["commit"] == one["chapter"]["commit"]
    assert git(flat_world, "rev-parse", "HEAD") == head
    assert narr("chapter", "--retry", expect=NothingToDoError.exit_code).stderr.startswith(
        "narr: error: no chapter is waiting to be recorded")


def test_a_failed_recording_keeps_the_chapter_for_retry(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    path = write(tmp_path, "ch.md", EN)
    (flat_world / "world/character/lin-yuan.json").write_text("{broken", "utf-8")
    before = git(flat_world, "rev-parse", "HEAD")
    err = narr("chapter", str(path), "--accept", "all", expect=13).stderr
    assert "narr chapter --retry" in err
    assert git(flat_world, "rev-parse", "HEAD") == before
    git(flat_world, "checkout", "--", "world/character/lin-yuan.json")
    out = narr.json("chapter", "--retry")
    assert out["chapter"]["number"] == 3 and len(out["events"]) == 4
    assert narr("chapter", "--retry", expect=NothingToDoError.exit_code)


def test_hand_edits_are_recorded_by_the_chapters_own_commit(flat_world: Path,
                                                           tmp_path: Path) -> None:
    narr = CLI(flat_world)
    node = read_node(flat_world, "elder-mo")
    node["state"]["mood"] = "restless"
    (flat_world / "world/character/elder-mo.json").write_text(
        json.dumps(node, indent=2, sort_keys=True, ensure_ascii=False) + "\n", "utf-8")
    narr("chapter", str(write(tmp_path, "ch.md", EN)), "--accept", "all")
    opening = narr.json("show", "HEAD~4")
    assert opening["kind"] == "chapter"
    assert [(e["target"], e["field"], e["new_value"]) for e in opening["edits"]] == [
        ("elder-mo", "/state/mood", "restless")]
    assert narr.json("status")["edits"] == []
    # rewinding to before the chapter gives the hand edit back, as a reset does
    narr("reset", "--chapter", "3")
    assert read_node(flat_world, "elder-mo")["state"]["mood"] == "restless"
    assert narr.json("status")["edits"]


def test_a_world_with_the_generic_rules_of_both_languages(tmp_path: Path) -> None:
    from narrative.engine.init import init_world

    root = tmp_path / "both"
    init_world(root, rules="both")
    narr = CLI(root)
    narr("new", "character", "Mara", "--alias", "玛拉")
    narr("new", "character", "Tobin", "--alias", "托宾")
    narr("new", "background", "the mill", "--kind", "place", "--alias", "磨坊")
    narr("new", "item", "the brass key", "--alias", "铜钥匙")
    narr("event", "They meet", "--relate", "Mara:holds:the brass key",
         "--set", "Mara.state.location=the mill", "--set", "Tobin.state.location=the mill")
    chapter = ("# Chapter 1\n\nMara walks to the mill.\n\n* * *\n\n玛拉把铜钥匙交给托宾。\n\n"
               "◇◇◇\n\nTobin dies.\n")
    rv = narr.json("chapter", "-", "--dry-run", input=chapter)["review"]
    assert [s["scene"] for s in rv["sentences"]] == [1, 2, 3]
    at = changes_at(rv)
    assert ("tobin", "/relations/holds/the-brass-key", {}) in at[2]
    assert ("tobin", "/state/health", "dead") in at[3]
    narr("chapter", "-", "--accept", "all", input=chapter)
    assert narr.json("check")["ok"] is True
    assert read_node(root, "tobin")["state"]["health"] == "dead"


# --- bad input: one clear error, nothing written ------------------------------------------------

@pytest.mark.parametrize("data, message", [
    (b"", "narr: error: {path} is empty"),
    (b"\x00\x01binary\x00", "narr: error: {path} is not text (it holds NUL bytes: a binary file?)"),
    (("Lin Yuan walks. " * 20_000).encode(), "narr: error: {path} is 320,000 characters; a "
                                             "chapter holds at most 200,000"),
    (b"# Chapter 1\n\n* * *\n\n---\n", "narr: error: the chapter holds no sentence"),
], ids=["empty", "binary", "too long", "only breaks"])
def test_bad_drafts_are_refused(flat_world: Path, tmp_path: Path, data: bytes, message: str) -> None:
    narr = CLI(flat_world)
    path = tmp_path / "ch.md"
    path.write_bytes(data)
    before = snapshot(flat_world)
    for args in (["--dry-run"], ["--accept", "all"]):
        err = narr("chapter", str(path), *args, expect=InvalidInputError.exit_code).stderr
        assert err.startswith(message.format(path=path)), err
    assert snapshot(flat_world) == before


def test_bad_decisions_are_refused(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    path = write(tmp_path, "ch.md", EN)
    before = snapshot(flat_world)
    err = narr("chapter", str(path), "--accept", "1,99", expect=12).stderr
    assert err.startswith("narr: error: the review proposes 8 changes (1 to 8); there is no change 99")
    err = narr("chapter", str(path), "--accept", "1,x", expect=12).stderr
    assert "'x' is not a number or a range" in err
    err = narr("chapter", str(path), "--accept", "all", "--set", "lin-yuan.state.mood=calm",
               expect=12).stderr
    assert "say at which sentence" in err and "--set 7:lin-yuan.state.mood=calm" in err
    err = narr("chapter", str(path), "--accept", "all", "--set", "9:lin-yuan.state.mood=calm",
               expect=12).stderr
    assert "the chapter has sentences 1 to 4" in err
    err = narr("chapter", str(path), "--accept", "all", "--set", "2:Nobody.state.mood=calm",
               expect=11).stderr
    assert "Nobody" in err
    assert snapshot(flat_world) == before


def test_a_chapter_that_names_nobody_the_world_knows(flat_world: Path, tmp_path: Path) -> None:
    narr = CLI(flat_world)
    path = write(tmp_path, "ch.md", "The wind rose over the hills. Nobody came.\n")
    rv = review(narr, path)
    assert any("no sentence names a node of this world" in w for w in rv["warnings"])
    before = snapshot(flat_world)
    err = narr("chapter", str(path), "--accept", "all", expect=12).stderr
    assert err.startswith("narr: error: no sentence of the chapter names a node of this world")
    assert snapshot(flat_world) == before


# --- the writer at a terminal -------------------------------------------------------------------

@pytest.fixture
def server(request: pytest.FixtureRequest, flat_world: Path) -> Any:
    """``served``: a server runs for the world; the questions must still be asked, by narr
    in the writer's own process (a server reads a client's standard input whole)."""
    import os
    import subprocess
    import sys

    if request.param == "local":
        yield
        return
    clean = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PAGER", "NARR_PAGER")}

    def serve(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "narrative", "-C", str(flat_world), "serve",
                               *args], cwd=flat_world, env=clean, capture_output=True, text=True,
                              check=True).stdout

    serve("--detach")
    try:
        yield
        assert json.loads(serve("--status", "--json"))["requests"] == 0  # never handed over
    finally:
        serve("--stop")


def _spawn(root: Path, *args: str) -> Any:
    import os
    import sys

    import pexpect

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PAGER", "NARR_PAGER")}
    env.update(NO_COLOR="1", NARR_PAGER="")
    return pexpect.spawn(sys.executable, ["-m", "narrative", "-C", str(root), *args], env=env, cwd=str(root),
                         dimensions=(40, 200), encoding="utf-8", timeout=60)


@pytest.mark.parametrize("server", ["local", "served"], indirect=True)
@pytest.mark.usefixtures("server")
def test_the_writer_decides_change_by_change_on_a_terminal(flat_world: Path,
                                                          tmp_path: Path) -> None:
    import pexpect

    path = write(tmp_path, "ch.md", EN)
    child = _spawn(flat_world, "chapter", str(path))
    child.expect_exact("8 changes proposed, 0 contradictions, 0 held back.")
    child.expect_exact("Record change 1 of 8 (sentence 1)? [y,n,e,a,d,q,?]")
    child.sendline("y")
    child.expect_exact("Record change 2 of 8 (sentence 2)? [y,n,e,a,d,q,?]")
    child.sendline("?")
    child.expect_exact("q - quit: record nothing")
    child.expect_exact("Record change 2 of 8 (sentence 2)? [y,n,e,a,d,q,?]")
    child.sendline("e")
    child.expect_exact("new value for su-qing /state/location")
    child.sendline("library-pavilion")
    child.expect_exact("Record change 3 of 8 (sentence 3)? [y,n,e,a,d,q,?]")
    child.sendline("n")
    child.expect_exact("Record change 4 of 8 (sentence 3)? [y,n,e,a,d,q,?]")
    child.sendline("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert read_node(flat_world, "lin-yuan")["state"]["location"] == "ferry"
    assert read_node(flat_world, "su-qing")["state"]["location"] == "library-pavilion"
    assert "black-ring" in read_node(flat_world, "lin-yuan")["relations"]["holds"]
    narr = CLI(flat_world)
    assert [c["number"] for c in narr.json("log", "--chapters")["items"]] == [3]
    assert narr.json("check")["ok"] is True


def test_quitting_at_the_prompt_records_nothing(flat_world: Path, tmp_path: Path) -> None:
    import pexpect

    before = snapshot(flat_world)
    child = _spawn(flat_world, "chapter", str(write(tmp_path, "ch.md", EN)))
    child.expect_exact("Record change 1 of 8 (sentence 1)? [y,n,e,a,d,q,?]")
    child.sendline("q")
    child.expect_exact("Nothing recorded.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert snapshot(flat_world) == before
