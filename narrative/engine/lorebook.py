"""``narr export lorebook`` and ``narr export card``: the world as SillyTavern reads it.

The lorebook is a World Info file (SillyTavern's ``{"entries": {uid: entry}}``) with one entry
per node of the world as it stands (hand edits included; ``--at REV``: as committed then):

- keys: the node's name and aliases (and the pattern keys an import kept);
- content, in words: the summary, each section as ``Title: text``, then ``Traits:``, ``Now:``
  (the current state, node ids as names) and ``Relations:`` (``holds Black Ring``), so that the
  story's state is what the chat reads;
- ``constant`` for a node ``always_in_view``; ``disable`` only for an entry imported disabled
  (``--include-disabled``): nodes that ended are not in the world, so not in the book;
- the behaviour an import kept (order, position, secondary keys, logic, probability, depth...)
  as it was, SillyTavern's defaults otherwise;
- ``extensions.narr``: the node itself, so ``narr import`` reads the book back with no change.

``pov``: only what that character can know (``narr brief --pov``'s rule: itself, what it holds
and relates to, where it is and who is there, the secrets it knows), relations to anything else
left out of the words.

A card (:func:`export_card`) is a V3 (or V2) character card of one node: its summary the
description, its trait ``personality`` the personality, its tags, the fields an import kept
(scenario, greetings, examples, prompts...), and a ``character_book`` holding the node's own
sections and current state as entries, then the lorebook of the rest of the world. With an image
it is a PNG card (``chara`` and ``ccv3`` chunks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative.engine.log import entry
from narrative.engine.naming import Names
from narrative.engine.nodes import current_nodes
from narrative.engine.pov import Conventions, sight, visible_to
from narrative.errors import InvalidInputError, NotFoundError, Step
from narrative.ids import LAYERS
from narrative.lore import sillytavern
from narrative.nodefile import NodeDict
from narrative.store import (
    WorldRepo,
    WorldView,
    export_places,
    export_target,
    nodes_in,
    resolve_rev,
    scan_for_reader,
    write_file,
)


@dataclass
class WorldAt:
    """The nodes an export reads, where they come from, and who may see them."""

    nodes: dict[str, NodeDict]
    at: dict[str, Any] | None
    pov: str | None = None
    visible: set[str] | None = None

    def sees(self, node_id: str) -> bool:
        return self.visible is None or node_id in self.visible


def world_at(wr: WorldRepo, at: str | None = None, pov: str | None = None) -> WorldAt:
    """The world now (hand edits included) or as committed at ``at``; ``pov`` a node's name or id."""
    if at is None:
        nodes, _ = current_nodes(wr)
        head = wr.head_commit()
        tree = head.tree if head is not None else None
        edits = scan_for_reader(wr, tree) if tree is not None else None
    else:
        head = resolve_rev(wr, at)
        tree, edits = head.tree, None
        nodes = nodes_in(wr, tree)
    where = None
    if head is not None:
        e = entry(head).to_json()
        where = {"commit": e["commit"], "id": e["id"], "content": e["content"],
                 "timestamp": e.get("timestamp")}
    out = WorldAt(nodes, where)
    if pov is not None:
        pov_id = pov if pov in nodes else Names(wr).resolve(pov, must_exist=False)
        if pov_id not in nodes:
            raise NotFoundError(f"no node {pov!r} in the world" + (f" at {at}" if at else ""),
                                hint="{0} lists the nodes", steps=[Step("list_nodes")])
        view = WorldView(wr, tree, edits)
        labels = wr.config.reference_labels
        if head is None:
            out.pov, out.visible = pov_id, visible_to(view, pov_id, labels, Conventions.of(wr.config.pov))
        else:  # each node as the character sees it, as narr brief --pov gives it
            eye = sight(wr, view, head.id, pov_id, labels)
            out.pov, out.visible = pov_id, eye.visible
            out.nodes = {n: eye.seen(n) or node for n, node in nodes.items()}
    return out


def _value_words(value: Any, nodes: dict[str, NodeDict]) -> str:
    if isinstance(value, str):
        node = nodes.get(value)
        return str(node.get("name", value)) if node is not None else value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def words(node: NodeDict, world: WorldAt, *, sections: bool = True) -> str:
    """What a chat needs to read of a node: summary, sections, traits, state, relations."""
    parts = [str(node.get("summary", "")).strip()]
    if sections:
        parts += [f"{title}: {text}" for title, text in (node.get("sections") or {}).items() if text]
    traits = node.get("traits") or {}
    if traits:
        parts.append("Traits: " + "; ".join(f"{k}: {_value_words(v, world.nodes)}"
                                            for k, v in sorted(traits.items())) + ".")
    parts.append(now_words(node, world))
    return "\n\n".join(p for p in parts if p)


def now_words(node: NodeDict, world: WorldAt) -> str:
    """The node's current state and relations, in words."""
    parts = []
    state = node.get("state") or {}
    if state:
        parts.append("Now: " + "; ".join(f"{k}: {_value_words(v, world.nodes)}"
                                          for k, v in sorted(state.items())) + ".")
    rels = []
    for rtype, targets in sorted((node.get("relations") or {}).items()):
        for dst, attrs in sorted(targets.items()):
            if not world.sees(dst):
                continue
            target = world.nodes.get(dst)
            said = f"{rtype} {target.get('name', dst) if target else dst}"
            if attrs:
                said += " (" + ", ".join(f"{k}: {_value_words(v, world.nodes)}"
                                         for k, v in sorted(attrs.items())) + ")"
            rels.append(said)
    if rels:
        parts.append("Relations: " + "; ".join(rels) + ".")
    return "\n\n".join(parts)


def _primary_record(node: NodeDict) -> dict[str, Any] | None:
    """The SillyTavern entry an import made the node from (its text is the summary)."""
    records = ((node.get("extensions") or {}).get("sillytavern") or {}).get("entries") or []
    for record in records:
        if isinstance(record, dict) and record.get("section") is None:
            return record
    return None


def _disabled(record: dict[str, Any] | None) -> bool:
    raw = (record or {}).get("entry") or {}
    return raw.get("enabled") is False or raw.get("disable") is True


def _ordered(world: WorldAt) -> list[NodeDict]:
    order: dict[str, int] = {layer: i for i, layer in enumerate(LAYERS)}
    ids = [n for n in world.nodes if world.sees(n)]
    ids.sort(key=lambda n: (order.get(str(world.nodes[n].get("layer")), len(order)), n))
    return [world.nodes[n] for n in ids]


def _entry_parts(node: NodeDict, world: WorldAt) -> dict[str, Any]:
    record = _primary_record(node)
    content = words(node, world)
    return {"keys": [str(node.get("name", "")), *node.get("aliases", [])],
            "comment": str(node.get("name", "")), "content": content,
            "constant": node.get("always_in_view") is True, "disabled": _disabled(record),
            "flags": sillytavern.entry_flags(record),
            "narr": sillytavern.narr_record(dict(node), content)}


@dataclass
class LorebookExport:
    world: str
    at: dict[str, Any] | None
    pov: str | None
    book: dict[str, Any]
    left_out: int = 0  # nodes the point of view does not know

    def to_json(self) -> dict[str, Any]:
        return self.book

    def text(self) -> str:
        return json.dumps(self.book, ensure_ascii=False, indent=2) + "\n"


def export_lorebook(wr: WorldRepo, at: str | None = None, pov: str | None = None) -> LorebookExport:
    """The world as a SillyTavern World Info book (module docstring)."""
    world = world_at(wr, at, pov)
    entries = {}
    for uid, node in enumerate(_ordered(world)):
        entries[str(uid)] = sillytavern.world_info_entry(uid, **_entry_parts(node, world))
    left_out = len(world.nodes) - len(entries)
    return LorebookExport(wr.config.name, world.at, world.pov, {"entries": entries}, left_out)


@dataclass
class CardExport:
    node: str
    spec: str
    card: dict[str, Any]
    png: bytes | None = None
    other: dict[str, Any] = field(default_factory=dict)  # the card in the other spec (a PNG has both)

    def to_json(self) -> dict[str, Any]:
        return self.card

    def text(self) -> str:
        return json.dumps(self.card, ensure_ascii=False, indent=2) + "\n"


SECTION_PART = "section"
NOW_PART = "now"


def export_card(wr: WorldRepo, node: str, *, at: str | None = None, pov: str | None = None,
                spec: str = "v3", image: bytes | None = None, image_label: str = "image") -> CardExport:
    """One node as a character card (module docstring); ``image``: PNG bytes to embed it in."""
    if spec not in ("v2", "v3"):
        raise InvalidInputError(f"unknown card spec {spec!r}; expected v2 or v3")
    world = world_at(wr, at, pov)
    node_id = node if node in world.nodes else Names(wr).resolve(node, must_exist=False)
    me = world.nodes.get(node_id)
    if me is None:
        raise NotFoundError(f"no node {node!r} in the world" + (f" at {at}" if at else ""),
                            hint="{0} lists the nodes", steps=[Step("list_nodes")])
    name = str(me.get("name", node_id))
    keys = [name, *me.get("aliases", [])]
    own: list[dict[str, Any]] = []
    for title, text in (me.get("sections") or {}).items():
        own.append({"keys": keys, "comment": title, "content": text, "constant": False,
                    "disabled": False, "flags": {},
                    "narr": {"of": node_id, "part": SECTION_PART, "title": title}})
    now = now_words(me, world)
    if now:
        own.append({"keys": keys, "comment": f"{name} — now", "content": now, "constant": False,
                    "disabled": False, "flags": {}, "narr": {"of": node_id, "part": NOW_PART}})
    others = [_entry_parts(n, world) for n in _ordered(world) if n.get("id") != node_id]
    record = ((me.get("extensions") or {}).get("sillytavern") or {}).get("card")
    personality = (me.get("traits") or {}).get("personality")

    def build(which: str) -> dict[str, Any]:
        book = {"name": f"{wr.config.name or name}", "entries": [
            sillytavern.book_entry(uid, **parts) for uid, parts in enumerate([*own, *others])]}
        return sillytavern.card_json(spec=which, name=name, description=str(me.get("summary", "")),
                                     personality=personality if isinstance(personality, str) else "",
                                     tags=list(me.get("tags") or []), record=record, book=book,
                                     narr=sillytavern.narr_record(dict(me), str(me.get("summary", ""))))

    card = build(spec)
    other = build("v2" if spec == "v3" else "v3")
    out = CardExport(node_id, spec, card, other=other)
    if image is not None:
        v2, v3 = (card, other) if spec == "v2" else (other, card)
        out.png = sillytavern.png_card(image_label, image, v2, v3)
    return out


def read_image(path: str | Path, label: str) -> bytes:
    """An image to make a PNG card of, refused beyond the size narr reads a card image at."""
    from narrative.lore.limits import MAX_PNG_FILE
    from narrative.store import read_bounded

    try:
        return read_bounded(path, MAX_PNG_FILE, label=label, what="image")
    except OSError as exc:
        raise InvalidInputError(f"{label}: cannot read ({exc.strerror})") from None


def write_output(wr: WorldRepo, path: str | Path, data: bytes, *, base: str | Path | None = None) -> Path:
    """An export's file, written whole at ``path`` (relative to ``base``, by default the command's
    directory), never inside the world nor through a symbolic link; returns where it went."""
    where = export_target(path, export_places(wr), base=base)
    write_file(where, data)
    return where
