"""Create and link in the studio: a new node through ``narr new``'s library call, relations added,
edited and removed with the target named by name or alias (suggested as one types), a node
ended by an event; and the careless input a page gets. Each result is confirmed through the
library or the CLI, not through the page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import node_file, read_node
from test_studio import browser, narr_json, studio, world_now
from test_studio_live import _open, slow_double_click

__all__ = ["browser"]

pytestmark = pytest.mark.slow


def _pick(page: Any, node_id: str, title: str) -> None:
    page.click(f"#node-list button[data-id='{node_id}']")
    page.wait_for_function(f"document.querySelector('#node-title').textContent.includes('{title}')")


def _message(page: Any, kind: str) -> str:
    page.wait_for_selector(f"#node-message.{kind}")
    return str(page.inner_text("#node-message"))


def _relate(page: Any, rtype: str, target: str, attrs: str = "") -> None:
    page.evaluate("document.querySelector('#node-message').className = ''")
    page.fill("#relation-type", rtype)
    page.fill("#relation-target", target)
    page.fill("#relation-attrs", attrs)
    page.click("#relation-add")


def test_a_new_node_from_the_page(flat_world: Path, browser: Any) -> None:
    root = flat_world
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        page.click("#new-node-open")
        page.wait_for_selector("#new-node[open]")
        page.select_option("#new-layer", "character")
        page.fill("#new-name", "Wei Lan")
        page.fill("#new-aliases", "魏兰, the healer")
        page.fill("#new-kind", "person")
        page.select_option("#new-lifecycle", "permanent")
        page.fill("#new-summary", "A healer at the ferry")
        # A double click makes one node, and its second click does not land on the page the
        # closed dialog uncovers.
        shown = "document.querySelector('#node-title').textContent.includes('Wei Lan')"
        assert slow_double_click(page, "#new-node-create", shown) == 0
        page.wait_for_function(shown)
        assert "wei-lan" in _message(page, "ok")
        node = read_node(root, "wei-lan")
        assert (node["name"], node["aliases"], node["kind"], node["summary"]) == (
            "Wei Lan", ["魏兰", "the healer"], "person", "A healer at the ferry")
        listed = narr_json(root, "nodes")["items"]
        assert [n["id"] for n in listed if n["id"].startswith("wei-lan")] == ["wei-lan"]
        assert {e["target"] for e in world_now(root, "status")["edits"]} == {"wei-lan"}
        # The same name again, and a name of 10,000 characters: refused, nothing written.
        for name, said in (("Wei Lan", "already used"), ("x" * 10_000, "at most 200")):
            page.click("#new-node-open")
            page.select_option("#new-layer", "character")
            page.evaluate("([n]) => { document.querySelector('#new-name').value = n; }", [name])
            page.click("#new-node-create")
            page.wait_for_function(
                f"document.querySelector('#new-node-message').textContent.includes('{said}')")
            page.click("#new-node-cancel")
        assert {e["target"] for e in world_now(root, "status")["edits"]} == {"wei-lan"}
        context.close()
    assert errors == []


def test_relations_by_name_added_edited_and_removed(flat_world: Path, browser: Any) -> None:
    root = flat_world
    path = node_file(root, "lin-yuan")
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _pick(page, "lin-yuan", "Lin Yuan")
        # The target is suggested by name as one types.
        page.fill("#relation-target", "Elder")
        page.wait_for_function("document.body.dataset.suggested === 'Elder'")
        options = page.eval_on_selector_all("#target-names option", "os => os.map(o => o.value)")
        assert "Elder Mo" in options
        _relate(page, "knows", "Elder Mo", '{"since": "spring"}')
        assert "knows → Elder Mo" in _message(page, "ok")
        assert read_node(root, "lin-yuan")["relations"]["knows"] == {"elder-mo": {"since": "spring"}}
        # Edited: another type and attributes, the target by its Chinese alias.
        page.click("#node-relations button[aria-label='edit knows → Elder Mo']")
        assert page.input_value("#relation-attrs") == '{"since":"spring"}'
        _relate(page, "trusts", "莫长老", '{"since": "winter"}')
        _message(page, "ok")
        relations = read_node(root, "lin-yuan")["relations"]
        assert "knows" not in relations and relations["trusts"] == {"elder-mo": {"since": "winter"}}
        # Removed.
        page.click("#node-relations button[aria-label='remove trusts → Elder Mo']")
        page.wait_for_function(
            "!document.querySelector('#node-relations').textContent.includes('trusts → Elder Mo')")
        assert "trusts" not in read_node(root, "lin-yuan")["relations"]
        # Careless input: a type with '/', attributes that are not JSON, a target that is nobody.
        before = path.read_bytes()
        _relate(page, "knows/likes", "Elder Mo")
        assert "relation type 'knows/likes'" in _message(page, "error")
        _relate(page, "knows", "Elder Mo", "{since: spring}")
        assert "not JSON" in _message(page, "error")
        _relate(page, "knows", "Elder Mo", "[1, 2]")
        assert "JSON object" in _message(page, "error")
        _relate(page, "knows", "Nobody Here At All")
        assert "Nobody Here At All" in _message(page, "error")
        assert path.read_bytes() == before
        context.close()
    assert errors == []


def test_a_node_ended_by_an_event(flat_world: Path, browser: Any) -> None:
    root = flat_world
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _pick(page, "old-zhou", "Old Zhou")
        page.click("#node-end")
        page.wait_for_selector("#end-node[open]")
        page.fill("#end-content", "Old Zhou leaves the ferry for good")
        page.click("#end-node-ok")
        page.wait_for_function("document.querySelector('#ended-note').textContent.includes('has ended')")
        log = world_now(root, "log")
        assert log[0]["content"] == "Old Zhou leaves the ferry for good"
        assert "old-zhou" not in {n["id"] for n in narr_json(root, "nodes")["items"]}
        assert json.dumps(log[0]).count("old-zhou") >= 1
        context.close()
    assert errors == []
