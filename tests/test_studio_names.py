"""Names first in the studio: labels are names with the alias in another script beside them,
fields holding a node's id show that node's name as a link, ids only in a secondary place.
What the page shows is compared with what the library says the names are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_studio import browser, studio
from test_studio_live import _open, _open_node

__all__ = ["browser"]


def _names(root: Path, *ids: str) -> dict[str, Any]:
    from narrative.engine.studio import names_of
    from narrative.store.worldrepo import WorldRepo

    with WorldRepo.open(root) as wr:
        return names_of(wr, ids)


def test_the_alias_shown_is_in_another_script(flat_world: Path) -> None:
    from narrative.api import world_view
    from narrative.engine.studio import shown_aliases
    from narrative.store.worldrepo import WorldRepo

    assert shown_aliases("林远", ["林远", "Lin Yuan", "Yuan"]) == ["Lin Yuan", "Yuan"]
    assert shown_aliases("Lin Yuan", ["林远", "Yuan", "the outer disciple"]) == ["林远"]
    assert shown_aliases("Ferry", ["ferry", "FERRY"]) == []
    with WorldRepo.open(flat_world) as wr:
        rows = {r["id"]: r for r in world_view(wr).to_json()["nodes"]}
    assert rows["su-qing-doubt"]["aliases"] == ["Su Qing's doubt"]  # not 苏晴的疑心 twice
    assert rows["lin-yuan"]["aliases"] == ["林远"]
    assert rows["ferry"]["aliases"] == ["寒江渡口", "渡口"]


@pytest.mark.slow
def test_the_page_shows_names_and_links_them(flat_world: Path, browser: Any) -> None:
    root = flat_world
    names = _names(root, "su-qing-doubt", "ferry", "lin-xue", "old-zhou")
    with studio(root) as info:
        context, page, errors = _open(browser, info["url"])
        # A Chinese-named node with an English alias: its name, then the alias; never the name twice.
        row = page.inner_text("#node-list button[data-id='su-qing-doubt']")
        assert names["su-qing-doubt"]["name"] in row and "Su Qing's doubt" in row
        assert row.count(names["su-qing-doubt"]["name"]) == 1
        # A field holding a node's id shows that node's name, as a link to it.
        _open_node(page, "old-zhou", "Old Zhou")
        link = page.locator("#node-fields button.link[data-node='ferry']")
        assert names["ferry"]["name"] in link.inner_text()
        link.click()
        page.wait_for_function(
            f"document.querySelector('#node-title').textContent.includes({names['ferry']['name']!r})")
        assert "ferry" in page.inner_text("#node-sub")  # the id: on the secondary line
        # Relations by name, the id beside it.
        _open_node(page, "lin-yuan", "Lin Yuan")
        item = page.inner_text("#node-relations li[data-type='sibling-of'][data-target='lin-xue']")
        assert item.startswith(f"sibling-of → {names['lin-xue']['name']}") and "林雪" in item
        context.close()
    assert errors == []
