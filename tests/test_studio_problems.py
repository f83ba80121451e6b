"""Problems in view: what ``narr status`` finds is shown where it is, a relation to a node that
does not exist is refused before it is saved, and failed events can be retried or dropped from
the page. Each result is confirmed through the library or the CLI, not through the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import node_file
from test_studio import browser, narr, narr_json, studio, world_now
from test_studio_live import _advanced, _events, _ok, _open, _open_node

__all__ = ["browser"]

pytestmark = pytest.mark.slow


def test_problems_are_shown_where_they_are(flat_world: Path, browser: Any) -> None:
    root = flat_world
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        assert page.locator("#problems").is_hidden()
        # A relation to nothing and a broken file, both written by hand outside the page.
        lin = node_file(root, "lin-yuan")
        node = json.loads(lin.read_text())
        node["relations"]["owes"] = {"nobody-at-all": {}}
        lin.write_text(json.dumps(node, ensure_ascii=False, indent=2))
        su = node_file(root, "su-qing")
        su.write_text(su.read_text()[:-5])
        problems = world_now(root, "status")["problems"]
        assert len(problems) == 2
        page.wait_for_function("document.body.dataset.problems === '2'")
        shown = page.inner_text("#problem-list")
        for text in problems:
            assert text.splitlines()[0] in shown
        page.click("#problem-list button[data-node='lin-yuan']")
        page.wait_for_function("document.querySelector('#node-title').textContent.includes('Lin Yuan')")
        assert "nobody-at-all" in page.inner_text("#node-problems")
        # Mended outside the page: the problems go away in the page too.
        node["relations"].pop("owes")
        lin.write_text(json.dumps(node, ensure_ascii=False, indent=2))
        _ok(narr(root, "reset", "--hard", "HEAD"))
        assert world_now(root, "status")["problems"] == []
        page.wait_for_function("document.body.dataset.problems === '0'")
        assert page.locator("#problems").is_hidden()
        context.close()
    assert errors == []


def test_a_relation_to_a_node_that_does_not_exist_is_refused(served_world: Path, browser: Any) -> None:
    root = served_world
    path = node_file(root, "lin-yuan")
    before = path.read_bytes()
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_node(page, "lin-yuan", "Lin Yuan")
        page.fill("#relation-type", "knows")
        page.fill("#relation-target", "nobody-at-all")
        page.click("#relation-add")
        page.wait_for_selector("#node-message.error")
        said = page.inner_text("#node-message")
        assert "no node named 'nobody-at-all'" in said
        assert "Saved" not in said
        assert path.read_bytes() == before
        assert world_now(root, "status")["edits"] == []
        # The whole file from the editor: refused the same way.
        node = json.loads(page.input_value("#node-editor"))
        node["relations"]["fears"] = {"ghost-of-nobody": {}}
        _advanced(page)
        page.fill("#node-editor", json.dumps(node))
        page.click("#node-save")
        page.wait_for_function("document.querySelector('#node-message').textContent.includes('ghost-of-nobody')")
        said = page.inner_text("#node-message")
        assert "/relations/fears/ghost-of-nobody" in said and "does not exist" in said
        assert path.read_bytes() == before
        context.close()
    assert errors == []


def test_failed_events_are_retried_or_dropped_from_the_page(flat_world: Path, browser: Any) -> None:
    root = flat_world
    assert narr(root, "event", "A ghost appears", "--set", "ghost.state.seen=true").returncode == 12
    assert narr(root, "event", "Lin Yuan changes", "--set", "lin-yuan.traits.speech=loud").returncode == 12
    kept = narr_json(root, "failed")["items"]
    assert [k["content"] for k in kept] == ["Lin Yuan changes", "A ghost appears"]
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _events(page)
        page.wait_for_function("document.body.dataset.failed === '2'")
        assert "no node 'ghost'" in page.inner_text("#failed-list")
        # Still failing: retried, it stays kept and the page says why.
        ghost_key = next(k["key"] for k in kept if k["content"] == "A ghost appears")
        page.click(f"#failed-list li[data-key='{ghost_key}'] button.retry")
        page.wait_for_function("document.querySelector('#compose-out .error')")
        assert "ghost" in page.inner_text("#compose-out")
        assert len(world_now(root, "log")) == 1 and len(narr_json(root, "failed")["items"]) == 2
        # The ghost made, the retry records it and the page forgets it.
        _ok(narr(root, "new", "ambient", "Ghost", "--kind", "spirit"))
        page.click(f"#failed-list li[data-key='{ghost_key}'] button.retry")
        page.wait_for_function("document.body.dataset.failed === '1'")
        assert world_now(root, "log")[0]["content"] == "A ghost appears"
        assert [k["content"] for k in narr_json(root, "failed")["items"]] == ["Lin Yuan changes"]
        # Dropped, after a confirmation; cancelled first, nothing is dropped.
        other = kept[0]["key"]
        page.click(f"#failed-list li[data-key='{other}'] button.drop")
        page.wait_for_selector("#confirm[open]")
        page.click("#confirm-cancel")
        assert len(narr_json(root, "failed")["items"]) == 1
        page.click(f"#failed-list li[data-key='{other}'] button.drop")
        page.click("#confirm-ok")
        page.wait_for_function("document.body.dataset.failed === '0'")
        assert narr_json(root, "failed")["items"] == []
        assert page.locator("#failed").is_hidden()
        context.close()
    assert errors == []


def test_only_new_relations_to_nothing_are_refused(flat_world: Path) -> None:
    """A relation the file already had (its target deleted by hand) does not block other changes."""
    from narrative.engine.handedit import check_new_relations
    from narrative.errors import InvalidInputError
    from narrative.store.worldrepo import WorldRepo

    node_file(flat_world, "lin-xue").unlink()  # lin-yuan's sibling-of lin-xue now points at nothing
    node = json.loads(node_file(flat_world, "lin-yuan").read_text())
    node["state"]["mood"] = "calm"
    with WorldRepo.open(flat_world) as wr:
        check_new_relations(wr, node, "world/lin-yuan.json")
        node["relations"]["knows"] = {"nobody": {}, "su-qing": {}}
        with pytest.raises(InvalidInputError, match="/relations/knows/nobody: points at a node"):
            check_new_relations(wr, node, "world/lin-yuan.json")
