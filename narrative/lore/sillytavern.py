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
- ``{{char}}`` (``<BOT>``, ``<char>``; V3: the nickname when there is one) and ``{{user}}``
  (``<USER>``) are replaced, case aside, in what becomes the world's text; the record keeps them.
  A book with no card around it leaves ``{{char}}`` as it is;
- a legacy ``"key": "a,b"`` is split at its commas.

An export of narr's (``extensions.narr`` on a card or an entry) carries the node itself and is
read back exactly: the round trip changes nothing.
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

DEFAULT_USER: Final = "User"  # SillyTavern's own default persona name
_CHAR: Final = re.compile(r"\{\{\s*char\s*\}\}|<bot>|<char>", re.IGNORECASE)
CHAR_MACRO: Final = _CHAR  # what is left of {{char}} in a book with no card
_USER: Final = re.compile(r"\{\{\s*user\s*\}\}|<user>", re.IGNORECASE)
CARD_FIELDS_IN_NODE: Final = ("name", "description", "personality", "tags", "character_book")


@dataclass(frozen=True)
class Macros:
    """What ``{{char}}`` and ``{{user}}`` stand for (``char`` None: no card, left as written)."""

    char: str | None
    user: str = DEFAULT_USER

    def __call__(self, text: str) -> str:
        if self.char is not None:
            text = _CHAR.sub(lambda _: self.char or "", text)
        return _USER.sub(lambda _: self.user, text)


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


def parse_card(label: str, card: dict[str, Any], *, layer: str, user: str = DEFAULT_USER) -> list[Entry]:
    """The character of a card, then the entries of its book."""
    versioned = isinstance(card.get("data"), dict)
    data: dict[str, Any] = card["data"] if versioned else card
    name = _clean(data.get("name"))
    if not name:
        raise InvalidInputError(f"{label}: the character card has no name")
    nickname = _clean(data.get("nickname"))
    macros = Macros(nickname or name, user)
    record: dict[str, Any] = {}
    if versioned:
        record["spec"] = card.get("spec")
        record["spec_version"] = card.get("spec_version")
    record["data"] = {k: copy.deepcopy(v) for k, v in data.items() if k not in CARD_FIELDS_IN_NODE}
    book = data.get("character_book")
    if book is not None and not isinstance(book, dict):
        raise InvalidInputError(f"{label}: the card's character_book is {_type(book)}, not an object")
    if isinstance(book, dict):
        record["character_book"] = {k: copy.deepcopy(v) for k, v in book.items() if k != "entries"}
    node = Entry(label, name, "character", kind="person", layer_given=True, title=name,
                 named_by="card", aliases=[nickname] if nickname and nickname != name else [],
                 summary=macros(_text(label, "description", data.get("description"))),
                 traits=_trait(macros(_text(label, "personality", data.get("personality")))),
                 tags=_strings(label, "tags", data.get("tags", card.get("tags"))),
                 extensions={"sillytavern": {"card": record}})
    mine = _narr_record(data.get("extensions"))
    if mine is not None:
        node = exact_entry(label, mine, "description", data.get("description"), node.extensions)
    entries = [node]
    if isinstance(book, dict):
        book_name = _clean(book.get("name")) or name
        entries += parse_book(label, book, layer=layer, macros=macros, book_name=book_name)
    return entries


def _trait(personality: str) -> dict[str, Any]:
    return {"personality": personality} if personality else {}


# -- books ---------------------------------------------------------------------------


def parse_book(label: str, data: Any, *, layer: str, macros: Macros, book_name: str) -> list[Entry]:
    """The entries of a World Info file, a character book or a V3 ``lorebook_v3``."""
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
    for r in read:
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
        if isinstance(derived, dict) and isinstance(derived.get("of"), str):
            entry.derived_of = derived["of"]
        mine = _narr_record(ext)
        if mine is not None:
            entry = exact_entry(where, mine, "content", r["content_raw"], {})
            entry.always_in_view, entry.disabled = r["constant"], r["disabled"]
            entry.aliases += _aliases(entry.name, [k for k in r["keys"] if normalize_name(k) not in
                                                   {normalize_name(a) for a in entry.aliases}])
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
    disabled = item.get("enabled") is False if card_shape else item.get("disable") is True
    if card_shape and "disable" in item:
        disabled = disabled or item.get("disable") is True
    raw = {k: copy.deepcopy(v) for k, v in item.items() if k != "content"}
    return {"key": key, "where": where, "title": title, "keys": keys, "content": macros(content_raw).strip(),
            "content_raw": content_raw, "constant": item.get("constant") is True,
            "disabled": disabled, "shape": "character book" if card_shape else "world info", "raw": raw}


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


EDITED_SECTION: Final = "Edited in SillyTavern"


def exact_entry(where: str, record: dict[str, Any], field: str, text: Any,
                extensions: dict[str, Any]) -> Entry:
    """The node narr exported, from its ``narr`` record, with what SillyTavern may have changed
    since: text edited there (its digest no longer matches) is kept as the section
    :data:`EDITED_SECTION`; a card's fields, when they hold more than narr wrote, replace the
    node's record of them. ``extensions`` is what the entry or card would give a new node."""
    entry = entry_from_node(where, record["node"])
    if isinstance(text, str) and record.get("text_sha256") not in (None, text_digest(text)):
        entry.sections[EDITED_SECTION] = text.strip()
    card = (extensions.get("sillytavern") or {}).get("card")
    if isinstance(card, dict):
        stored = (entry.extensions.get("sillytavern") or {}).get("card")
        now = _meaningful(card.get("data"))
        if stored is None and now:
            entry.extensions.setdefault("sillytavern", {})["card"] = {**card, "data": now}
        elif isinstance(stored, dict) and _meaningful(stored.get("data")) != now:
            entry.extensions["sillytavern"]["card"] = {**stored, "data": now}
    return entry


def _meaningful(data: Any) -> dict[str, Any]:
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


def entry_flags(record: dict[str, Any] | None) -> dict[str, Any]:
    """The SillyTavern behaviour of an imported entry (its order, position, logic...) in World
    Info terms, whichever shape it came in; secondary keys and pattern keys included."""
    if not record or not isinstance(record.get("entry"), dict):
        return {}
    raw: dict[str, Any] = record["entry"]
    flags: dict[str, Any] = {}
    if record.get("shape") == "character book":
        got = raw.get("extensions")
        ext: dict[str, Any] = got if isinstance(got, dict) else {}
        for wi, book in BOOK_EXTENSIONS.items():
            if book in ext:
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
    keys = _keys("", "keys", raw.get("keys", raw.get("key", [])))
    use_regex = raw.get("use_regex") is True
    flags["patterns"] = [k for k in keys if is_pattern(k, use_regex)]
    return flags


def narr_record(node: dict[str, Any], text: str) -> dict[str, Any]:
    """What an export keeps of the node for narr to read back exactly."""
    kept = {k: v for k, v in node.items() if k != "created_by_event"}
    return {"node": kept, "text_sha256": text_digest(text)}


def world_info_entry(uid: int, *, keys: list[str], comment: str, content: str, constant: bool,
                     disabled: bool, flags: dict[str, Any], narr: dict[str, Any]) -> dict[str, Any]:
    entry = dict(WORLD_INFO_DEFAULTS)
    entry.update({k: v for k, v in flags.items() if k in WORLD_INFO_DEFAULTS})
    # World Info has no use_regex: a pattern is a key written /like this/
    patterns = [k if is_pattern(k) else f"/{k}/" for k in flags.get("patterns", [])]
    entry.update({"uid": uid, "key": [*keys, *patterns],
                  "keysecondary": list(flags.get("keysecondary", [])), "comment": comment,
                  "content": content, "constant": constant, "disable": disabled,
                  "displayIndex": uid, "extensions": {"narr": narr}})
    entry["selective"] = bool(entry["keysecondary"]) or flags.get("selective") is True
    return entry


def book_entry(uid: int, *, keys: list[str], comment: str, content: str, constant: bool,
               disabled: bool, flags: dict[str, Any], narr: dict[str, Any]) -> dict[str, Any]:
    """A character book entry (the card specs' shape) with the same behaviour."""
    ext: dict[str, Any] = {book: flags[wi] for wi, book in BOOK_EXTENSIONS.items() if wi in flags}
    ext["display_index"] = uid
    ext["narr"] = narr
    position = flags.get("position", 0)
    out: dict[str, Any] = {
        "id": uid, "keys": [*keys, *flags.get("patterns", [])], "content": content,
        "extensions": ext, "enabled": not disabled,
        "insertion_order": flags.get("order", WORLD_INFO_DEFAULTS["order"]),
        "case_sensitive": flags.get("caseSensitive") is True,
        "use_regex": bool(flags.get("patterns")) or flags.get("use_regex") is True,
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
