"""``narr brief`` as Markdown, as the story stood at a revision, and the health a wake-up brief
leads with (what stops the next event, and the command that fixes it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import CLI, edit_node, git, node_file


@pytest.fixture
def three(flat_world: Path) -> CLI:
    narr = CLI(flat_world)
    narr("event", "Lin Yuan walks to the ferry")
    narr("event", "Lin Yuan is calm", "--set", "lin-yuan.state.mood=calm")
    narr("event", "Lin Yuan grows angry", "--set", "lin-yuan.state.mood=angry")
    return narr


def _lin_yuan(b: dict) -> str:
    return next(i["text"] for i in b["items"] if i["section"] == "focus" and i["node"] == "lin-yuan")


def test_brief_at_a_past_revision(three: CLI) -> None:
    narr, root = three, three.root
    edit_node(root, "su-qing", mood="restless")  # a hand edit: in the present, never in the past
    now = narr.json("brief", "--budget", "100000")
    past = narr.json("brief", "--at", "HEAD~2", "--budget", "100000")
    assert (now["at"], past["at"]) == (None, "HEAD~2")
    assert past["head"]["content"] == "Lin Yuan walks to the ferry"
    assert past["head"]["commit"] == git(root, "rev-parse", "HEAD~2").strip()
    assert [i["text"] for i in now["items"] if i["section"] == "events"] == [
        "Lin Yuan grows angry", "Lin Yuan is calm", "Lin Yuan walks to the ferry"]
    assert [i["text"] for i in past["items"] if i["section"] == "events"] == [
        "Lin Yuan walks to the ferry"]
    assert now["items"][0]["section"] == "hand edits"
    assert {"hand edits", "health"}.isdisjoint(i["section"] for i in past["items"])
    assert "mood=angry" in _lin_yuan(now) and "mood=anxious" in _lin_yuan(past)
    assert past["focus"] == ["lin-yuan"]  # what the last event up to then changed
    reasons = {i["node"]: i["reason"] for i in past["items"] if i["section"] == "open threads"}
    assert reasons["missing-sister"] == "an open thread, not moved in the 1 event so far"
    assert "not moved in the 3 events so far" in " ".join(
        i["reason"] for i in now["items"] if i["section"] == "open threads")
    # the present comes back whole after a look at the past (the catalog follows each tree)
    assert narr.json("brief", "--budget", "100000") == now
    assert narr("brief", "--at", "HEAD~2").stdout.startswith(
        f"Story at {past['head']['commit'][:10]} Lin Yuan walks to the ferry (as it stood at HEAD~2)")
    assert "nowhere" in narr("brief", "--at", "nowhere", expect=11).stderr


def test_brief_as_markdown(three: CLI) -> None:
    narr, root = three, three.root
    edit_node(root, "su-qing", mood="restless")
    md = narr("brief", "--format", "md").stdout
    head = git(root, "rev-parse", "HEAD").strip()[:10]
    assert md.startswith(
        "# Brief: where the story stands\n\n"
        f"Story at {head} Lin Yuan grows angry; focus: lin-yuan.\n\n"
        "## Hand edits\n\n"
        '- su-qing /state/mood: "watchful" → "restless" '
        "*(a hand edit not yet recorded: it overrides the history)*\n\n"
        "## Focus\n\n- Lin Yuan (lin-yuan, character/person): ")
    d = narr.json("brief")
    tail = f"; {d['dropped']} more left out" if d["dropped"] else ""
    assert md.endswith(f"\n\n{d['used']} of 4000 characters{tail}.\n")
    small = narr("brief", "--budget", "300", "--format", "md").stdout
    assert small.endswith(f"{narr.json('brief', '--budget', '300')['used']} of 300 characters; "
                          f"{narr.json('brief', '--budget', '300')['dropped']} more left out.\n")
    assert [line[3:] for line in md.splitlines() if line.startswith("## ")] == list(
        dict.fromkeys(i["section"][:1].upper() + i["section"][1:] for i in d["items"]))
    assert sum(line.startswith("- ") for line in md.splitlines()) == len(d["items"])
    assert json.loads(narr("brief", "--format", "json").stdout) == d
    goal = narr("brief", "Su Qing at the ferry", "--at", "HEAD~1", "--format", "md").stdout
    assert goal.startswith("# Brief: Su Qing at the ferry\n\nStory at ")
    assert "(as it stood at HEAD~1); focus: su-qing, ferry.\n" in goal
    from narrative.api import brief
    from narrative.store.worldrepo import WorldRepo

    wr = WorldRepo.open(root)
    try:
        assert brief(wr).to_markdown() == md
    finally:
        wr.close()
    assert narr("brief", "--format", "html", expect=2).stderr


def test_the_wake_up_brief_leads_with_its_health(three: CLI) -> None:
    narr, root = three, three.root
    assert "health" not in {i["section"] for i in narr.json("brief")["items"]}
    path = node_file(root, "su-qing")
    rel = path.relative_to(root).as_posix()
    good = path.read_text(encoding="utf-8")
    path.write_text('{"id": "su-qing",', encoding="utf-8")
    first = narr.json("brief")["items"][0]
    assert first == {
        "section": "health",
        "reason": "a hand-edited file narr cannot read: the next event refuses until it is fixed",
        "text": f"{rel}: line 1, column 18: Expecting property name enclosed in double quotes",
        "fix": "narr edit su-qing"}
    text = narr("brief").stdout.splitlines()
    assert text[1:6] == ["", "health:", f"  {first['text']}", f"    ({first['reason']})",
                         "    fix: narr edit su-qing"]
    assert "health" not in {i["section"] for i in narr.json("brief", "--pov", "lin-yuan")["items"]}

    path.write_text(good, encoding="utf-8")
    edit_node(root, "su-qing", mood="restless")
    git(root, "commit", "-qam", "Su Qing, by hand")  # a plain git commit narr did not make
    last = git(root, "rev-parse", "HEAD~1").strip()
    b = narr.json("brief")
    assert b["items"][0] == {
        "section": "health",
        "reason": "no event explains its changes: adopting makes them hand edits again, which "
                  "the next event records",
        "text": f"HEAD {git(root, 'rev-parse', 'HEAD').strip()[:10]} 'Su Qing, by hand' is a plain "
                f"git commit that changes world/ after the last event {last[:10]} "
                "'Lin Yuan grows angry'",
        "fix": "narr adopt"}
    assert [i["section"] for i in narr.json("brief", "--at", "HEAD")["items"]].count("health") == 0
    git(root, "commit", "-q", "--allow-empty", "-m", "notes")
    two = narr.json("brief")["items"][0]
    assert two["text"] == (f"HEAD {git(root, 'rev-parse', 'HEAD').strip()[:10]} 'notes' and the "
                           "commit under it are plain git commits that change world/ after the "
                           f"last event {last[:10]} 'Lin Yuan grows angry'")
    assert two["reason"].startswith("no event explains their changes") and two["fix"] == "narr adopt"
    narr("adopt")
    assert "health" not in {i["section"] for i in narr.json("brief")["items"]}
    (root / ".git" / "narr" / "journal.json").write_text("{torn", encoding="utf-8")  # a crash's
    crash = narr.json("brief")["items"][0]
    assert crash["reason"] == "a write a crash interrupted, finished (or dropped) just now"
    assert crash["text"].startswith("a journal narr did not write (or that is damaged) was found")
    assert "health" not in {i["section"] for i in narr.json("brief")["items"]}  # said once
    head = git(root, "rev-parse", "HEAD").strip()
    (root / ".git" / "MERGE_HEAD").write_text(head + "\n", encoding="utf-8")  # git stopped mid-merge
    op = narr.json("brief")["items"][0]
    assert (op["section"], op["text"]) == (
        "health", "a git merge is in progress in this repository; narr will not move the story under it")
    assert op["fix"].startswith("finish it (git commit")


def test_a_stopped_merge_in_the_wake_up_brief(three: CLI) -> None:
    narr = three
    narr("branch", "side")
    narr("event", "Lin Yuan rests", "--set", "lin-yuan.state.mood=tired")
    narr("switch", "side")
    narr("event", "Lin Yuan laughs", "--set", "lin-yuan.state.mood=merry")
    narr("switch", "main")
    narr("merge", "side", expect=14)  # stops on the mood
    assert narr.json("brief")["items"][0] == {
        "section": "health",
        "reason": "no event can be recorded until the merge goes on (narr resolve NODE FIELD for "
                  "each conflict, then narr merge --continue) or is dropped (narr merge --abort)",
        "text": "a narr merge of side stopped on conflicts: 1 of 1 unresolved",
        "fix": "narr conflicts"}
    narr("resolve", "lin-yuan", "/state/mood", "--theirs")
    assert narr.json("brief")["items"][0]["text"] == (
        "a narr merge of side stopped on conflicts: 0 of 1 unresolved")
    narr("merge", "--abort")
    assert "health" not in {i["section"] for i in narr.json("brief")["items"]}
