"""What an entry is about, and which entries are one thing: the naming rule and the folding rule.

Lorebook authors keep one character in several entries (basics, personality, relationships...)
that share a key, and title entries with a memo to themselves (组织设定, "faction notes"). An
import that made a node of each would scatter one character over seven nodes, or name a faction
"faction notes"; one that merged them by name would drop all but the first text. So:

**Naming** (:func:`name_for`), in this order:

1. a title that is one of the entry's keys is the name ("Lantern Guild" keyed "Lantern Guild");
2. a title that starts with one of its keys and a separator (``—`` ``–`` ``-`` ``:`` ``：`` ``·``
   ``|`` ``/`` ``(`` ``（`` ``[`` ``【``) is about that key ("Wen Qiao — basics" is Wen Qiao);
3. a title that reads as a memo (:data:`MEMO_SUFFIXES`, :data:`MEMO_WORDS`: 组织设定, 人物设定,
   秘密, "Faction notes", "Personality" ...) or that another entry of the same book has too
   gives way to the entry's first key;
4. otherwise the title is the name; with no title, the first key; with neither, the book's name
   and the entry's uid.

Keys that are patterns (``/x/i``, or any key of a ``use_regex`` entry with pattern characters)
never name anything.

**Folding** (:func:`fold`): identity is exact. An entry is another facet of an earlier one when
its name or first key is that one's name or first key (normalised: Unicode, case, width), or
when every key it has is already one of that one's names (秘密 keyed only 温乔, an alias of Wen
Qiao), or when the source gives both the same id (a note's ``id`` or ``uid`` property); never
when that would be a guess between two. Entries narr wrote itself (``exact``) are never folded
into another, two notes are two things (their paths differ, whatever their names), and two
entries whose sources both name a layer, different ones, stay two. Names that are only alike
(Light and Blight) are never folded: the import reports them.
The facets of one thing become one entry: the *primary* (narr's own record, else a card's
character or a note, else the first entry named by its title, else the first) gives the name and
the summary; every other facet's text becomes a section titled with its own title (its first key
when it has none; `` (2)`` ... when a title repeats), unless the same text is there already. Keys
become aliases, except one that is another entry's name: that entry stays its own node, and the
alias would make the name ambiguous. Every entry gets a :class:`Placement` saying where its text
went.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Final

from narrative.ids import normalize_name
from narrative.lore.entry import Entry, Placement

MEMO_SUFFIXES: Final = ("设定", "设置", "资料", "简介", "介绍", "档案", "信息", "备注", "笔记", "说明",
                        "概要", "概述", "详情", "补充", "设定集")
MEMO_WORDS: Final = frozenset({
    # Chinese headings a writer files facets under
    "性格", "外貌", "外观", "关系", "人际关系", "背景", "经历", "秘密", "能力", "人物", "角色", "组织",
    "势力", "地点", "地图", "世界观", "规则", "历史", "物品", "道具", "事件", "剧情",
    # English, as a whole title or its last word ("Faction notes", "Character profile")
    "notes", "note", "info", "information", "profile", "settings", "setting", "lore", "details",
    "overview", "summary", "basics", "personality", "appearance", "relationships", "relations",
    "background", "backstory", "history", "secrets", "secret", "abilities", "skills", "memo",
    "misc", "entry", "character", "faction", "location", "place", "item", "facts", "description",
})
SEPARATORS: Final = "—–-:：·|/(（[【"
_REGEX_KEY: Final = re.compile(r"/.+/[a-z]*")
_PATTERN_CHARS: Final = re.compile(r"[\\^$.|?*+()\[\]{}]")


def is_pattern(key: str, use_regex: bool = False) -> bool:
    """A key that is a regular expression, not a name."""
    return bool(_REGEX_KEY.fullmatch(key)) or (use_regex and bool(_PATTERN_CHARS.search(key)))


def reads_as_memo(title: str) -> bool:
    """A title a writer gives a note to self rather than to a thing (see :data:`MEMO_WORDS`)."""
    text = title.strip()
    if any(text.endswith(s) for s in MEMO_SUFFIXES):
        return True
    words = re.findall(r"\w+", normalize_name(text))
    return bool(words) and (" ".join(words) in MEMO_WORDS or words[-1] in MEMO_WORDS)


def name_for(title: str, keys: list[str], *, title_shared: bool, fallback: str) -> tuple[str, str]:
    """``(name, how)`` of an entry by the rule in the module docstring."""
    norms = [normalize_name(k) for k in keys]
    if title:
        t = normalize_name(title)
        if t in norms:
            return title, "title"
        for key, norm in sorted(zip(keys, norms, strict=True), key=lambda kn: -len(kn[1])):
            rest = t[len(norm):].lstrip() if norm and t.startswith(norm) else ""
            if rest and rest[0] in SEPARATORS:
                return key, "the key its title starts with"
        if keys and title_shared:
            return keys[0], "first key (another entry has the same title)"
        if keys and reads_as_memo(title):
            return keys[0], "first key (the title reads as a memo)"
        return title, "title"
    if keys:
        return keys[0], "first key (no title)"
    return fallback, "book and entry (no title, no key)"


_PRIMARY_RANK: Final = {"exact": 0, "card": 1, "note": 1, "title": 2}


def _rank(e: Entry) -> int:
    return 0 if e.exact else _PRIMARY_RANK.get(e.named_by, 3)


class _Group:
    def __init__(self, first: Entry) -> None:
        self.members: list[Entry] = [first]
        self.names: set[str] = set()  # every name and key of every member, normalised
        self.heads: set[str] = set()  # names and first keys: what "by name or first key" meets

    def learn(self, e: Entry) -> None:
        for n in (e.name, *e.aliases, *e.keys):
            if normalize_name(n):
                self.names.add(normalize_name(n))
        for n in (e.name, e.first_key):
            if normalize_name(n):
                self.heads.add(normalize_name(n))


def fold(entries: list[Entry]) -> tuple[list[Entry], list[Placement]]:
    """The entries with the facets of one thing folded into one, and where each entry went."""
    groups: list[_Group] = []
    by_head: dict[str, list[int]] = {}  # a name or first key -> the groups it is the head of
    by_name: dict[str, set[int]] = {}  # any name or key -> groups holding it
    by_id: dict[str, int] = {}  # an id the source gives -> its group
    member_of: list[int] = []
    for e in entries:
        found = None if e.exact else _home(e, groups, by_head, by_name, by_id)
        if found is None:
            groups.append(_Group(e))
            found = len(groups) - 1
        else:
            groups[found].members.append(e)
        group = groups[found]
        group.learn(e)
        for n in group.heads:
            heads = by_head.setdefault(n, [])
            if found not in heads:
                heads.append(found)
        for n in group.names:
            by_name.setdefault(n, set()).add(found)
        for sid in e.source_ids:
            by_id.setdefault(sid, found)
        member_of.append(found)

    merged: list[Entry] = []
    where: dict[int, tuple[str | None, str]] = {}  # id(entry) -> (section, note)
    for group in groups:
        merged.append(_merge(group, where))
    named = {normalize_name(m.name): i for i, m in enumerate(merged)}
    for i, m in enumerate(merged):
        if m.exact:
            continue  # narr's own record: its aliases are the node's
        kept = []
        for alias in m.aliases:
            other = named.get(normalize_name(alias))
            if other is not None and other != i:
                continue  # another node's name: the entry of that name stays its own node
            kept.append(alias)
        m.aliases = kept
    placements = [Placement(e, g, *where[id(e)]) for e, g in zip(entries, member_of, strict=True)]
    return merged, placements


def _home(e: Entry, groups: list[_Group], by_head: dict[str, list[int]],
          by_name: dict[str, set[int]], by_id: dict[str, int]) -> int | None:
    """The one group ``e`` is a facet of, or None (no group, or more than one it may be)."""
    for sid in e.source_ids:
        if sid in by_id:
            return by_id[sid]
    for n in (e.name, e.first_key):
        norm = normalize_name(n)
        fits = [g for g in by_head.get(norm, ()) if _compatible(e, groups[g])] if norm else []
        if len(fits) == 1:
            return fits[0]
        if fits:
            return None  # the name heads two things: which one is a guess
    keys = {normalize_name(k) for k in e.keys if normalize_name(k)}
    if keys:
        fits = [g for g in sorted(by_name.get(normalize_name(e.first_key), ()))
                if keys <= groups[g].names and _compatible(e, groups[g])]
        if len(fits) == 1:
            return fits[0]
    return None


def _compatible(e: Entry, group: _Group) -> bool:
    if any(m.exact for m in group.members) and e.layer_given:
        return False  # narr's own record and another source that names a layer: two things
    if e.note_path and any(m.note_path for m in group.members):
        return False  # two notes are two things, whatever their names (their paths differ)
    return not any(m.layer_given and e.layer_given and m.layer != e.layer for m in group.members)


def _merge(group: _Group, where: dict[int, tuple[str | None, str]]) -> Entry:
    members = group.members
    primary = min(members, key=_rank)  # min keeps the first of equal rank
    _mark_records(primary, None)
    where[id(primary)] = (None, "")
    if len(members) == 1:
        return primary  # nothing folds into it: the entry is the node as it is
    node = copy.deepcopy(primary)
    given = next((m for m in members if m.layer_given), None)
    if given is not None:
        node.layer, node.layer_given = given.layer, True
    names = {normalize_name(node.name)} | {normalize_name(a) for a in node.aliases}
    texts = {_same(node.summary)} | {_same(t) for t in node.sections.values()}
    for m in members:
        if m is primary:
            continue
        for n in (m.name, *m.aliases, *m.keys):
            if normalize_name(n) and normalize_name(n) not in names:
                names.add(normalize_name(n))
                node.aliases.append(n)
        node.kind = node.kind or m.kind
        for k, v in m.traits.items():
            node.traits.setdefault(k, v)
        for k, v in m.state.items():
            node.state.setdefault(k, v)
        node.relations.extend(m.relations)
        node.mentions.extend(m.mentions)
        node.tags.extend(t for t in m.tags if t not in node.tags)
        node.always_in_view = node.always_in_view or m.always_in_view
        section: str | None = None
        note = ""
        if m.summary.strip():
            if not node.summary.strip():
                node.summary = m.summary
                note = "its text is the node's summary"
            elif _same(m.summary) in texts:
                note = "the same text is there already"
            else:
                section = free_title(node.sections, m.title or m.first_key or m.name or m.source)
                node.sections[section] = m.summary
        else:
            note = "no text: its keys are the node's aliases"
        texts.add(_same(m.summary))
        for title, text in m.sections.items():
            if _same(text) not in texts:
                node.sections[free_title(node.sections, title)] = text
                texts.add(_same(text))
        _mark_records(m, section)
        merge_extensions(node.extensions, m.extensions)
        where[id(m)] = (section, note)
    return node


def _same(text: str) -> str:
    return " ".join(text.split())


def free_title(sections: dict[str, str], title: str) -> str:
    title = " ".join(title.split()) or "notes"
    if title not in sections:
        return title
    n = 2
    while f"{title} ({n})" in sections:
        n += 1
    return f"{title} ({n})"


def _mark_records(e: Entry, section: str | None) -> None:
    """The SillyTavern records of ``e`` say which section holds its text (None: the summary);
    narr's own records are the node's as they are."""
    if e.exact:
        return
    for record in (e.extensions.get("sillytavern") or {}).get("entries", []):
        if isinstance(record, dict) and "section" not in record:
            record["section"] = section


def merge_extensions(into: dict[str, Any], more: dict[str, Any]) -> None:
    """Namespaced data of two facets: lists join, the primary's values win otherwise."""
    for space, value in more.items():
        mine = into.get(space)
        if mine is None:
            into[space] = copy.deepcopy(value)
        elif isinstance(mine, dict) and isinstance(value, dict):
            for key, v in value.items():
                if isinstance(mine.get(key), list) and isinstance(v, list):
                    mine[key] = [*mine[key], *copy.deepcopy(v)]
                else:
                    mine.setdefault(key, copy.deepcopy(v))
