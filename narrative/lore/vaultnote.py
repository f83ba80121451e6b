"""A node as an Obsidian note (``narr export vault``), written so that Obsidian shows the world and
:func:`narrative.lore.obsidian.parse_note` reads the same node back.

The note, top to bottom:

- **front matter** of flat properties only, the types Obsidian's properties hold (text, list,
  number, checkbox): ``narr-id``, ``name`` (when the file name cannot hold it), ``layer``,
  ``kind``, ``aliases``, ``tags``, ``lifecycle`` (when not permanent), ``always_in_view`` (when
  set), one ``traits.KEY`` or ``state.KEY`` per field whose value is flat (a value naming a node
  as that node's ``[[link]]``), then the writer's own properties a vault import kept;
- the **summary** and one ``## Title`` section per section, as Markdown, as they are;
- a ``## Relations`` section: a line per relation, ``- type:: [[Note]]`` (attributes as a JSON
  object after the link), so that Obsidian's graph and backlinks show every edge;
- a fenced ``narr`` block holding, as JSON, what the rest cannot hold exactly: other tools'
  records (``extensions``), values that are not flat, and a field whose text Markdown would
  read otherwise (a summary starting with a heading, a section holding one): the note is
  parsed back as it is written, and each field that does not come back the same moves there.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from narrative.lore.obsidian import DATA_FENCE, RELATIONS_SECTION, parse_note

_UNSAFE_IN_NAMES: Final = re.compile(r'[*"\\/<>:|?#^\[\]\x00-\x1f]')
BLOCK_FIELDS: Final = ("name", "kind", "aliases", "tags", "summary", "sections", "traits", "state",
                       "extensions")


def safe_stem(name: str) -> str:
    """``name`` as a note's file name: the characters Obsidian refuses in links and file names
    (``* " \\ / < > : | ? # ^ [ ]``) as ``-``, no leading dot."""
    stem = " ".join(_UNSAFE_IN_NAMES.sub("-", name).split()).strip(" .")
    return stem[:120]


def default_paths(name: str, layer: str, node_id: str) -> tuple[str, str]:
    """Where ``narr export vault`` puts a node that has no path of its own (the second when
    another note has the first's path)."""
    from narrative.lore.codexmd import LAYER_TITLES

    stem = safe_stem(name) or node_id
    folder = LAYER_TITLES.get(layer, "Background")
    return f"{folder}/{stem}.md", f"{folder}/{stem} ({node_id}).md"


def _flat(value: Any) -> bool:
    """A value an Obsidian property holds as it is: text, a number, a checkbox, a list of those."""
    if isinstance(value, str | bool | int | float):
        return True
    return isinstance(value, list) and all(isinstance(v, str | bool | int | float) for v in value)


def render_note(node: dict[str, Any], *, path: str, link_of: dict[str, str]) -> str:
    """The note of ``node`` at ``path`` (module docstring); ``link_of``: node id -> what a link
    to its note says (its file name, or its path where file names repeat)."""
    from narrative.lore.wikilinks import link_text

    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    wanted = {k: node.get(k) for k in BLOCK_FIELDS}
    wanted["extensions"] = _expected_extensions(node, path)
    as_links: dict[str, dict[str, str]] = {}
    for field in ("traits", "state"):
        for key, value in (node.get(field) or {}).items():
            if isinstance(value, str) and value in link_of:
                as_links.setdefault(field, {})[key] = value
    relations = []
    for rtype, targets in sorted((node.get("relations") or {}).items()):
        for dst, attrs in sorted(targets.items()):
            line = f"- {rtype}:: [[{link_of.get(dst, dst)}]]"
            if attrs:
                line += " " + json.dumps(attrs, ensure_ascii=False, sort_keys=True)
            relations.append(line)
    in_block: set[str] = set()
    for _ in range(len(BLOCK_FIELDS) + 1):  # each round moves one field
        text = _write(node, stem, link_of, as_links, relations, in_block, path)
        back = parse_note(path, text, str(node["layer"]))
        got = {"name": back.name, "kind": back.kind, "aliases": back.aliases, "tags": back.tags,
               "summary": back.summary, "sections": back.sections, "extensions": back.extensions}
        for field in ("traits", "state"):
            values = dict(getattr(back, field))
            for f, key, _ in back.value_links:
                if f == field and as_links.get(field, {}).get(key) is not None \
                        and link_text(values[key]) == link_of[as_links[field][key]]:
                    values[key] = as_links[field][key]
            got[field] = values
        wrong = [f for f in BLOCK_FIELDS if _norm(f, got[f]) != _norm(f, wanted[f]) and f not in in_block]
        if not wrong:
            return text
        # one at a time, the text first: a section holding a heading misreads the summary too,
        # a summary starting with one reads as a title (and an alias)
        in_block.add(next((f for f in ("sections", "summary") if f in wrong), wrong[0]))
    return text  # every field in the block, which reads back as written


def _norm(field: str, value: Any) -> Any:
    if field in ("aliases", "tags"):
        return list(value or [])
    if field in ("sections", "traits", "state", "extensions"):
        return dict(value or {})
    return value if value is not None else ""


def _expected_extensions(node: dict[str, Any], path: str) -> dict[str, Any]:
    """The node's extensions as the note at ``path`` reads back: the path it lies at is where
    a vault import found it, unless the note lies where narr puts such a node by default."""
    ext = dict(node.get("extensions") or {})
    obsidian = dict(ext.get("obsidian") or {})
    if path not in default_paths(str(node.get("name", "")), str(node.get("layer", "")), str(node["id"])) \
            or "path" in obsidian:
        obsidian["path"] = path
    if obsidian:
        ext["obsidian"] = obsidian
    return ext


def _write(node: dict[str, Any], stem: str, link_of: dict[str, str], as_links: dict[str, dict[str, str]],
           relations: list[str], in_block: set[str], path: str) -> str:
    import yaml

    meta: dict[str, Any] = {"narr-id": node["id"]}
    block: dict[str, Any] = {}
    if node.get("name") != stem and "name" not in in_block:
        meta["name"] = node["name"]
    meta["layer"] = node["layer"]
    for key in ("kind", "aliases", "tags"):
        if node.get(key) and key not in in_block:
            meta[key] = node[key]
    if node.get("lifecycle", "permanent") != "permanent":
        meta["lifecycle"] = node["lifecycle"]
    if node.get("always_in_view"):
        meta["always_in_view"] = True
    for field in ("traits", "state"):
        rest: dict[str, Any] = {}
        for key, value in (node.get(field) or {}).items():
            if field in in_block:
                rest[key] = value
            elif key in as_links.get(field, {}):
                meta[f"{field}.{key}"] = f"[[{link_of[value]}]]"
            elif _flat(value):
                meta[f"{field}.{key}"] = value
            else:
                rest[key] = value
        if rest:
            block[field] = rest
    extensions = dict(node.get("extensions") or {})
    obsidian = dict(extensions.pop("obsidian", None) or {})
    for key, value in (obsidian.pop("properties", None) or {}).items():
        meta.setdefault(key, value)
    came = obsidian.pop("path", None)
    if came is not None and path in default_paths(str(node.get("name", "")), str(node["layer"]),
                                                   str(node["id"])):
        obsidian["path"] = came  # lying where narr would put it anyway, the path must be said
    if obsidian:
        extensions["obsidian"] = obsidian
    if extensions or "extensions" in in_block:
        block["extensions"] = extensions if "extensions" not in in_block else node.get("extensions") or {}
    for key in ("name", "kind", "aliases", "tags"):
        if key in in_block:
            block[key] = node.get(key)
    summary, sections = str(node.get("summary", "")), dict(node.get("sections") or {})
    parts = []
    if "summary" in in_block:
        block["summary"] = summary
    elif summary:
        parts.append(summary)
    if "sections" in in_block:
        block["sections"] = sections
        sections = {}
    for title, text in sections.items():
        parts.append(f"## {title}\n\n{text}" if text else f"## {title}")
    if relations or (sections and list(sections)[-1] == RELATIONS_SECTION):
        parts.append(f"## {RELATIONS_SECTION}\n\n" + "\n".join(relations) if relations
                     else f"## {RELATIONS_SECTION}")
    if block:
        parts.append(f"{DATA_FENCE}\n{json.dumps(block, ensure_ascii=False, indent=2, sort_keys=True)}\n```")
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, default_flow_style=False,
                           width=1 << 20)
    return f"---\n{front}---\n" + ("\n" + "\n\n".join(parts) + "\n" if parts else "")
