"""``narr export codex``: the story bible, one entry per node, as Markdown or JSON.

A writer keeps a bible beside the manuscript: who everyone is, what they carry,
who is tied to whom. The codex is that, read from the world: each node with its
name, aliases, tags, kind, lifecycle, whether it is always in view, summary, traits, state,
sections, other tools' data (extensions) and relations both ways
(the incoming ones are worked out here, since a node file only holds its own).

Without ``--at`` it reads the world as ``narr get`` and ``narr nodes`` do, hand
edits included and marked, because the bible is for writing the next scene; with
``--at REV`` it is the committed world of that revision (``--at HEAD`` leaves the
hand edits out).

The Markdown keeps one layout so that it can be read back: ``## Layer``, ``###
Name``, then ``- key: value`` lines, the node's ``id`` first; ``####`` subsections
for traits, state, sections, extensions, relations and incoming relations. A value is written as text
when it reads back as that same text, else as JSON: the rule ``narr event --set``
uses for its values. Nodes, keys and relations are sorted, so the same world gives
the same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from narrative import safejson
from narrative.engine.clock import story_time
from narrative.engine.log import entry
from narrative.engine.nodes import current_nodes
from narrative.ids import LAYERS
from narrative.lore.codexmd import LAYER_TITLES
from narrative.nodefile import NodeDict
from narrative.store import WorldRepo, nodes_in, resolve_rev

_SECTIONS = (("traits", "Traits"), ("state", "State"), ("sections", "Sections"),
             ("extensions", "Extensions"))


@dataclass
class Codex:
    world: str
    # the commit read: {"commit", "id", "content", "timestamp" (its own --at), "story_time"
    # (the time in force: the last --at on the line)}
    at: dict[str, Any] | None
    hand_edits_included: bool
    hand_edits: dict[str, str]  # node id -> "new", "modified" or "deleted"
    nodes: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"world": self.world, "at": self.at, "hand_edits_included": self.hand_edits_included,
                "hand_edits": [{"id": k, "edit": v} for k, v in sorted(self.hand_edits.items())],
                "nodes": self.nodes}

    def to_markdown(self) -> str:
        return render_markdown(self.to_json())


def codex(wr: WorldRepo, at: str | None = None) -> Codex:
    """The story bible of the world now (hand edits included) or as of revision ``at``."""
    if at is None:
        nodes, marks = current_nodes(wr)
        head = wr.head_commit()
    else:
        head = resolve_rev(wr, at)
        nodes, marks = nodes_in(wr, head.tree), {}
    where = None
    if head is not None:
        e = entry(head).to_json()
        in_force = story_time(wr, head.id)
        where = {"commit": e["commit"], "id": e["id"], "content": e["content"],
                 "timestamp": e.get("timestamp"),
                 "story_time": in_force["value"] if in_force else None}
    return Codex(wr.config.name, where, at is None, marks, entries(nodes, marks))


def entries(nodes: dict[str, NodeDict], marks: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One entry per node, by layer then id, with relations out and in (each naming the other)."""
    marks = marks or {}
    incoming: dict[str, list[dict[str, Any]]] = {}
    outgoing: dict[str, list[dict[str, Any]]] = {}
    for src in sorted(nodes):
        relations = nodes[src].get("relations") or {}
        for rtype in sorted(relations):
            for dst in sorted(relations[rtype] or {}):
                attrs = relations[rtype][dst] or {}
                other = nodes.get(dst)
                outgoing.setdefault(src, []).append(
                    {"type": rtype, "target": dst, "name": other.get("name") if other else None,
                     "attrs": attrs})
                incoming.setdefault(dst, []).append(
                    {"type": rtype, "source": src, "name": nodes[src].get("name"), "attrs": attrs})
    order: dict[str, int] = {layer: i for i, layer in enumerate(LAYERS)}
    out = []
    for node_id in sorted(nodes, key=lambda n: (order.get(str(nodes[n].get("layer")), len(order)), n)):
        node = nodes[node_id]
        out.append({
            "id": node_id, "name": node.get("name", ""), "layer": node.get("layer"),
            "kind": node.get("kind", ""), "aliases": list(node.get("aliases") or []),
            "lifecycle": node.get("lifecycle", "permanent"), "summary": node.get("summary", ""),
            "created_by_event": node.get("created_by_event"),
            "tags": list(node.get("tags") or []),
            "always_in_view": node.get("always_in_view") is True,
            "traits": dict(sorted((node.get("traits") or {}).items())),
            "state": dict(sorted((node.get("state") or {}).items())),
            "sections": dict(sorted((node.get("sections") or {}).items())),
            "extensions": dict(sorted((node.get("extensions") or {}).items())),
            "relations": outgoing.get(node_id, []),
            "incoming": sorted(incoming.get(node_id, []), key=lambda r: (r["type"], r["source"])),
            "edited": marks.get(node_id),
        })
    return out


def text_value(value: Any) -> str:
    """``value`` as it reads back: bare text when that parses as nothing else, else JSON."""
    if isinstance(value, str) and value and value == value.strip() and "\n" not in value:
        try:
            safejson.loads(value)
        except ValueError:
            return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _key(key: str) -> str:
    """A key bare when it reads back bare, else JSON-quoted (one that starts with a quote too)."""
    bare = key and ":" not in key and key == key.strip() and "\n" not in key and not key.startswith('"')
    return key if bare else json.dumps(key, ensure_ascii=False)


def _relation_line(rtype: str, other: str, name: str | None, attrs: dict[str, Any]) -> str:
    line = f"- {_key(rtype)}: {other}"
    if name:
        line += f" ({name})"
    if attrs:
        line += " " + json.dumps(attrs, ensure_ascii=False, sort_keys=True)
    return line


def render_markdown(d: dict[str, Any]) -> str:
    """The codex dict as Markdown (the layout the module docstring describes)."""
    lines = [f"# {d['world'] or 'Untitled world'}: codex", ""]
    at = d["at"]
    if at is not None:
        lines.append(f"- commit: {at['commit']}")
        lines.append(f"- event: {text_value(at['content'])}")
        when = at.get("story_time") or at.get("timestamp")
        if when:
            lines.append(f"- story time: {text_value(when)}")
    if not d["hand_edits_included"]:
        lines.append("- hand edits: not included")
    elif d["hand_edits"]:
        lines.append("- hand edits: " + ", ".join(f"{e['id']} ({e['edit']})" for e in d["hand_edits"]))
    else:
        lines.append("- hand edits: none")
    lines.append(f"- nodes: {len(d['nodes'])}")
    layer = None
    for n in d["nodes"]:
        if n["layer"] != layer:
            layer = n["layer"]
            lines += ["", f"## {LAYER_TITLES.get(str(layer), str(layer))}"]
        lines += ["", f"### {n['name'] or n['id']}", "", f"- id: {n['id']}"]
        if n["edited"]:
            lines.append(f"- hand edit: {n['edited']}")
        for key in ("kind", "aliases", "tags", "lifecycle", "always_in_view", "summary",
                    "created_by_event"):
            if n.get(key) not in (None, "", [], False):
                lines.append(f"- {key}: {text_value(n[key])}")
        for key, title in _SECTIONS:
            if n.get(key):
                lines += ["", f"#### {title}", ""]
                lines += [f"- {_key(k)}: {text_value(v)}" for k, v in n[key].items()]
        if n["relations"]:
            lines += ["", "#### Relations", ""]
            lines += [_relation_line(r["type"], r["target"], r["name"], r["attrs"]) for r in n["relations"]]
        if n["incoming"]:
            lines += ["", "#### Incoming relations", ""]
            lines += [_relation_line(r["type"], r["source"], r["name"], r["attrs"]) for r in n["incoming"]]
    return "\n".join(lines) + "\n"
