"""A node written as an Obsidian note reads back as the same node, whatever it holds: Markdown that
looks like headings, tags, links or code in its text, values a flat property cannot hold,
relations with attributes, names with the characters a file name cannot have (hypothesis).
And the note is one Obsidian shows: flat properties, relations as links in the body."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from narrative.ids import LAYERS, normalize_name
from narrative.lore.obsidian import parse_note
from narrative.lore.vaultnote import render_note, safe_stem

LINES = st.sampled_from([
    "Plain words.", "# A heading", "## Another", "- a list item", "| a | b |", "|---|---|", "```",
    "> a quote", "See [[Other Note]] and [[Folder/Note|shown]].", "#tag and #1", "  indented",
    "trailing spaces  ", "", "---", "```narr", "- rel:: [[X]]", "名字 [[温乔]]", "Title: text"])
TEXT = st.lists(LINES, min_size=0, max_size=6).map(lambda lines: "\n".join(lines).strip("\n").rstrip())
WORD = st.text(alphabet=st.sampled_from("abcXYZ温乔 #:[]|-."), min_size=1, max_size=8)
NAME = WORD.map(lambda w: " ".join(w.split())).filter(lambda n: bool(normalize_name(n)))
JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.text(max_size=6)
                    | st.floats(allow_nan=False, allow_infinity=False, width=32),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                max_size=3), max_leaves=6)
OTHERS = {"lin-yuan": "Lin Yuan", "old-zhou": "People/Old Zhou"}


@st.composite
def nodes(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(NAME)
    aliases = [a for a in dict.fromkeys(draw(st.lists(NAME, max_size=3)))
               if normalize_name(a) != normalize_name(name)]
    seen: set[str] = set()
    aliases = [a for a in aliases if not (normalize_name(a) in seen or seen.add(normalize_name(a)))]
    relations: dict[str, dict[str, Any]] = {}
    for rtype in draw(st.lists(st.sampled_from(["mentions", "owes", "holds"]), max_size=2, unique=True)):
        relations[rtype] = {dst: draw(st.sampled_from([{}, {"since": "day 2"}, {"n": 3, "x": [1]}]))
                            for dst in draw(st.lists(st.sampled_from(sorted(OTHERS)), min_size=1,
                                                     unique=True))}
    state = draw(st.dictionaries(st.text(min_size=1, max_size=5), JSON | st.sampled_from(sorted(OTHERS)),
                                 max_size=4))
    tags = [t for t in dict.fromkeys(draw(st.lists(st.sampled_from(["river", "主角", "slow burn"]),
                                                   max_size=3)))]
    return {"id": "wen-qiao", "name": name, "layer": draw(st.sampled_from(LAYERS)),
            "kind": draw(st.sampled_from(["", "person", "lamp"])), "aliases": aliases,
            "summary": draw(TEXT), "lifecycle": draw(st.sampled_from(["permanent", "scene"])),
            "traits": draw(st.dictionaries(st.text(min_size=1, max_size=5), JSON, max_size=3)),
            "state": state, "relations": relations, "tags": tags,
            "sections": draw(st.dictionaries(NAME, TEXT, max_size=3)),
            "always_in_view": draw(st.booleans()),
            "extensions": draw(st.sampled_from([{}, {"sillytavern": {"card": {"data": {"x": [{"y": None}]}}}},
                                                {"obsidian": {"properties": {"mood": "ok"}}}]))}


def _back(node: dict[str, Any], path: str) -> dict[str, Any]:
    link_of = {**OTHERS, "wen-qiao": path.removesuffix(".md").rsplit("/", 1)[-1]}
    text = render_note(node, path=path, link_of=link_of)
    entry = parse_note(path, text, "background")
    by_link = {f"[[{v}]]": k for k, v in link_of.items()}
    relations: dict[str, dict[str, Any]] = {}
    for rtype, target, attrs in entry.relations:
        relations.setdefault(rtype, {})[by_link[target]] = attrs
    values = {"traits": dict(entry.traits), "state": dict(entry.state)}
    for field, key, target in entry.value_links:
        values[field][key] = by_link[f"[[{target}]]"]
    ext = dict(entry.extensions)
    obsidian = dict(ext.pop("obsidian", {}))
    obsidian.pop("path", None)
    if obsidian:
        ext["obsidian"] = obsidian
    return {"id": entry.ref, "name": entry.name, "layer": entry.layer, "kind": entry.kind,
            "aliases": entry.aliases, "summary": entry.summary, "lifecycle": entry.lifecycle,
            "traits": values["traits"], "state": values["state"], "relations": relations,
            "tags": entry.tags, "sections": entry.sections, "always_in_view": entry.always_in_view,
            "extensions": ext}


@given(nodes())
def test_a_note_reads_back_as_the_node_it_was_written_from(node: dict[str, Any]) -> None:
    path = f"Background/{safe_stem(node['name']) or 'wen-qiao'}.md"
    assert _back(node, path) == node
    text = render_note(node, path=path, link_of={**OTHERS, "wen-qiao": "Wen Qiao"})
    # flat properties only: text, numbers, checkboxes, lists of those
    for value in _front(text).values():
        assert isinstance(value, str | int | float | bool) or (
            isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value)), value
    for rtype, targets in node["relations"].items():
        for dst in targets:
            assert f"- {rtype}:: [[{OTHERS[dst]}]]" in text  # a link Obsidian's graph shows


def _front(text: str) -> dict[str, Any]:
    import yaml

    loaded: dict[str, Any] = yaml.safe_load(text.split("---\n", 2)[1])
    return loaded


# -- what SillyTavern changed in an entry's text, back to the part it belongs to --------------

PARAGRAPH = st.lists(st.sampled_from(["The ferry", "a lamp", "{{user}}", "| a | b |", "- item", "温乔"]),
                     min_size=1, max_size=3).map(" ".join)


@st.composite
def entries(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A node's text parts, each paragraph marked by where it is so that no two are the same."""
    summary = "\n\n".join(f"{p} (summary {i})" for i, p in enumerate(draw(st.lists(PARAGRAPH, max_size=3))))
    titles = draw(st.lists(st.sampled_from(["Habits", "秘密", "Past", "Debts"]), max_size=3, unique=True))
    sections = {t: "\n\n".join(f"{p} ({t} {i})" for i, p in enumerate(draw(st.lists(PARAGRAPH, min_size=1,
                                                                                     max_size=2))))
                for t in titles}
    state = draw(st.dictionaries(st.sampled_from(["mood", "coins", "place"]),
                                 st.sampled_from(["calm", 3, True]), max_size=3))
    tails = [("state", "Now: " + "; ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}"
                                           for k, v in sorted(state.items())) + ".")] if state else []
    return {"summary": summary, "sections": sections, "state": state}, tails


@given(entries(), st.data())
def test_a_changed_part_comes_home_as_that_part(entry: tuple[dict[str, Any], list[tuple[str, str]]],
                                                data: st.DataObject) -> None:
    from narrative.lore import homecoming, sillytavern

    node, tails = entry
    content, parts = sillytavern.render_content(node, tails)
    digest = sillytavern.text_digest(content)
    assert homecoming.content_edits(node, parts, content, digest) == ([], [])
    choices = [("summary", "")] if node["summary"] else []
    choices += [("section", t) for t in node["sections"]] + [("state", k) for k in node["state"]]
    if not choices:
        return
    kind, which = data.draw(st.sampled_from(choices))
    if kind == "summary":
        new = node["summary"] + "\n\nAdded in SillyTavern."
        edited = content.replace(node["summary"], new, 1)
        want = [("/summary", new)]
    elif kind == "section":
        text = node["sections"][which]
        new = text.replace("(", "(edited ", 1)
        edited = content.replace(f"{which}: {text}", f"{which}: {new}", 1)
        want = [(f"/sections/{which}", new)]
    else:
        old = node["state"][which]
        said = str(old).lower() if isinstance(old, bool) else str(old)
        edited = content.replace(f"{which}: {said}", f"{which}: tired", 1)
        want = [(f"/state/{which}", "tired")]
    edits, notes = homecoming.content_edits(node, parts, edited, digest)
    assert [(e.field, e.new) for e in edits] == want and notes == []
