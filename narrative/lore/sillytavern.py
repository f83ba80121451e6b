"""SillyTavern's formats: character cards V1/V2/V3 (JSON, PNG, CHARX) and World Info books.

Reading follows the public specifications (Character Card V1 and V2, ``malfoyslastname/
character-card-spec-v2``; V3, ``kwaroran/character-card-spec-v3``) and SillyTavern's own World
Info files (an ``entries`` object keyed by uid, each entry with ``key``, ``keysecondary``,
``comment``, ``content``, ``constant``, ``selective``, ``selectiveLogic``, ``order``,
``position``, ``disable``...). A card's book uses the spec's names instead (``keys``,
``secondary_keys``, ``enabled``, ``insertion_order``, ``use_regex``...); both are read.

Where things land (the README says it for writers):

- a card's character: ``name``; ``nickname`` (V3) an alias; ``description`` the summary;
  ``personality`` the trait ``personality``; ``tags`` the node's tags; everything else the card
  holds (scenario, greetings, examples, prompts, creator notes, its own ``extensions``...) kept
  as written under ``extensions.sillytavern.card`` (``spec``, ``spec_version``, ``data``, and the
  book's own fields as ``character_book``), so that ``narr export card`` gives it back;
- an entry: named by :mod:`narrative.lore.facets`; its keys the aliases (patterns left out);
  its content the summary (or a section, when it is a facet of another entry); ``constant`` the
  node's ``always_in_view``; the entry itself, all but its content, under
  ``extensions.sillytavern.entries`` (``source``, ``shape``: ``world info`` or ``character book``,
  ``book``, ``section``: where its text is, ``entry``: its fields as written);
- macros (``{{char}}``, ``{{user}}``, ``<BOT>``, ``<USER>``...) stay as written, in the node's
  text as in the record, so that an export gives SillyTavern the macros back; only when the
  writer names the user (``--user``) is ``{{user}}`` (``<USER>``) replaced, case aside;
- a legacy ``"key": "a,b"`` is split at its commas.

An export of narr's (``extensions.narr`` on a card or an entry) carries the node itself and is
read back exactly: the round trip changes nothing. What SillyTavern changed in it since is
read by :mod:`narrative.lore.homecoming`.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import io
import re
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Final

from narrative.errors import InvalidInputError
from narrative.ids import LAYERS, LIFECYCLES, normalize_name
from narrative.lore import png
from narrative.lore.entry import Entry
from narrative.lore.facets import is_pattern, name_for
from narrative.lore.limits import (
    MAX_CHUNK,
    MAX_ENTRIES,
    MAX_ENTRY_TEXT,
    MAX_KEYS,
    decode_text,
    load_json,
    too_big,
)

_USER: Final = re.compile(r"\{\{\s*user\s*\}\}|<user>", re.IGNORECASE)
CARD_FIELDS_IN_NODE: Final = ("name", "description", "personality", "tags", "character_book")


@dataclass(frozen=True)
class Macros:
    """What ``{{user}}`` stands for when the writer says (``--user``); None: macros stay as written."""

    user: str | None = None

    def __call__(self, text: str) -> str:
        if self.user is None:
            return text
        return _USER.sub(lambda _: self.user or "", text)


# -- what a JSON file is -------------------------------------------------------------


def kind_of(label: str, data: Any) -> str:
    """``"card"`` or ``"lorebook"``, or an error saying what the JSON is not."""
    if isinstance(data, list):
        return "lorebook"
    if not isinstance(data, dict):
        raise InvalidInputError(f"{label}: the JSON is {_type(data)}, not an object: not a lorebook "
                                "or a character card")
    spec = data.get("spec")
    if isinstance(spec, str) and spec.startswith("chara_card"):
        if not isinstance(data.get("data"), dict):
            raise InvalidInputError(f"{label}: the card's \"data\" is {_type(data.get('data'))}, "
                                    "not an object")
        return "card"
    if spec == "lorebook_v3" or "entries" in data:
        return "lorebook"
    if "name" in data and any(k in data for k in ("first_mes", "personality", "description",
                                                  "scenario", "mes_example")):
        return "card"
    raise InvalidInputError(f"{label}: not a lorebook or a character card",
                            hint='a lorebook has "entries"; a card has "spec": "chara_card_v2" '
                                 'or the V1 fields name, description, personality')


def _type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


# -- cards in PNG and CHARX ------------------------------------------------------------


def card_from_png(label: str, data: bytes) -> Any:
    """The card JSON of a PNG card: ``ccv3`` when it has one (the V3 spec), else ``chara``."""
    texts = png.text_chunks(label, data)
    for keyword in ("ccv3", "chara"):
        if keyword in texts:
            try:
                raw = base64.b64decode("".join(texts[keyword].split()), validate=True)
            except (binascii.Error, ValueError):
                raise InvalidInputError(f"{label}: the PNG's {keyword} chunk is not base64") from None
            return load_json(f"{label} ({keyword} chunk)", decode_text(f"{label} ({keyword} chunk)", raw))
    raise InvalidInputError(f"{label}: a PNG with no character card in it (no chara or ccv3 text chunk)")


def card_from_charx(label: str, data: bytes) -> Any:
    """The ``card.json`` at the root of a CHARX zip (the V3 spec)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise InvalidInputError(f"{label}: not a CHARX (zip) file, or a damaged one ({exc})") from None
    with archive:
        try:
            info = archive.getinfo("card.json")
        except KeyError:
            raise InvalidInputError(f"{label}: the CHARX has no card.json at its root") from None
        if info.flag_bits & 0x1:
            raise InvalidInputError(f"{label}: the CHARX is encrypted")
        if info.file_size > MAX_CHUNK:
            raise too_big(f"{label} (card.json)", info.file_size, MAX_CHUNK)
        try:
            with archive.open(info) as fh:
                raw = fh.read(MAX_CHUNK + 1)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            raise InvalidInputError(f"{label}: card.json in the CHARX cannot be read ({exc})") from None
        if len(raw) > MAX_CHUNK:
            raise too_big(f"{label} (card.json)", len(raw), MAX_CHUNK)
    return load_json(f"{label} (card.json)", decode_text(f"{label} (card.json)", raw))


# -- cards ---------------------------------------------------------------------------


def parse_card(label: str, card: dict[str, Any], *, layer: str, user: str | None = None) -> list[Entry]:
    """The character of a card, then the entries of its book."""
    versioned = isinstance(card.get("data"), dict)
    data: dict[str, Any] = card["data"] if versioned else card
    name = _clean(data.get("name"))
    if not name:
        raise InvalidInputError(f"{label}: the character card has no name")
    nickname = _clean(data.get("nickname"))
    macros = Macros(user)
    record: dict[str, Any] = {}
    if versioned:
        record["spec"] = card.get("spec")
        record["spec_version"] = card.get("spec_version")
    # the values were just parsed, so nothing else holds them: kept as they are, not copied
    record["data"] = {k: v for k, v in data.items() if k not in CARD_FIELDS_IN_NODE}
    book = data.get("character_book")
    if book is not None and not isinstance(book, dict):
        raise InvalidInputError(f"{label}: the card's character_book is {_type(book)}, not an object")
    if isinstance(book, dict):
        record["character_book"] = {k: v for k, v in book.items() if k != "entries"}
    node = Entry(label, name, "character", kind="person", layer_given=True, title=name,
                 named_by="card", aliases=[nickname] if nickname and nickname != name else [],
                 summary=macros(_text(label, "description", data.get("description"))),
                 traits=_trait(macros(_text(label, "personality", data.get("personality")))),
                 tags=_strings(label, "tags", data.get("tags", card.get("tags"))),
                 extensions={"sillytavern": {"card": record}})
    mine = _narr_record(data.get("extensions"))
    if mine is not None:
        from narrative.lore import homecoming

        node = entry_from_node(label, mine["node"])
        node.homecoming = True
        node.edits, node.edit_notes = homecoming.card_edits(label, mine, data)
    entries = [node]
    if isinstance(book, dict):
        book_name = _clean(book.get("name")) or name
        entries += parse_book(label, book, layer=layer, macros=macros, book_name=book_name,
                              own=mine["node"] if mine is not None else None)
    if mine is not None:  # the book's entries of the card's own sections and state, edited there
        own = str(mine["node"].get("id", ""))
        for entry in entries[1:]:
            if entry.derived_of == own:
                node.edits += entry.edits
                node.edit_notes += entry.edit_notes
    return entries


def _trait(personality: str) -> dict[str, Any]:
    return {"personality": personality} if personality else {}


# -- books ---------------------------------------------------------------------------


def parse_book(label: str, data: Any, *, layer: str, macros: Macros, book_name: str,
               own: dict[str, Any] | None = None) -> list[Entry]:
    """The entries of a World Info file, a character book or a V3 ``lorebook_v3``; ``own``: the
    node of the card narr exported around the book, whose own parts some entries hold."""
    if isinstance(data, dict) and data.get("spec") == "lorebook_v3":
        data = data.get("data")
        if not isinstance(data, dict):
            raise InvalidInputError(f"{label}: the lorebook's \"data\" is not an object")
    raw = data.get("entries", []) if isinstance(data, dict) else data
    if isinstance(raw, dict):
        items = list(raw.items())
    elif isinstance(raw, list):
        items = [(str(i), item) for i, item in enumerate(raw)]
    else:
        raise InvalidInputError(f"{label}: \"entries\" is {_type(raw)}: neither an object of entries "
                                "(World Info) nor a list of them (a character book)")
    if len(items) > MAX_ENTRIES:
        raise InvalidInputError(f"{label}: {len(items):,} entries, more than the {MAX_ENTRIES:,} "
                                "narr imports from one book", hint="split the book")
    read = [_read_entry(label, str(key), item, macros) for key, item in items]
    titles = Counter(normalize_name(r["title"]) for r in read if r["title"])
    out = []
    for r, (_, item) in zip(read, items, strict=True):
        where = r["where"]
        name, how = name_for(r["title"], r["keys"], fallback=f"{book_name} #{r['key']}",
                             title_shared=bool(r["title"]) and titles[normalize_name(r["title"])] > 1)
        name = " ".join(name.split())
        record = {"source": where, "shape": r["shape"], "book": book_name, "entry": r["raw"]}
        entry = Entry(where, name, layer, title=r["title"], keys=r["keys"], named_by=how,
                      aliases=_aliases(name, r["keys"]), summary=r["content"],
                      always_in_view=r["constant"], disabled=r["disabled"], book=book_name,
                      extensions={"sillytavern": {"entries": [record]}})
        ext = r["raw"].get("extensions")
        derived = ext.get("narr") if isinstance(ext, dict) else None
        mine = _narr_record(ext)
        if mine is not None:
            from narrative.lore import homecoming

            entry = entry_from_node(where, mine["node"])
            entry.disabled, entry.homecoming = r["disabled"], True
            entry.edits, entry.edit_notes = homecoming.entry_edits(where, mine, item, r["shape"], book_name)
        elif isinstance(derived, dict) and isinstance(derived.get("of"), str):
            from narrative.lore import homecoming

            entry.derived_of = derived["of"]
            if own is not None and own.get("id") == entry.derived_of:
                entry.edits, entry.edit_notes = homecoming.derived_edits(own, derived, r["content_raw"])
        out.append(entry)
    return out


def _read_entry(label: str, key: str, item: Any, macros: Macros) -> dict[str, Any]:
    where = f"{label}#{key}"
    if not isinstance(item, dict):
        raise InvalidInputError(f"{where}: the entry is {_type(item)}, not an object")
    card_shape = any(k in item for k in ("keys", "enabled", "insertion_order", "secondary_keys"))
    title = _clean(item.get("comment")) or _clean(item.get("name"))
    named = f"{where} ({title})" if title else where
    use_regex = item.get("use_regex") is True
    keys_raw = _keys(named, "keys" if "keys" in item else "key", item.get("keys", item.get("key", [])))
    _keys(named, "secondary keys", item.get("secondary_keys", item.get("keysecondary", [])))
    keys: list[str] = []
    for k in keys_raw:
        k = " ".join(macros(k).split())
        if k and not is_pattern(k, use_regex) and normalize_name(k) not in {normalize_name(x) for x in keys}:
            keys.append(k)
    content_raw = item.get("content", "")
    if content_raw is None:
        content_raw = ""
    if not isinstance(content_raw, str):
        raise InvalidInputError(f"{named}: the content is {_type(content_raw)}, not text")
    if len(content_raw) > MAX_ENTRY_TEXT:
        raise too_big(named, len(content_raw.encode("utf-8")), MAX_ENTRY_TEXT, "entry's content")
    disabled = is_disabled(item, card_shape)
    raw = {k: v for k, v in item.items() if k != "content"}  # just parsed: no one else holds them
    return {"key": key, "where": where, "title": title, "keys": keys,
            "content": macros(content_raw.replace("\r\n", "\n")).strip(),
            "content_raw": content_raw, "constant": item.get("constant") is True,
            "disabled": disabled, "shape": "character book" if card_shape else "world info", "raw": raw}


def is_disabled(item: dict[str, Any], card_shape: bool | None = None) -> bool:
    """An entry switched off: ``enabled: false`` (a character book's), ``disable: true`` (World Info's)."""
    if card_shape is None:
        card_shape = any(k in item for k in ("keys", "enabled", "insertion_order", "secondary_keys"))
    if card_shape:
        return item.get("enabled") is False or item.get("disable") is True
    return item.get("disable") is True


def _keys(where: str, field: str, value: Any) -> list[str]:
    """An entry's keys: a list, or a legacy comma-separated string; numbers read as words."""
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        raise InvalidInputError(f"{where}: {field} is {_type(value)}, not a list of words")
    if len(value) > MAX_KEYS:
        noun = "secondary keys" if "secondary" in field else "keys"
        raise InvalidInputError(f"{where}: {len(value):,} {noun}, more than the {MAX_KEYS:,} narr "
                                "reads for one entry")
    out = []
    for k in value:
        if isinstance(k, bool) or not isinstance(k, str | int | float):
            raise InvalidInputError(f"{where}: {field} holds {_type(k)}, not a word")
        text = str(k).strip()
        if text:
            out.append(text)
    return out


def _aliases(name: str, keys: list[str]) -> list[str]:
    seen = {normalize_name(name)}
    out = []
    for k in keys:
        if normalize_name(k) not in seen:
            seen.add(normalize_name(k))
            out.append(k)
    return out


def _clean(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _text(label: str, field: str, value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInputError(f"{label}: the card's {field} is {_type(value)}, not text")
    return value.strip()


def _strings(label: str, field: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        raise InvalidInputError(f"{label}: {field} is {_type(value)}, not a list")
    out: list[str] = []
    for v in value:
        text = " ".join(str(v).split()) if isinstance(v, str | int | float) else ""
        if text and text not in out:
            out.append(text)
    return out


# -- narr's own record ---------------------------------------------------------------


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _narr_record(extensions: Any) -> dict[str, Any] | None:
    if isinstance(extensions, dict):
        mine = extensions.get("narr")
        if isinstance(mine, dict) and isinstance(mine.get("node"), dict):
            return mine
    return None


def meaningful(data: Any) -> dict[str, Any]:
    """A card's fields that say something: not empty, narr's own record left out."""
    out = {}
    for key, value in (data or {}).items():
        if key == "extensions" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != "narr"}
        if value not in ("", [], {}, None):
            out[key] = value
    return out


def entry_from_node(where: str, node: dict[str, Any]) -> Entry:
    """An exact entry from a node as narr writes it (an export's record), checked field by field."""
    def text(key: str) -> str:
        value = node.get(key, "")
        if not isinstance(value, str):
            raise InvalidInputError(f"{where}: the node's {key} is {_type(value)}, not text")
        return value

    def mapping(key: str) -> dict[str, Any]:
        value = node.get(key) or {}
        if not isinstance(value, dict):
            raise InvalidInputError(f"{where}: the node's {key} is {_type(value)}, not an object")
        return dict(value)

    name = " ".join(text("name").split())
    if not name:
        raise InvalidInputError(f"{where}: the node narr exported has no name")
    layer, lifecycle = text("layer"), text("lifecycle") or "permanent"
    if layer not in LAYERS:
        raise InvalidInputError(f"{where}: unknown layer {layer!r}")
    if lifecycle not in LIFECYCLES:
        raise InvalidInputError(f"{where}: unknown lifecycle {lifecycle!r}")
    relations = []
    for rtype, targets in mapping("relations").items():
        if not isinstance(targets, dict):
            raise InvalidInputError(f"{where}: the node's relations {rtype!r} are not an object")
        for target, attrs in targets.items():
            relations.append((str(rtype), str(target), dict(attrs) if isinstance(attrs, dict) else {}))
    ref = node.get("id")
    sections = {str(k): v for k, v in mapping("sections").items() if isinstance(v, str)}
    return Entry(where, name, layer, kind=text("kind"),
                 aliases=_strings(where, "aliases", node.get("aliases")), summary=text("summary"),
                 lifecycle=lifecycle, traits=mapping("traits"),
                 state=mapping("state"), ref=ref if isinstance(ref, str) else None, layer_given=True,
                 relations=relations, title=name, named_by="exact", exact=True,
                 tags=_strings(where, "tags", node.get("tags")), sections=sections,
                 always_in_view=node.get("always_in_view") is True, extensions=mapping("extensions"))


def book_name_of(label: str, data: Any) -> str:
    """A book's own name, else its file's stem."""
    if isinstance(data, dict):
        inner = data.get("data") if data.get("spec") == "lorebook_v3" else data
        if isinstance(inner, dict) and _clean(inner.get("name")):
            return _clean(inner.get("name"))
    return PurePosixPath(label).stem


# -- writing: World Info books and cards ----------------------------------------------

# SillyTavern's World Info entry (newWorldInfoEntryDefinition), with its defaults
WORLD_INFO_DEFAULTS: Final[dict[str, Any]] = {
    "key": [], "keysecondary": [], "comment": "", "content": "", "constant": False,
    "vectorized": False, "selective": True, "selectiveLogic": 0, "addMemo": True, "order": 100,
    "position": 0, "disable": False, "excludeRecursion": False, "preventRecursion": False,
    "delayUntilRecursion": False, "probability": 100, "useProbability": True, "depth": 4,
    "group": "", "groupOverride": False, "groupWeight": 100, "scanDepth": None,
    "caseSensitive": None, "matchWholeWords": None, "useGroupScoring": None, "automationId": "",
    "role": None, "sticky": 0, "cooldown": 0, "delay": 0,
}
# a World Info field -> where a character book keeps it under the entry's extensions
# (SillyTavern's originalWIDataKeyMap)
BOOK_EXTENSIONS: Final[dict[str, str]] = {
    "displayIndex": "display_index", "excludeRecursion": "exclude_recursion",
    "preventRecursion": "prevent_recursion", "delayUntilRecursion": "delay_until_recursion",
    "depth": "depth", "probability": "probability", "useProbability": "useProbability",
    "position": "position", "role": "role", "selectiveLogic": "selectiveLogic", "group": "group",
    "groupOverride": "group_override", "groupWeight": "group_weight",
    "matchWholeWords": "match_whole_words", "useGroupScoring": "use_group_scoring",
    "caseSensitive": "case_sensitive", "scanDepth": "scan_depth", "automationId": "automation_id",
    "vectorized": "vectorized", "sticky": "sticky", "cooldown": "cooldown", "delay": "delay",
}
_OWN_FIELDS: Final = frozenset({"uid", "key", "keys", "keysecondary", "secondary_keys", "comment",
                                "name", "content", "constant", "disable", "enabled", "displayIndex",
                                "id", "extensions", "use_regex", "insertion_order", "case_sensitive"})


_BOOK_ONLY: Final = frozenset({"keysecondary", "priority", "use_regex"})


def primary_record(node: dict[str, Any]) -> dict[str, Any] | None:
    """The SillyTavern entry an import made the node from (its text is the summary), if any."""
    records = ((node.get("extensions") or {}).get("sillytavern") or {}).get("entries") or []
    for record in records:
        if isinstance(record, dict) and record.get("section") is None \
                and isinstance(record.get("entry"), dict):
            return record
    return None


def entry_disabled(node: dict[str, Any]) -> bool:
    """The node's entry is switched off in SillyTavern (as imported, or as switched there since)."""
    record = primary_record(node)
    return record is not None and is_disabled(record["entry"], record.get("shape") == "character book")


def written_keys(raw: dict[str, Any]) -> list[str]:
    """An entry's keys as its file has them (a legacy comma string split), macros and patterns
    as written, empty ones left out."""
    value = raw.get("keys", raw.get("key", []))
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return []
    out = []
    for k in value:
        text = str(k).strip() if isinstance(k, str | int | float) and not isinstance(k, bool) else ""
        if text:
            out.append(text)
    return out


def entry_keys(node: dict[str, Any], shape: str) -> list[str]:
    """The keys of the node's entry in a book of ``shape`` (``world info`` or ``character
    book``): the keys of the entry it came from as that entry had them, in their order, then
    the aliases it has gained since; a node narr made: its name and aliases. A pattern key of a
    ``use_regex`` character book is written ``/like this/`` in World Info."""
    record = primary_record(node)
    if record is None:
        return [str(node.get("name", "")), *node.get("aliases", [])]
    raw = record["entry"]
    keys = written_keys(raw)
    if shape == "world info" and record.get("shape") == "character book" and raw.get("use_regex") is True:
        keys = [f"/{k}/" if is_pattern(k, True) and not is_pattern(k) else k for k in keys]
    have = {normalize_name(k) for k in keys}
    for alias in node.get("aliases", []):
        if normalize_name(alias) not in have:
            have.add(normalize_name(alias))
            keys.append(alias)
    return keys


def display_index(node: dict[str, Any]) -> int | None:
    """Where SillyTavern showed the node's entry in its book (as imported, or as moved there)."""
    record = primary_record(node)
    if record is None:
        return None
    raw = record["entry"]
    value = raw.get("displayIndex")
    if record.get("shape") == "character book":
        ext = raw.get("extensions")
        value = ext.get("display_index") if isinstance(ext, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def entry_flags(record: dict[str, Any] | None) -> dict[str, Any]:
    """The SillyTavern behaviour of an imported entry (its order, position, logic...) in World
    Info terms, whichever shape it came in; secondary keys included."""
    if not record or not isinstance(record.get("entry"), dict):
        return {}
    raw: dict[str, Any] = record["entry"]
    flags: dict[str, Any] = {}
    if record.get("shape") == "character book":
        got = raw.get("extensions")
        ext: dict[str, Any] = got if isinstance(got, dict) else {}
        for wi, book in BOOK_EXTENSIONS.items():
            if book in ext and wi != "displayIndex":
                flags[wi] = ext[book]
        if "insertion_order" in raw:
            flags["order"] = raw["insertion_order"]
        if "position" not in flags and raw.get("position") in ("before_char", "after_char"):
            flags["position"] = 0 if raw["position"] == "before_char" else 1
        if isinstance(raw.get("case_sensitive"), bool):
            flags["caseSensitive"] = raw["case_sensitive"]
        if "selective" in raw:
            flags["selective"] = raw["selective"] is True
        for k in ("priority", "use_regex"):
            if k in raw:
                flags[k] = raw[k]
    else:
        flags = {k: copy.deepcopy(v) for k, v in raw.items() if k not in _OWN_FIELDS}
    secondary = raw.get("secondary_keys", raw.get("keysecondary", []))
    flags["keysecondary"] = _keys("", "secondary keys", secondary) if secondary else []
    return flags


def render_content(node: dict[str, Any], tails: list[tuple[str, str]]) -> tuple[str, list[list[str]]]:
    """The text of the node's entry and how it is made (:mod:`narrative.lore.homecoming` reads
    it back): the summary, each section as ``Title: text``, then ``tails`` (``(part, words)``:
    the traits, the state, the relations, as the engine words them), one paragraph group each."""
    parts: list[list[str]] = []
    texts: list[str] = []
    summary = str(node.get("summary", "")).strip()
    if summary:
        parts.append(["summary"])
        texts.append(summary)
    for title, text in (node.get("sections") or {}).items():
        if text:
            parts.append(["section", title])
            texts.append(f"{title}: {text}")
    for part, words in tails:
        if words:
            parts.append([part, words])
            texts.append(words)
    return "\n\n".join(texts), parts


def narr_record(node: dict[str, Any], text: str, parts: list[list[str]] | None = None) -> dict[str, Any]:
    """What an export keeps of the node for narr to read back exactly, and to tell what
    SillyTavern changed: the digest of the text narr wrote and the parts it is made of."""
    kept = {k: v for k, v in node.items() if k != "created_by_event"}
    out: dict[str, Any] = {"node": kept, "text_sha256": text_digest(text)}
    if parts is not None:
        out["parts"] = parts
    return out


def world_info_entry(uid: int, *, keys: list[str], comment: str, content: str, constant: bool,
                     disabled: bool, flags: dict[str, Any], narr: dict[str, Any],
                     index: int | None = None) -> dict[str, Any]:
    """A World Info entry; ``index`` its display order (None: its uid)."""
    entry = dict(WORLD_INFO_DEFAULTS)
    # every field the entry came with, SillyTavern's newer ones too; a character book's own aside
    entry.update({k: v for k, v in flags.items() if k not in _BOOK_ONLY})
    entry.update({"uid": uid, "key": list(keys), "keysecondary": list(flags.get("keysecondary", [])),
                  "comment": comment, "content": content, "constant": constant, "disable": disabled,
                  "displayIndex": uid if index is None else index, "extensions": {"narr": narr}})
    entry["selective"] = bool(entry["keysecondary"]) or flags.get("selective") is True
    return entry


def book_entry(uid: int, *, keys: list[str], comment: str, content: str, constant: bool,
               disabled: bool, flags: dict[str, Any], narr: dict[str, Any],
               index: int | None = None) -> dict[str, Any]:
    """A character book entry (the card specs' shape) with the same behaviour."""
    ext: dict[str, Any] = {book: flags[wi] for wi, book in BOOK_EXTENSIONS.items() if wi in flags}
    ext["display_index"] = uid if index is None else index
    ext["narr"] = narr
    position = flags.get("position", 0)
    patterns = any(is_pattern(k) for k in keys)
    out: dict[str, Any] = {
        "id": uid, "keys": list(keys), "content": content,
        "extensions": ext, "enabled": not disabled,
        "insertion_order": flags.get("order", WORLD_INFO_DEFAULTS["order"]),
        "case_sensitive": flags.get("caseSensitive") is True,
        "use_regex": patterns or flags.get("use_regex") is True,
        "constant": constant, "name": comment, "comment": comment,
        "selective": bool(flags.get("keysecondary")) or flags.get("selective") is True,
        "secondary_keys": list(flags.get("keysecondary", [])),
        "position": "before_char" if position == 0 else "after_char",
    }
    if "priority" in flags:
        out["priority"] = flags["priority"]
    return out


def card_json(*, spec: str, name: str, description: str, personality: str, tags: list[str],
              record: dict[str, Any] | None, book: dict[str, Any], narr: dict[str, Any]) -> dict[str, Any]:
    """A V2 or V3 card (``spec`` "v2" or "v3") with every field its spec requires; the fields an
    import kept (``record``) come back as they were."""
    data: dict[str, Any] = {
        "name": name, "description": description, "personality": personality, "scenario": "",
        "first_mes": "", "mes_example": "", "creator_notes": "", "system_prompt": "",
        "post_history_instructions": "", "alternate_greetings": [], "tags": tags, "creator": "",
        "character_version": "", "extensions": {},
    }
    if spec == "v3":
        data["group_only_greetings"] = []
    kept = copy.deepcopy((record or {}).get("data") or {})
    for key, value in kept.items():
        if key not in CARD_FIELDS_IN_NODE:
            data[key] = value
    if not isinstance(data.get("extensions"), dict):
        data["extensions"] = {}
    data["extensions"] = {**data["extensions"], "narr": narr}
    meta = copy.deepcopy((record or {}).get("character_book") or {})
    data["character_book"] = {**meta, "extensions": meta.get("extensions") or {},
                              "name": meta.get("name") or book.get("name", name),
                              "entries": book["entries"]}
    if spec == "v3":
        return {"spec": "chara_card_v3", "spec_version": "3.0", "data": data}
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def png_card(label: str, image: bytes, v2: dict[str, Any], v3: dict[str, Any]) -> bytes:
    """``image`` as a card: a ``chara`` chunk (V2, for older readers) and a ``ccv3`` chunk (V3)."""
    import json

    def b64(card: dict[str, Any]) -> str:
        raw = json.dumps(card, ensure_ascii=False).encode("utf-8")
        return base64.b64encode(raw).decode("ascii")

    return png.with_text(label, image, [("chara", b64(v2)), ("ccv3", b64(v3))])
