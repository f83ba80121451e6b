"""A node edited as a form: only the fields changed are written (another writer's change to
another field is kept, a change to the same field is a conflict with both values), names
become ids in reference fields, and careless or hostile input changes nothing. The engine
first, then the page against a second tab."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import edit_node, node_file, read_node

from narrative.engine.nodeform import FieldChange, changes_between, form_offer, parse_changes, patch_node
from narrative.engine.studio import world_view
from narrative.errors import ConflictError, InvalidInputError, InvalidWorldError, NotFoundError
from narrative.fields import ABSENT
from narrative.store.worldrepo import WorldRepo


def test_only_the_fields_changed_are_written(flat_world: Path) -> None:
    with WorldRepo.open(flat_world) as wr:
        loaded = read_node(flat_world, "lin-yuan")
        edit_node(flat_world, "lin-yuan", mood="tired")  # another writer, meanwhile
        done = patch_node(wr, "lin-yuan", [FieldChange("/state/health", "unhurt", "a cut on the hand"),
                                           FieldChange("/state/wounds", ABSENT, ["left hand"])])
        assert done["changed"] == ["/state/health", "/state/wounds"]
        state = read_node(flat_world, "lin-yuan")["state"]
        assert (state["mood"], state["health"], state["wounds"]) == (
            "tired", "a cut on the hand", ["left hand"])
        # The same field changed elsewhere to something else: a conflict, both values, nothing written.
        before = node_file(flat_world, "lin-yuan").read_bytes()
        with pytest.raises(ConflictError, match="/state/mood changed since it was loaded") as caught:
            patch_node(wr, "lin-yuan", [FieldChange("/state/mood", loaded["state"]["mood"], "resolved")])
        assert caught.value.conflicts == [{"node": "lin-yuan", "field": "/state/mood", "was": "anxious",
                                           "yours": "resolved", "now": "tired"}]
        assert node_file(flat_world, "lin-yuan").read_bytes() == before
        # Forced, the writer's value wins; changed elsewhere to the same value, no conflict at all.
        mood = FieldChange("/state/mood", "anxious", "resolved")
        patch_node(wr, "lin-yuan", [mood], force=["/state/mood"])
        assert read_node(flat_world, "lin-yuan")["state"]["mood"] == "resolved"
        assert patch_node(wr, "lin-yuan", [mood])["changed"] == []
        # Saved twice: the second finds it done.
        assert patch_node(wr, "lin-yuan", [FieldChange("/state/health", "unhurt", "a cut on the hand")])[
            "changed"] == []
        # A name picked in a reference field is stored as the node's id; a relation removed.
        patch_node(wr, "lin-yuan", [
            FieldChange("/state/location", "qingyun-gate", "Cold River Ferry", named=True),
            FieldChange("/relations/distrusts/su-qing", {})])
        node = read_node(flat_world, "lin-yuan")
        assert node["state"]["location"] == "ferry" and "distrusts" not in node["relations"]


@pytest.mark.parametrize(("change", "said"), [
    (FieldChange("/state/__proto__", ABSENT, "x"), "'__proto__'"),
    (FieldChange("/constructor/prototype/x", ABSENT, "x"), "'constructor'"),
    (FieldChange("/id", "lin-yuan", "someone"), "'id' of a node is not changed"),
    (FieldChange("/layer", "character", "item"), "'layer'"),
    (FieldChange("state.mood", "anxious", "x"), "JSON pointer"),
    (FieldChange("/state//mood", ABSENT, "x"), "empty field name"),
    (FieldChange("/name", "Lin Yuan", "x" * 10_000), "at most 200"),
    (FieldChange("/relations/knows~1likes/su-qing", ABSENT, {}), "relation type"),
    (FieldChange("/relations/knows/nobody-at-all", ABSENT, {}), "does not exist"),
    (FieldChange("/state/location", "qingyun-gate", "Nobody At All", named=True), "Nobody At All"),
    (FieldChange("/aliases", ["林远", "Yuan", "the outer disciple"], "林远"), "aliases"),
])
def test_careless_changes_are_refused_and_write_nothing(flat_world: Path, change: FieldChange,
                                                        said: str) -> None:
    before = node_file(flat_world, "lin-yuan").read_bytes()
    refused = (InvalidInputError, InvalidWorldError, NotFoundError)
    with WorldRepo.open(flat_world) as wr, pytest.raises(refused) as caught:
        patch_node(wr, "lin-yuan", [change])
    assert said in str(caught.value), caught.value
    assert node_file(flat_world, "lin-yuan").read_bytes() == before


def test_changes_as_json_and_from_a_whole_node() -> None:
    assert parse_changes([{"field": "/state/mood", "old": "a"}]) == [FieldChange("/state/mood", "a")]
    for bad in ([], [{"field": 3}], [{"field": "/x", "extra": 1}], "nope", [{"field": "/x", "named": True}]):
        with pytest.raises(InvalidInputError):
            parse_changes(bad)
    base = {"id": "a", "name": "A", "state": {"mood": "x"}, "relations": {"knows": {"b": {}}}}
    edited = {"id": "a", "name": "A", "state": {"mood": "y", "new": 1}, "relations": {}}
    assert changes_between("a", base, edited) == [
        FieldChange("/relations/knows/b", {}, ABSENT), FieldChange("/state/mood", "x", "y"),
        FieldChange("/state/new", ABSENT, 1)]


def _view(wr: WorldRepo) -> object:
    from narrative.store import worktree
    from narrative.store.view import WorldView

    head = wr.head_commit()
    return WorldView(wr, head.tree, worktree.scan_for_reader(wr, head.tree))


def test_a_form_offers_what_others_of_its_kind_have(flat_world: Path) -> None:
    from narrative.engine.studio import node_view

    with WorldRepo.open(flat_world) as wr:
        offer = node_view(wr, "su-qing")["offer"]
        assert offer == form_offer(wr, read_node(flat_world, "su-qing"), _view(wr),
                                   ["lin-yuan", "elder-mo", "lin-xue", "old-zhou"])
        assert offer["fields"]["state"]["location"] >= 3 and "speech" in offer["fields"]["traits"]
        assert "/state/location" in offer["references"] and "/state/holder" in offer["references"]
        assert {"sibling-of", "holds", "member-of"} <= set(offer["relation_types"])


def test_a_big_selection_is_drawn_as_clusters(flat_world: Path) -> None:
    with WorldRepo.open(flat_world) as wr:
        auto = world_view(wr, group="auto", draw=10).to_json()
        assert auto["group"] == "layer" and auto["graph"]["nodes"] == []
        clusters = {c["key"]: c["count"] for c in auto["graph"]["clusters"]}
        assert clusters == {"layer:background": 10, "layer:character": 5, "layer:item": 4, "layer:ambient": 3}
        assert world_view(wr, group="auto").to_json()["group"] is None  # all 22 fit
        opened = world_view(wr, group="layer", expand=["layer:character"], draw=3).to_json()
        drawn = {n["id"]: n["cluster"] for n in opened["graph"]["nodes"]}
        assert len(drawn) == 3 and set(drawn.values()) == {"layer:character"}
        assert "layer:character" not in {c["key"] for c in opened["graph"]["clusters"]}
        ends = {e["source"] for e in opened["graph"]["cluster_edges"]} | {
            e["target"] for e in opened["graph"]["cluster_edges"]}
        assert ends <= set(drawn) | {c["key"] for c in opened["graph"]["clusters"]}
        by_place = world_view(wr, group="place").to_json()["graph"]["clusters"]
        places = {c["label"]: c["count"] for c in by_place}
        assert places["Cold River Ferry"] >= 2 and "nowhere" in places
        kinds = world_view(wr, group="kind", layers=["character"]).to_json()["graph"]["clusters"]
        assert [(c["label"], c["count"]) for c in kinds] == [("person", 5)]
        with pytest.raises(InvalidInputError, match="unknown group"):
            world_view(wr, group="colour")


def test_the_list_is_in_the_order_of_the_names(flat_world: Path) -> None:
    with WorldRepo.open(flat_world) as wr:
        names = [n["name"] for n in world_view(wr).to_json()["nodes"]]
        assert names == sorted(names, key=str.casefold)
        found = [n["id"] for n in world_view(wr, query="lin").to_json()["nodes"]]
        assert found[:2] == ["lin-xue", "lin-yuan"]


# --- in the browser ----------------------------------------------------------------------------

from test_studio import browser, studio, world_now  # noqa: E402
from test_studio_live import _open, _open_node  # noqa: E402

__all__ = ["browser"]


@pytest.mark.slow
def test_the_form_saves_only_what_was_changed_against_a_second_tab(flat_world: Path, browser: Any) -> None:
    root = flat_world
    with studio(root) as info:
        one_ctx, one, errors = _open(browser, info["url"])
        two_ctx, two, errors2 = _open(browser, info["url"])
        for page in (one, two):
            _open_node(page, "lin-yuan", "Lin Yuan")
        # The summary is a text area, the whole of it; traits and state are labelled fields.
        summary = one.input_value("#node-form textarea[data-path='summary']")
        assert summary == read_node(root, "lin-yuan")["summary"]
        assert one.locator("#node-fields label", has_text="mood").count() == 1
        # Tab two changes the mood; tab one, loaded before, changes the summary and its health.
        two.fill("#node-fields [data-path='state.mood']", "resolved")
        two.click("#node-form-save")
        two.wait_for_selector("#node-message.ok")
        one.fill("#node-form textarea[data-path='summary']",
                 "Outer disciple, looking for Xue.\nHe does not sleep.")
        one.fill("#node-fields [data-path='state.health']", "a cut on the hand")
        sent: list[Any] = []
        one.on("request", lambda r: sent.append(json.loads(r.post_data or "{}"))
               if r.url.endswith("/api/studio/fields") else None)
        one.click("#node-form-save")
        one.wait_for_selector("#node-message.ok")
        assert [c["field"] for c in sent[0]["changes"]] == ["/summary", "/state/health"]
        node = read_node(root, "lin-yuan")
        assert node["state"]["mood"] == "resolved"  # tab two's, kept
        assert node["state"]["health"] == "a cut on the hand"
        assert node["summary"] == "Outer disciple, looking for Xue.\nHe does not sleep."
        # Saved twice: the second press finds nothing changed and writes nothing.
        one.click("#node-form-save")
        one.wait_for_function("document.querySelector('#node-message').textContent.includes('Nothing')")
        assert len(sent) == 1
        # The same field in both tabs: the second is shown both values and chooses.
        two.wait_for_function("document.querySelector(\"#node-fields [data-path='state.health']\").value"
                              " === 'a cut on the hand'")
        two.fill("#node-fields [data-path='state.mood']", "furious")  # not saved yet
        refreshed = int(two.evaluate("Number(document.body.dataset.refreshed || 0)"))
        one.fill("#node-fields [data-path='state.mood']", "calm")
        one.click("#node-form-save")
        one.wait_for_selector("#node-message.ok")
        two.wait_for_function(f"Number(document.body.dataset.refreshed || 0) > {refreshed}")
        assert two.input_value("#node-fields [data-path='state.mood']") == "furious"  # kept
        two.click("#node-form-save")
        two.wait_for_selector("#conflicts:not([hidden])")
        said = two.inner_text("#conflicts")
        assert "calm" in said and "furious" in said, said
        assert read_node(root, "lin-yuan")["state"]["mood"] == "calm"
        two.click("#conflicts button.keep-mine")
        two.wait_for_selector("#node-message.ok")
        assert read_node(root, "lin-yuan")["state"]["mood"] == "furious"
        # A name of 10,000 characters (the box stops at 200; a script does not): refused, with
        # the limit every door gives, and nothing written.
        before = node_file(root, "lin-yuan").read_bytes()
        assert two.get_attribute("#f-name", "maxlength") == "200"
        two.evaluate("document.querySelector('#f-name').value = 'x'.repeat(10000)")
        two.click("#node-form-save")
        two.wait_for_selector("#node-message.error")
        assert "at most 200" in two.inner_text("#node-message")
        assert node_file(root, "lin-yuan").read_bytes() == before
        assert world_now(root, "status")["problems"] == []
        one_ctx.close()
        two_ctx.close()
    assert errors == errors2 == []


@pytest.mark.slow
def test_fields_by_kind_and_names_in_reference_fields(flat_world: Path, browser: Any) -> None:
    root = flat_world
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        _open_node(page, "old-zhou", "Old Zhou")
        # Fields other persons have are offered, empty; filling one adds it.
        offered = page.eval_on_selector_all("#node-fields [data-offered]",
                                            "es => es.map(e => e.dataset.path)")
        assert "traits.pronouns" in offered or "state.goal" in offered, offered
        # Where he stands is a name picker: the name shown, the id stored.
        where = page.locator("#node-fields [data-path='state.location']")
        assert where.input_value() == "Cold River Ferry"
        where.fill("Qingyun Gate")
        page.click("#node-form-save")
        page.wait_for_selector("#node-message.ok")
        assert read_node(root, "old-zhou")["state"]["location"] == "qingyun-gate"
        # A field of a kind unknown to the world: added by name; no JSON path to know.
        page.select_option("#field-group", "state")
        page.fill("#field-path", "wounds")
        page.fill("#field-value", "a bad knee")
        page.click("#field-set")  # added and saved, that field alone
        page.wait_for_selector("#node-fields [data-path='state.wounds']")
        page.wait_for_selector("#node-message.ok")
        assert read_node(root, "old-zhou")["state"]["wounds"] == "a bad knee"
        assert page.eval_on_selector_all("#field-form input", "is => is.map(i => i.value)") == ["", ""]
        context.close()
    assert errors == []


def test_what_a_past_world_carries_forward_equals_a_fresh_count(flat_world: Path) -> None:
    """The order of names, the facets and the clusters a slider step derives from the world
    now (redoing only the nodes an event changed) are what a pass over that world gives."""
    from helpers import CLI

    from narrative.engine import studio as st

    narr = CLI(flat_world)
    narr("new", "character", "Wei Lan", "--kind", "healer")
    narr("event", "Wei Lan arrives", "--relate", "Wei Lan:knows:Old Zhou", "--diffuser", "explicit")
    narr("event", "Old Zhou is gone", "--expire", "old-zhou", "--diffuser", "explicit")
    narr("event", "Su Qing takes the ring", "--set", "black-ring.state.holder=su-qing",
         "--set", "su-qing.kind=spy", "--diffuser", "explicit")
    edit_node(flat_world, "elder-mo", kind="sage", name="Aardvark Mo")  # a hand edit, now
    commits = [e["commit"] for e in narr.json("log")["items"]]
    with WorldRepo.open(flat_world) as wr:
        st._CACHE.clear()
        for by in ("layer", "kind"):
            world_view(wr, group=by, draw=0)  # the world now, counted once
        for at in [None, *commits]:
            for by in ("layer", "kind"):
                got = world_view(wr, at=at, group=by, draw=0).to_json()
                if at is None:
                    fresh = st._with_edits(wr, st._base(wr, None, parse=True))
                else:
                    fresh = st._base(wr, st.resolve_rev(wr, at).id, parse=True)
                _, clusters, edges, _ = st._grouped(fresh, fresh.by_name(), by, set(), 0,
                                                       wr.config.reference_labels, lambda n: 0)
                assert got["graph"]["clusters"] == clusters, (at, by)
                assert got["graph"]["cluster_edges"] == edges, (at, by)
                assert [n["id"] for n in got["nodes"]] == fresh.by_name()[:200]
                assert got["facets"] == fresh.facets()
            if at is not None:  # carried from the world now, not counted again
                carried = st._base(wr, st.resolve_rev(wr, at).id).memo
                assert {"by_name", "facets", "counts:layer", "sizes:layer", "counts:kind"} <= carried.keys()
