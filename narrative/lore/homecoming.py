"""What SillyTavern changed in a book or a card narr exported, as edits of the nodes it came from.

Each entry (and card) narr exports carries its node (``extensions.narr``): the node as it was,
the digest of the text narr wrote and the parts that text is made of. Read back, whatever
differs from what narr wrote is what the writer changed in SillyTavern, and comes home as an
:class:`~narrative.lore.entry.Edit` of the node, never as new text beside the old:

- **the text.** narr wrote the summary, each section as ``Title: text``, then the paragraphs
  ``Traits: ...``, ``Now: ...`` (the state) and ``Relations: ...``. The paragraphs of the text as
  it is now are matched with those narr wrote; a paragraph changed, added or removed belongs to
  the part it stands in: the summary, or that section (its ``Title: `` left out); one added
  after the traits, state or relations belongs to the last section, else to the summary. A
  section whose text is all gone is removed. In the ``Traits:`` and ``Now:`` paragraphs each
  ``key: value`` is a field: one whose words changed is set (a node's name back to its id, a
  number or ``true`` as such), one left out is removed, a new one added; a paragraph that no
  longer reads so, or a whole one removed, changes nothing and is reported. Relations are not
  read from words: a change there is reported, never made.
- **constant** is the node's ``always_in_view``.
- **keys**: a key added is an alias; a key removed that was an alias is one no more (the name
  stays the name).
- **everything else** SillyTavern keeps of the entry (switched off, order, position, depth,
  probability, where it shows the entry, the keys' order...): when it differs from what narr
  wrote, the entry as SillyTavern has it becomes the node's SillyTavern record, which the next
  export writes as it is (an entry switched off goes back switched off).
- **a card**: its description is the summary, its personality the trait ``personality``, its
  tags the tags, its other fields the card's record; its book's entries of the node's own
  sections and state are those parts.

A title (``comment``) or card name changed is reported: the node keeps its name.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any, Final

from narrative import fields, safejson
from narrative.fields import ABSENT as MISSING
from narrative.ids import normalize_name
from narrative.lore import sillytavern as st
from narrative.lore.entry import Edit
from narrative.lore.facets import is_pattern

TAILS: Final = ("traits", "state", "relations")
LINE_PREFIX: Final = {"traits": "Traits: ", "state": "Now: "}
FIELD_OF: Final = {"traits": "traits", "state": "state"}
_TEXT_FIELDS: Final = frozenset({"content", "extensions", "key", "keys", "comment", "name", "constant",
                                 "uid", "id"})


def _get(node: dict[str, Any], *tokens: str) -> Any:
    return fields.get(node, fields.pointer(*tokens))


def entry_edits(where: str, record: dict[str, Any], raw: dict[str, Any], shape: str,
                book: str) -> tuple[list[Edit], list[str]]:
    """The edits SillyTavern made to the entry ``raw`` (as its file has it) of the node narr
    exported in ``record``, and what of them cannot come home (module docstring)."""
    node = record["node"]
    edits: list[Edit] = []
    notes: list[str] = []
    got = raw.get("content")
    content = got if isinstance(got, str) else ""
    if st.text_digest(content) != record.get("text_sha256"):
        more, said = content_edits(node, record.get("parts"), content, record.get("text_sha256"))
        edits += more
        notes += said
    constant = raw.get("constant") is True
    if constant != (node.get("always_in_view") is True):
        edits.append(Edit("/always_in_view", node.get("always_in_view", MISSING), constant,
                          "constant" if constant else "constant off"))
    title = raw.get("comment") if shape == "world info" else raw.get("comment", raw.get("name"))
    if isinstance(title, str) and title.strip() and " ".join(title.split()) != node.get("name"):
        notes.append(f"its title is {' '.join(title.split())!r} in SillyTavern: the node keeps its "
                     f"name {node.get('name')!r} (rename it in narr)")
    keys = st.written_keys(raw)
    aliases, said = _alias_edit(node, keys, shape)
    if aliases is not None:
        edits.append(aliases)
    notes += said
    after = node if aliases is None else {**node, "aliases": aliases.new}
    if _behaviour_changed(after, raw, shape, keys):
        edits.append(_record_edit(node, where, raw, shape, book))
    return edits, notes


def _alias_edit(node: dict[str, Any], keys: list[str], shape: str) -> tuple[Edit | None, list[str]]:
    """The aliases as the keys now say, or None when they say the same."""
    written = [k for k in st.entry_keys(node, shape) if not is_pattern(k)]
    now = [" ".join(k.split()) for k in keys if not is_pattern(k)]
    have = {normalize_name(k) for k in now}
    before = {normalize_name(k) for k in written}
    name = normalize_name(str(node.get("name", "")))
    aliases = list(node.get("aliases") or [])
    notes = []
    gone = {normalize_name(k) for k in written} - have
    if name in gone and name:
        notes.append(f"the key {node.get('name')!r} was removed in SillyTavern: it is the node's "
                     "name, which stays")
    kept = [a for a in aliases if normalize_name(a) not in gone]
    seen = {name, *(normalize_name(a) for a in kept)}
    for k in now:
        norm = normalize_name(k)
        if norm and norm not in before and norm not in seen:
            seen.add(norm)
            kept.append(k)
    if kept == aliases:
        return None, notes
    added = [a for a in kept if a not in aliases]
    removed = [a for a in aliases if a not in kept]
    said = ", ".join([*(f"key {a!r} added" for a in added), *(f"key {a!r} removed" for a in removed)])
    return Edit("/aliases", aliases, kept, said), notes


def _behaviour_changed(node: dict[str, Any], raw: dict[str, Any], shape: str, keys: list[str]) -> bool:
    """Whether SillyTavern's entry says anything of how it fires that narr's export of ``node``
    would not say again: a field narr wrote with another value, one it added (set), the keys in
    another order."""
    flags = st.entry_flags(st.primary_record(node))
    make = st.world_info_entry if shape == "world info" else st.book_entry
    uid = raw.get("uid", raw.get("id", 0))
    index = st.display_index(node)
    expected = make(uid if isinstance(uid, int) else 0, keys=st.entry_keys(node, shape), comment="",
                    content="", constant=False, disabled=st.entry_disabled(node), flags=flags, narr={},
                    index=uid if index is None and isinstance(uid, int) else index)
    if keys != expected["key" if shape == "world info" else "keys"]:
        return True
    for field, value in expected.items():
        if field in _TEXT_FIELDS:
            continue
        if field in raw and raw[field] != value:
            return True
    got = raw.get("extensions")
    ext: dict[str, Any] = got if isinstance(got, dict) else {}
    if shape == "character book":
        for field, value in expected["extensions"].items():
            if field != "narr" and field in ext and ext[field] != value:
                return True
    for field, value in raw.items():  # what SillyTavern set that narr did not write
        if field not in expected and field not in _TEXT_FIELDS and value not in (None, False, "", [], {}, 0):
            return True
    return any(k != "narr" and k not in expected["extensions"] and v not in (None, False, "", [], {}, 0)
               for k, v in ext.items())


def _record_edit(node: dict[str, Any], where: str, raw: dict[str, Any], shape: str, book: str) -> Edit:
    """The node's SillyTavern records with its own entry as SillyTavern has it now."""
    entry = {k: copy.deepcopy(v) for k, v in raw.items() if k != "content"}
    ext = entry.get("extensions")
    if isinstance(ext, dict):
        ext = {k: v for k, v in ext.items() if k != "narr"}
        if ext:
            entry["extensions"] = ext
        else:
            entry.pop("extensions")
    mine = {"source": where, "shape": shape, "book": book, "section": None, "entry": entry}
    old = _get(node, "extensions", "sillytavern", "entries")
    records = [r for r in (old if isinstance(old, list) else [])
               if not (isinstance(r, dict) and r.get("section") is None)]
    off = st.is_disabled(raw, shape == "character book")
    said = "switched off" if off and not st.entry_disabled(node) else \
        "switched on" if st.entry_disabled(node) and not off else "its settings"
    return Edit("/extensions/sillytavern/entries", old, [mine, *records], said)


# -- the text -------------------------------------------------------------------------


def _pieces(node: dict[str, Any], parts: Any) -> list[tuple[str, str, str]] | None:
    """``(part, title or words, text narr wrote)`` of each part, or None when the record does not
    say (an export of an older narr)."""
    if not isinstance(parts, list):
        return None
    out = []
    sections = node.get("sections") or {}
    for part in parts:
        if not isinstance(part, list) or not part or not all(isinstance(p, str) for p in part):
            return None
        kind = part[0]
        if kind == "summary":
            out.append((kind, "", str(node.get("summary", "")).strip()))
        elif kind in ("section", "section-text") and len(part) == 2 \
                and isinstance(sections.get(part[1]), str):
            text = sections[part[1]]
            out.append((kind, part[1], f"{part[1]}: {text}" if kind == "section" else text))
        elif kind in TAILS and len(part) == 2:
            out.append((kind, "", part[1]))
        else:
            return None
    return out


def content_edits(node: dict[str, Any], parts: Any, content: str,
                  digest: str | None) -> tuple[list[Edit], list[str]]:
    """The edits the text ``content`` makes to the parts narr wrote (module docstring)."""
    pieces = _pieces(node, parts)
    if pieces is None or st.text_digest("\n\n".join(p[2] for p in pieces)) != digest:
        return [], ["its text was changed in SillyTavern, but this export does not say which part "
                    "of the node each paragraph was: nothing of it was taken (export again and edit that)"]
    old: list[str] = []
    owner: list[int] = []
    for i, (_, _, text) in enumerate(pieces):
        for paragraph in text.split("\n\n"):
            old.append(paragraph)
            owner.append(i)
    new = content.replace("\r\n", "\n").strip().split("\n\n") if content.strip() else []
    editable = [i for i, p in enumerate(pieces) if p[0] not in TAILS]
    got: list[list[str]] = [[] for _ in pieces]
    touched: set[int] = set()

    def home(i: int) -> int:
        if pieces[i][0] in TAILS and editable:
            return editable[-1] if i > editable[-1] else editable[0]
        return i

    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                got[owner[i1 + k]].append(new[j1 + k])
        elif tag == "delete":
            touched.update(owner[i1:i2])
        elif tag == "replace" and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                got[owner[i1 + k]].append(new[j1 + k])
                touched.add(owner[i1 + k])
        elif tag == "replace":
            first = owner[i1]
            target = first if pieces[first][0] not in TAILS or not editable else home(first)
            got[target].extend(new[j1:j2])
            touched.update(owner[i1:i2])
            touched.add(target)
        else:  # insert: the part before it (a part narr words itself: the last text part)
            target = home(owner[i1 - 1]) if i1 else (editable[0] if editable else 0)
            got[target].extend(new[j1:j2])
            touched.add(target)
    edits: list[Edit] = []
    notes: list[str] = []
    for i in sorted(touched):
        kind, title, before = pieces[i]
        now = "\n\n".join(got[i])
        if now == before:
            continue
        if kind == "summary":
            edits.append(Edit("/summary", node.get("summary", MISSING), now, "the text of its summary"))
        elif kind in ("section", "section-text"):
            pointer = fields.pointer("sections", title)
            if not now.strip():
                edits.append(Edit(pointer, node["sections"][title], MISSING, f"section {title!r} removed"))
            else:
                prefix = f"{title}: "
                text = now[len(prefix):] if kind == "section" and now.startswith(prefix) else now
                edits.append(Edit(pointer, node["sections"][title], text, f"the text of section {title!r}"))
        elif kind == "relations":
            notes.append("its relations paragraph was changed in SillyTavern: relations are not read "
                         "from words (change them in narr)")
        else:
            more, said = _field_edits(node, kind, before, now)
            edits += more
            notes += said
    return edits, notes


def _items(text: str, prefix: str) -> list[str] | None:
    if not text.startswith(prefix):
        return None
    body = text[len(prefix):].rstrip()
    if body.endswith("."):
        body = body[:-1]
    return body.split("; ") if body else []


def _field_edits(node: dict[str, Any], kind: str, before: str, now: str) -> tuple[list[Edit], list[str]]:
    """Edits of the traits or the state from their paragraph, ``key: value; ...`` (module docstring)."""
    field, prefix = FIELD_OF[kind], LINE_PREFIX[kind]
    label = "Traits" if kind == "traits" else "Now"
    if not now.strip():
        return [], [f"its {label}: paragraph was removed in SillyTavern: the {field} stays as it is "
                    "(change it in narr)"]
    values: dict[str, Any] = node.get(field) or {}
    keys = sorted(values)
    old = _items(before, prefix)
    new = _items(now, prefix)
    if old is None or len(old) != len(keys) or any(not o.startswith(f"{k}: ") for o, k in zip(old, keys,
                                                                                              strict=True)):
        return [], [f"its {label}: paragraph was changed in SillyTavern, but narr cannot read it back "
                    f"(a key or value holds '; '): the {field} stays as it is"]
    if new is None:
        return [], [f"its {label}: paragraph no longer starts with {prefix.strip()!r}: the {field} "
                    "stays as it is"]
    was = {k: o[len(k) + 2:] for k, o in zip(keys, old, strict=True)}
    by_length = sorted(keys, key=len, reverse=True)
    seen: dict[str, str] = {}
    for item in new:
        key = next((k for k in by_length if item.startswith(f"{k}: ")), None)
        if key is None:
            if ": " not in item:
                return [], [f"its {label}: paragraph has {item!r}, not 'key: value': the {field} "
                            "stays as it is"]
            key = item.split(": ", 1)[0]
        seen[key] = item[len(key) + 2:]
    edits = []
    for key in keys:
        pointer = fields.pointer(field, key)
        if key not in seen:
            edits.append(Edit(pointer, values[key], MISSING, f"{field} {key!r} removed"))
        elif seen[key] != was[key]:
            value, by_name = _value(values[key], was[key], seen[key])
            edits.append(Edit(pointer, values[key], value, f"{field} {key!r}", by_name=by_name))
    for key, words in seen.items():
        if key not in values:
            value, by_name = _value(MISSING, "", words)
            edits.append(Edit(fields.pointer(field, key), MISSING, value, f"{field} {key!r} added",
                              by_name=by_name))
    return edits, []


def _value(old: Any, old_words: str, words: str) -> tuple[Any, bool]:
    """A field's new value from its words: text stays text (a name may be a node's, as narr
    wrote an id as its node's name), a number, ``true``, ``false`` or JSON stays what it reads as."""
    if isinstance(old, str):
        return words, old_words != old
    try:
        value = safejson.loads(words)
    except ValueError:
        return words, True
    if old is MISSING and isinstance(value, dict | list | str):
        return words, True
    return value, False


# -- cards and the entries of a card's own node -----------------------------------------


def card_edits(where: str, record: dict[str, Any], data: dict[str, Any]) -> tuple[list[Edit], list[str]]:
    """The edits SillyTavern made to a card narr exported (module docstring)."""
    node = record["node"]
    edits: list[Edit] = []
    notes: list[str] = []
    got = data.get("description")
    description = got if isinstance(got, str) else ""
    if st.text_digest(description) != record.get("text_sha256") \
            and description.strip() != str(node.get("summary", "")).strip():
        edits.append(Edit("/summary", node.get("summary", MISSING), description.strip(),
                          "its description"))
    got = data.get("personality")
    personality = got if isinstance(got, str) else ""
    had = _get(node, "traits", "personality")
    if personality.strip() != (had.strip() if isinstance(had, str) else ""):
        if isinstance(had, str) or had is MISSING:
            edits.append(Edit("/traits/personality", had, personality.strip() if personality.strip()
                              else MISSING, "its personality"))
        else:
            notes.append("its personality was changed in SillyTavern, but the node's is not text: "
                         "it stays as it is")
    tags = data.get("tags")
    if isinstance(tags, list):
        now = list(dict.fromkeys(" ".join(str(t).split()) for t in tags
                                 if isinstance(t, str | int | float) and str(t).strip()))
        if now != list(node.get("tags") or []):
            edits.append(Edit("/tags", node.get("tags", MISSING), now, "its tags"))
    name = data.get("name")
    if isinstance(name, str) and " ".join(name.split()) != node.get("name"):
        notes.append(f"its name is {' '.join(name.split())!r} in SillyTavern: the node keeps its "
                     f"name {node.get('name')!r} (rename it in narr)")
    stored = _get(node, "extensions", "sillytavern", "card")
    now_fields = st.meaningful({k: v for k, v in data.items() if k not in st.CARD_FIELDS_IN_NODE})
    was = st.meaningful(stored.get("data")) if isinstance(stored, dict) else {}
    if now_fields != was:
        base = stored if isinstance(stored, dict) else {}
        edits.append(Edit("/extensions/sillytavern/card", stored, {**base, "data": now_fields},
                          "its other card fields"))
    return edits, notes


def derived_edits(node: dict[str, Any], mine: dict[str, Any], content: str) -> tuple[list[Edit], list[str]]:
    """Edits of a card's own ``node`` from an entry of its book that holds one of its parts
    (``mine``, the entry's ``extensions.narr``: a section, or its state and relations)."""
    if mine.get("text_sha256") == st.text_digest(content):
        return [], []
    return content_edits(node, mine.get("parts"), content, mine.get("text_sha256"))
