"""``narr export lorebook`` and ``narr export card``: the world as SillyTavern reads it.

The lorebook is a World Info file (SillyTavern's ``{"entries": {uid: entry}}``) with one entry
per node of the world as it stands (hand edits included; ``--at REV``: as committed then):

- keys: those of the entry the node came from, as that entry had them (macros, patterns and
  their order kept; a node's name is a key only if it was one), then the aliases the node has
  gained since; a node narr made: its name and aliases;
- content, in words: the summary, each section as ``Title: text``, then ``Traits:``, ``Now:``
  (the current state, node ids as names) and ``Relations:`` (``holds Black Ring``), so that the
  story's state is what the chat reads; text as written, Markdown and macros (``{{user}}``) kept;
- ``constant`` for a node ``always_in_view``; ``disable`` for an entry imported disabled
  (``--include-disabled``) or switched off in SillyTavern since: nodes that ended are not in the
  world, so not in the book;
- the behaviour an import kept (order, position, secondary keys, logic, probability, depth...,
  SillyTavern's newer fields too) as it was, SillyTavern's defaults otherwise; entries a book
  brought keep their uid and the place SillyTavern showed them (``displayIndex``), in that order,
  the others after them by layer and id;
- ``extensions.narr``: the node itself, the digest of the text and the parts it is made of, so
  that ``narr import`` reads the book back with no change, and what SillyTavern changed since
  comes home as hand edits (:mod:`narrative.lore.homecoming`).

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
            wr.catalog.graph.follow_chain(head)  # what it witnessed is read from the story's index
            eye = sight(wr, view, head.id, pov_id, labels)
            out.pov, out.visible = pov_id, eye.visible
            out.nodes = {n: eye.seen(n) or node for n, node in nodes.items()}
    return out


def _value_words(value: Any, nodes: dict[str, NodeDict]) -> str:
    if isinstance(value, str):
        node = nodes.get(value)
        return str(node.get("name", value)) if node is not None else value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def tails(node: NodeDict, world: WorldAt, *, traits: bool = True) -> list[tuple[str, str]]:
    """The paragraphs narr words itself after a node's text: its traits, its state and its
    relations (node ids given as names), as ``(part, words)``."""
    out = []
    if traits and node.get("traits"):
        out.append(("traits", "Traits: " + "; ".join(f"{k}: {_value_words(v, world.nodes)}" for k, v
                                                      in sorted((node.get("traits") or {}).items())) + "."))
    state = node.get("state") or {}
    if state:
        out.append(("state", "Now: " + "; ".join(f"{k}: {_value_words(v, world.nodes)}"
                                                 for k, v in sorted(state.items())) + "."))
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
        out.append(("relations", "Relations: " + "; ".join(rels) + "."))
    return out


def _ordered(world: WorldAt) -> list[NodeDict]:
    """The nodes in book order: those a book brought, where SillyTavern showed them, then the
    others by layer and id."""
    order: dict[str, int] = {layer: i for i, layer in enumerate(LAYERS)}
    ids = [n for n in world.nodes if world.sees(n)]

    def key(n: str) -> tuple[int, int, int, str]:
        node = world.nodes[n]
        index = sillytavern.display_index(dict(node))
        if index is not None:
            return (0, index, 0, n)
        return (1, 0, order.get(str(node.get("layer")), len(order)), n)

    ids.sort(key=key)
    return [world.nodes[n] for n in ids]


def _uids(nodes: list[NodeDict], first: int = 0) -> list[int]:
    """Each node's uid in the book: the one its entry had, when free, else the next free one."""
    wanted: list[int | None] = []
    for node in nodes:
        record = sillytavern.primary_record(dict(node))
        raw = record["entry"] if record is not None else {}
        uid = raw.get("uid", raw.get("id"))
        wanted.append(uid if isinstance(uid, int) and not isinstance(uid, bool) and 0 <= uid < 1 << 31
                      else None)
    taken: set[int] = set()
    out: list[int] = []
    for uid in wanted:
        if uid is not None and uid >= first and uid not in taken:
            taken.add(uid)
    given: set[int] = set()
    spare = first
    for uid in wanted:
        if uid is not None and uid >= first and uid not in given:
            given.add(uid)
            out.append(uid)
            continue
        while spare in taken or spare in given:
            spare += 1
        given.add(spare)
        out.append(spare)
    return out


def _entry_parts(node: NodeDict, world: WorldAt, shape: str) -> dict[str, Any]:
    content, parts = sillytavern.render_content(dict(node), tails(node, world))
    return {"keys": sillytavern.entry_keys(dict(node), shape), "comment": str(node.get("name", "")),
            "content": content, "constant": node.get("always_in_view") is True,
            "disabled": sillytavern.entry_disabled(dict(node)),
            "flags": sillytavern.entry_flags(sillytavern.primary_record(dict(node))),
            "index": sillytavern.display_index(dict(node)),
            "narr": sillytavern.narr_record(dict(node), content, parts)}


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
    nodes = _ordered(world)
    for uid, node in zip(_uids(nodes), nodes, strict=True):
        entries[str(uid)] = sillytavern.world_info_entry(uid, **_entry_parts(node, world, "world info"))
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
                    "narr": {"of": node_id, "part": SECTION_PART, "title": title,
                             "text_sha256": sillytavern.text_digest(text),
                             "parts": [["section-text", title]]}})
    now_parts = tails(me, world, traits=False)
    if now_parts:
        now = "\n\n".join(words for _, words in now_parts)
        own.append({"keys": keys, "comment": f"{name} — now", "content": now, "constant": False,
                    "disabled": False, "flags": {},
                    "narr": {"of": node_id, "part": NOW_PART, "text_sha256": sillytavern.text_digest(now),
                             "parts": [list(p) for p in now_parts]}})
    rest = [n for n in _ordered(world) if n.get("id") != node_id]
    others = [_entry_parts(n, world, "character book") for n in rest]
    uids = [*range(len(own)), *_uids(rest, len(own))]
    record = ((me.get("extensions") or {}).get("sillytavern") or {}).get("card")
    personality = (me.get("traits") or {}).get("personality")

    def build(which: str) -> dict[str, Any]:
        book = {"name": f"{wr.config.name or name}", "entries": [
            sillytavern.book_entry(uid, **parts) for uid, parts in zip(uids, [*own, *others], strict=True)]}
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
