"""One thing a source describes, before the import gives it an id in a world."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Entry:
    """An entry, a card's character or a note, as the import will weigh it.

    ``relations`` name their targets by a name or an id, or by a ``[[link]]`` (a note's), which
    the engine resolves as Obsidian does (:mod:`narrative.lore.wikilinks`).
    ``title`` is the source's own heading for the text (an entry's comment, a note's file name);
    ``keys`` the entry's primary keys (a lorebook's), from which ``aliases`` come; ``named_by``
    says which rule of :mod:`narrative.lore.facets` gave the name. ``exact`` marks an entry that
    narr itself wrote (a codex, an export's ``narr`` record): its fields are the node's, so it
    is never folded into another entry.
    """

    source: str  # "file" or "file#entry"
    name: str
    layer: str
    kind: str = ""
    aliases: list[str] = field(default_factory=list)
    summary: str = ""
    lifecycle: str = "permanent"
    traits: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    ref: str | None = None  # the id the source gave the node (a codex, an export); relations use it
    layer_given: bool = False  # the source says the layer (a codex, a card, front matter)
    relations: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # type, target, attrs
    title: str = ""
    keys: list[str] = field(default_factory=list)
    named_by: str = "title"
    tags: list[str] = field(default_factory=list)
    sections: dict[str, str] = field(default_factory=dict)
    always_in_view: bool = False
    extensions: dict[str, Any] = field(default_factory=dict)
    disabled: bool = False  # a lorebook entry switched off (imported only when asked)
    exact: bool = False
    mentions: list[tuple[str, str]] = field(default_factory=list)  # (link target, as written): body links
    note_path: str = ""  # a vault note's path without ".md": what [[links]] name it by
    # (field, key, link target): a trait or state value that is a [[link]], made the node's id
    value_links: list[tuple[str, str, str]] = field(default_factory=list)
    source_ids: list[str] = field(default_factory=list)  # ids the source gives ("id:7"): same id, same thing
    book: str = ""  # the lorebook the entry is in (its name, else its file)
    derived_of: str | None = None  # a card narr wrote: an entry made of that node's own words
    homecoming: bool = False  # narr's own export to SillyTavern: the node, and what was changed there
    edits: list[Edit] = field(default_factory=list)  # those changes (narrative.lore.homecoming)
    edit_notes: list[str] = field(default_factory=list)  # what of those changes cannot come home

    @property
    def first_key(self) -> str:
        return self.keys[0] if self.keys else ""


@dataclass
class Edit:
    """A change made outside narr to a node narr exported (text edited in SillyTavern, an entry
    switched off): ``field`` a JSON pointer into the node, ``old`` what narr exported, ``new``
    what the file holds now (:data:`narrative.fields.ABSENT`: no such field); ``what`` says it in words.
    ``by_name``: ``new`` is a name the engine makes a node's id, as narr wrote the id as a name."""

    field: str
    old: Any
    new: Any
    what: str
    by_name: bool = False


@dataclass
class Placement:
    """Where one entry's text went: ``section`` None is the node itself (its name, summary)."""

    entry: Entry
    group: int  # index into the merged entries
    section: str | None = None
    note: str = ""


@dataclass
class Skipped:
    """A file or an entry the import read and left out, with the reason."""

    source: str
    reason: str
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "title": self.title, "reason": self.reason}
