"""Obsidian vaults: notes with front matter, wiki links and tags, read the way a writer keeps them.

A note (``Name.md``) is one node:

- front matter (YAML, bounded: :mod:`narrative.lore.safeyaml`): ``name`` (else the file name),
  ``layer``, ``type`` (a layer, or a word such as ``person`` or ``place`` that says one, else the
  kind), ``kind``, ``aliases`` (a list or one name), ``tags`` (a list, or words separated by commas
  or spaces), ``lifecycle``, ``summary``, ``always_in_view``, ``traits``, ``state``, ``sections``,
  ``relations`` (a type and the names, ids or ``[[links]]`` it points at; an item may be
  ``{link: "[[X]]", ...attributes}``), ``narr-id`` (the id a narr export wrote) and ``extensions``;
  any other property whose value is a link or a list of links (``rival: "[[Wen Qiao]]"``) is a
  relation of that type; every other property is kept under ``extensions.obsidian.properties``;
- the body: what comes before the first heading is the summary (unless the front matter has one:
  then it is the section ``Notes``), paragraphs kept apart, a paragraph's lines joined, links as
  the words they show; each heading starts a section of that title, its text as written; a first
  ``# Heading`` that is the note's name is only a title;
- ``[[Note]]``, ``[[Note|shown]]``, ``[[Note#Heading]]``, ``![[Note]]`` in the body become
  ``mentions`` relations to that note's node (no relation to itself; none where the front matter
  already relates the two); ``#tags`` in the body (not ``#1``, not inside a word or a URL, not in
  code) join the front matter's tags.

Folders left out (:class:`IgnoreRules`): hidden ones (``.obsidian``, ``.trash``, ``.git``),
``Templates`` (or the folder ``.obsidian/templates.json`` names), the daily-notes folder
``.obsidian/daily-notes.json`` names (with no folder, notes named like its date format), and the
lines of a ``.narrignore`` at the vault's root: a path (``Drafts/``, ``Notes/old.md``) or a
pattern (``*.excalidraw.md``); a name without a slash matches at any depth; ``!Templates`` takes a
default back.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final

from narrative import safejson
from narrative.errors import InvalidInputError
from narrative.ids import LAYERS, LIFECYCLES, normalize_name
from narrative.lore.entry import Entry
from narrative.lore.limits import MAX_ENTRY_TEXT, too_big
from narrative.lore.safeyaml import load_front_matter

NOTE_SUFFIXES: Final = (".md", ".markdown")
NARRIGNORE: Final = ".narrignore"
LINK: Final = re.compile(r"(!?)\[\[([^\[\]|#^]*)(#[^\[\]|]*)?(?:\|([^\[\]]*))?\]\]")
_TAG: Final = re.compile(r"(?<![\w/#&])#([\w][\w/-]*)")
_FENCE: Final = re.compile(r"^(```|~~~)")
_CODE_SPAN: Final = re.compile(r"`[^`\n]*`")
_HEADING: Final = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LAYER_WORDS: Final = {
    "character": "character", "person": "character", "people": "character", "npc": "character",
    "item": "item", "object": "item", "thing": "item", "weapon": "item", "artifact": "item",
    "ambient": "ambient", "weather": "ambient", "crowd": "ambient", "atmosphere": "ambient",
    "background": "background", "place": "background", "location": "background",
    "faction": "background", "organization": "background", "organisation": "background",
    "lore": "background", "rule": "background", "history": "background", "event": "background",
}
KNOWN_KEYS: Final = frozenset({
    "name", "layer", "type", "kind", "aliases", "alias", "tags", "tag", "lifecycle", "summary",
    "always_in_view", "traits", "state", "sections", "relations", "narr-id", "extensions",
})
NOTES_SECTION: Final = "Notes"


# -- which files of a vault ----------------------------------------------------------


@dataclass
class IgnoreRules:
    """What a vault import leaves out (module docstring); :meth:`reason` says why."""

    patterns: list[tuple[str, str]] = field(default_factory=list)  # (pattern, why)
    daily_name: re.Pattern[str] | None = None  # daily notes at the root, by their file name

    @classmethod
    def read(cls, narrignore: str | None, daily_notes: str | None, templates: str | None) -> IgnoreRules:
        rules = cls()
        defaults = [("Templates/", "a templates folder")]
        folder = _setting(templates, "folder")
        if folder:
            defaults.append((folder.strip("/") + "/", "the templates folder (.obsidian/templates.json)"))
        daily = _setting(daily_notes, "folder")
        if daily is not None:
            if daily.strip("/"):
                defaults.append((daily.strip("/") + "/",
                                 "the daily notes folder (.obsidian/daily-notes.json)"))
            else:
                rules.daily_name = _date_pattern(_setting(daily_notes, "format") or "YYYY-MM-DD")
        taken_back = set()
        own = []
        for line in (narrignore or "").splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("!"):
                taken_back.add(line[1:].strip().strip("/"))
            else:
                own.append((line, f"listed in {NARRIGNORE}"))
        rules.patterns = [(p, why) for p, why in defaults if p.strip("/") not in taken_back] + own
        return rules

    def reason(self, rel: str) -> str | None:
        """Why the vault file ``rel`` (a POSIX path from the vault's root) is left out, or None."""
        parts = tuple(p for p in rel.split("/") if p)
        if any(p.startswith(".") for p in parts):
            return "a hidden file or folder"
        for pattern, why in self.patterns:
            if _matches(pattern, parts):
                return why
        if self.daily_name is not None and len(parts) == 1 and self.daily_name.fullmatch(
                parts[0].rsplit(".", 1)[0]):
            return "a daily note (.obsidian/daily-notes.json)"
        return None


def _setting(text: str | None, key: str) -> str | None:
    if text is None:
        return None
    try:
        value = safejson.loads(text)
    except ValueError:
        return None
    got = value.get(key, "") if isinstance(value, dict) else None
    return got if isinstance(got, str) else None


def _date_pattern(fmt: str) -> re.Pattern[str]:
    """A moment.js date format (Obsidian's) as a pattern for file names."""
    tokens = {"YYYY": r"\d{4}", "YY": r"\d{2}", "MMMM": r"\w+", "MMM": r"\w+", "MM": r"\d{2}",
              "M": r"\d{1,2}", "DDDD": r"\d{3}", "DD": r"\d{2}", "D": r"\d{1,2}", "dddd": r"\w+",
              "ddd": r"\w+", "ww": r"\d{2}", "w": r"\d{1,2}", "gggg": r"\d{4}", "Do": r"\d{1,2}\w{2}"}
    out, i = [], 0
    while i < len(fmt):
        for token in sorted(tokens, key=len, reverse=True):
            if fmt.startswith(token, i):
                out.append(tokens[token])
                i += len(token)
                break
        else:
            out.append(re.escape(fmt[i]))
            i += 1
    return re.compile("".join(out))


def _matches(pattern: str, parts: tuple[str, ...]) -> bool:
    """Whether a vault path (its parts) is the pattern's file or under its folder."""
    folder = pattern.endswith("/")
    body = pattern.strip("/")
    if not body:
        return False
    if "/" in body:  # a path from the root
        pieces = body.split("/")
        k = len(pieces)
        return len(parts) >= (k + 1 if folder else k) and all(
            fnmatch.fnmatchcase(a, b) for a, b in zip(parts[:k], pieces, strict=False))
    names = parts[:-1] if folder else parts
    return any(fnmatch.fnmatchcase(p, body) for p in names)


def is_note(name: str) -> bool:
    return name.lower().endswith(NOTE_SUFFIXES)


# -- one note ------------------------------------------------------------------------


def split_front_matter(label: str, text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return {}, text
    for i, line in enumerate(lines[1:], 1):
        if line.rstrip() in ("---", "..."):
            meta = load_front_matter(label, "\n".join(lines[1:i]))
            if meta is None:
                meta = {}
            if not isinstance(meta, dict):
                raise InvalidInputError(f"{label}: the front matter is not a mapping of keys")
            return {str(k): v for k, v in meta.items()}, "\n".join(lines[i + 1:])
    return {}, text


def parse_note(label: str, text: str, layer: str) -> Entry:
    """The node one note describes (module docstring)."""
    if len(text) > MAX_ENTRY_TEXT:
        raise too_big(label, len(text.encode("utf-8")), MAX_ENTRY_TEXT, "note")
    meta, body = split_front_matter(label, text)
    stem = PurePosixPath(label).stem
    name = " ".join(str(meta.get("name") or stem).split())
    kind = _word(label, "kind", meta.get("kind"))
    given = meta.get("layer")
    kind_from_type = ""
    if given is None and meta.get("type") is not None:
        word = _word(label, "type", meta.get("type"))
        if word.lower() in LAYER_WORDS:
            given = LAYER_WORDS[word.lower()]
            if word.lower() not in LAYERS:
                kind_from_type = word
        else:
            kind_from_type = word
    node_layer = str(given or layer)
    if node_layer not in LAYERS:
        raise InvalidInputError(f"{label}: unknown layer {node_layer!r}; expected one of {', '.join(LAYERS)}")
    lifecycle = str(meta.get("lifecycle") or "permanent")
    if lifecycle not in LIFECYCLES:
        raise InvalidInputError(f"{label}: unknown lifecycle {lifecycle!r}; "
                                f"expected one of {', '.join(LIFECYCLES)}")
    maps = {}
    for key in ("traits", "state", "relations", "sections", "extensions"):
        value = meta.get(key) or {}
        if not isinstance(value, dict):
            raise InvalidInputError(f"{label}: {key} in the front matter must be a mapping")
        maps[key] = {str(k): v for k, v in value.items()}
    relations = _front_relations(label, maps["relations"])
    properties: dict[str, Any] = {}
    for key, value in meta.items():
        if key in KNOWN_KEYS:
            continue
        links = _links_only(value)
        if links is not None:
            rtype = "-".join(key.split())
            relations.extend((rtype, target, {}) for target in links)
        else:
            properties[key] = value
    summary_given = meta.get("summary")
    preamble, sections = split_body(body, name)
    summary = str(summary_given).strip() if summary_given is not None else preamble
    sections_out = {str(k): str(v) for k, v in maps["sections"].items()}
    if summary_given is not None and preamble:
        sections_out = {NOTES_SECTION: preamble, **sections_out}
    for title, text_ in sections:
        sections_out[_free(sections_out, title)] = text_
    tags = _tags(label, meta.get("tags", meta.get("tag")))
    for tag in body_tags(body):
        if tag not in tags:
            tags.append(tag)
    extensions = _jsonable(label, maps["extensions"])
    obsidian = dict(extensions.get("obsidian") or {})
    ref = meta.get("narr-id")
    # where the note lies, so an export puts it back there: always for a vault of the writer's,
    # for narr's own export only where the writer moved it (or it came from such a place)
    if not isinstance(ref, str) or "path" in obsidian or label not in default_paths(name, node_layer, ref):
        obsidian["path"] = label
    if properties:
        obsidian["properties"] = _jsonable(label, properties)
    if obsidian:
        extensions["obsidian"] = obsidian
    else:
        extensions.pop("obsidian", None)
    related = {normalize_name(t) for _, t, _ in relations}
    mentions = [(t, shown) for t, shown in body_links(body) if normalize_name(t) not in related]
    always = meta.get("always_in_view")
    if always is not None and not isinstance(always, bool):
        raise InvalidInputError(f"{label}: always_in_view in the front matter must be true or false")
    return Entry(label, name, node_layer, kind=kind or kind_from_type,
                 aliases=_aliases(name, _names(meta.get("aliases", meta.get("alias")))),
                 summary=summary, lifecycle=lifecycle, layer_given=given is not None,
                 traits=_jsonable(label, maps["traits"]), state=_jsonable(label, maps["state"]),
                 relations=relations, title=name, named_by="note", tags=tags, sections=sections_out,
                 always_in_view=always is True, extensions=extensions,
                 ref=ref if isinstance(ref, str) else None, exact=isinstance(ref, str),
                 mentions=mentions, note_key=normalize_name(stem))


def _word(label: str, key: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise InvalidInputError(f"{label}: {key} in the front matter must be a word")
    return " ".join(str(value).split())


def _names(values: Any) -> list[str]:
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list):
        return []
    return [" ".join(str(v).split()) for v in values
            if isinstance(v, str | int | float) and not isinstance(v, bool) and str(v).strip()]


def _aliases(name: str, candidates: list[str]) -> list[str]:
    seen = {normalize_name(name)}
    out = []
    for alias in candidates:
        if normalize_name(alias) not in seen:
            seen.add(normalize_name(alias))
            out.append(alias)
    return out


def _tags(label: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = re.split(r"[,\s]+", value)
    if not isinstance(value, list):
        raise InvalidInputError(f"{label}: tags in the front matter must be a list or words")
    out: list[str] = []
    for v in value:
        tag = str(v).strip().lstrip("#") if isinstance(v, str | int) and not isinstance(v, bool) else ""
        if tag and tag not in out:
            out.append(tag)
    return out


def _free(sections: dict[str, str], title: str) -> str:
    if title not in sections:
        return title
    n = 2
    while f"{title} ({n})" in sections:
        n += 1
    return f"{title} ({n})"


def link_target(raw: str) -> str:
    """The note a link's target names: its file stem (a path and ``.md`` left out)."""
    target = raw.strip()
    if target.lower().endswith(".md"):
        target = target[:-3]
    return PurePosixPath(target).name if "/" in target else target


def _links_only(value: Any) -> list[str] | None:
    """The targets when ``value`` is a link or a list of nothing but links, else None."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if not isinstance(item, str):
            return None
        m = LINK.fullmatch(item.strip())
        if m is None:
            return None
        if m.group(2).strip():
            out.append(link_target(m.group(2)))
    return out if items else None


def _front_relations(label: str, relations: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out: list[tuple[str, str, dict[str, Any]]] = []
    for rtype, targets in relations.items():
        items = targets if isinstance(targets, list) else [targets]
        for item in items:
            attrs: dict[str, Any] = {}
            if isinstance(item, dict):
                attrs = {str(k): v for k, v in item.items() if k != "link"}
                item = item.get("link")
            if not isinstance(item, str) or not item.strip():
                continue
            m = LINK.fullmatch(item.strip())
            target = link_target(m.group(2)) if m else " ".join(item.split())
            out.append((rtype, target, _jsonable(label, attrs)))
    return out


def _jsonable(label: str, value: dict[str, Any]) -> dict[str, Any]:
    """YAML values as JSON holds them (a date becomes its ISO text)."""
    # the front matter was checked whole when it was read (load_front_matter)
    result: dict[str, Any] = safejson.loads(json.dumps(value, default=str, ensure_ascii=False))
    return result


# -- the body ------------------------------------------------------------------------


def _prose_lines(body: str) -> list[tuple[str, bool]]:
    """Each line with whether it is prose (not inside a fenced code block)."""
    out, fenced = [], False
    for line in body.split("\n"):
        if _FENCE.match(line.strip()):
            fenced = not fenced
            out.append((line, False))
            continue
        out.append((line, not fenced))
    return out


def split_body(body: str, name: str) -> tuple[str, list[tuple[str, str]]]:
    """``(preamble as summary text, [(heading, text)])`` of a note's body."""
    chunks: list[tuple[str | None, list[str]]] = [(None, [])]
    first = True
    for line, prose in _prose_lines(body):
        m = _HEADING.match(line) if prose else None
        if m is not None:
            title = " ".join(m.group(2).split())
            if first and len(m.group(1)) == 1 and normalize_name(title) == normalize_name(name) \
                    and not any(x.strip() for x in chunks[0][1]):
                first = False
                continue  # the note's title, written once more
            chunks.append((title or "Untitled", []))
            first = False
            continue
        if line.strip():
            first = False
        chunks[-1][1].append(line)
    preamble = summary_text("\n".join(chunks[0][1]))
    sections = [(t or "", "\n".join(lines).strip("\n").rstrip()) for t, lines in chunks[1:]]
    return preamble, [(t, text) for t, text in sections]


def summary_text(text: str) -> str:
    """Prose as a summary: paragraphs apart, each paragraph's lines joined, links as they show."""
    paragraphs, para = [], []
    for line in text.split("\n"):
        if line.strip():
            para.append(line.strip())
        elif para:
            paragraphs.append(" ".join(para))
            para = []
    if para:
        paragraphs.append(" ".join(para))
    return LINK.sub(_shown, "\n\n".join(paragraphs))


def _shown(m: re.Match[str]) -> str:
    if m.group(4):
        return m.group(4)
    return m.group(2) + ((" " + m.group(3)[1:]) if m.group(3) and not m.group(2) else "")


def _prose(body: str) -> str:
    return "\n".join(_CODE_SPAN.sub(" ", line) for line, prose in _prose_lines(body) if prose)


def body_links(body: str) -> list[tuple[str, str]]:
    """``(target note, as written)`` of the wiki links in a body's prose, in order, once each."""
    out, seen = [], set()
    for m in LINK.finditer(_prose(body)):
        target = link_target(m.group(2))
        if target and normalize_name(target) not in seen:
            seen.add(normalize_name(target))
            out.append((target, m.group(0)))
    return out


def body_tags(body: str) -> list[str]:
    """The ``#tags`` of a body's prose: a letter or ``_`` after ``#`` (so not ``#1``), not after a
    word character, ``/`` or ``&`` (a URL's fragment, an entity), headings aside."""
    out: list[str] = []
    for line in _prose(body).split("\n"):
        if _HEADING.match(line):
            continue
        for m in _TAG.finditer(line):
            tag = m.group(1).rstrip("/-")
            if tag and not tag.replace("/", "").replace("-", "").replace("_", "").isdigit() \
                    and tag not in out:
                out.append(tag)
    return out


# -- writing a vault -----------------------------------------------------------------

_UNSAFE_IN_NAMES: Final = re.compile(r'[*"\\/<>:|?#^\[\]\x00-\x1f]')


def safe_stem(name: str) -> str:
    """``name`` as a note's file name: the characters Obsidian refuses in links and file names
    (``* " \\ / < > : | ? # ^ [ ]``) as ``-``, no leading dot."""
    stem = " ".join(_UNSAFE_IN_NAMES.sub("-", name).split()).strip(" .")
    return stem[:120]


def default_paths(name: str, layer: str, node_id: str) -> tuple[str, str]:
    """Where ``narr export vault`` puts a node that has no path of its own (the second when
    another note has the first's file name)."""
    from narrative.lore.codexmd import LAYER_TITLES

    stem = safe_stem(name) or node_id
    folder = LAYER_TITLES.get(layer, "Background")
    return f"{folder}/{stem}.md", f"{folder}/{stem} ({node_id}).md"


def render_note(node: dict[str, Any], *, stem: str, link_of: dict[str, str]) -> str:
    """A node as a note that :func:`parse_note` reads back to the same node: the front matter
    holds its fields and relations as ``[[links]]`` (``link_of``: target id -> note stem); the
    body its summary and ``## sections``, or, for text Markdown would change (a line that reads as
    a heading, a ``#tag``, a ``[[link]]``, a soft line break), the front matter holds them too."""
    import yaml

    meta: dict[str, Any] = {"narr-id": node["id"]}
    if node.get("name") != stem:
        meta["name"] = node["name"]
    meta["layer"] = node["layer"]
    for key in ("kind", "aliases", "tags"):
        if node.get(key):
            meta[key] = node[key]
    if node.get("lifecycle", "permanent") != "permanent":
        meta["lifecycle"] = node["lifecycle"]
    if node.get("always_in_view"):
        meta["always_in_view"] = True
    for key in ("traits", "state"):
        if node.get(key):
            meta[key] = node[key]
    relations: dict[str, list[Any]] = {}
    for rtype, targets in sorted((node.get("relations") or {}).items()):
        for dst, attrs in sorted(targets.items()):
            link = f"[[{link_of.get(dst, dst)}]]"
            relations.setdefault(rtype, []).append({"link": link, **attrs} if attrs else link)
    if relations:
        meta["relations"] = relations
    extensions = {k: v for k, v in (node.get("extensions") or {}).items() if k != "obsidian"}
    obsidian = (node.get("extensions") or {}).get("obsidian") or {}
    properties = obsidian.get("properties") or {}
    if "path" in obsidian:
        extensions["obsidian"] = {"path": obsidian["path"]}
    if extensions:
        meta["extensions"] = extensions
    summary, sections = str(node.get("summary", "")), dict(node.get("sections") or {})
    label = f"{stem}.md"
    wanted = (summary, sections)
    for in_front in ((), ("sections",), ("summary",), ("summary", "sections")):
        head = dict(meta)
        for key, value in properties.items():
            head.setdefault(key, value)
        body_summary = "" if "summary" in in_front else summary
        body_sections = {} if "sections" in in_front else sections
        if "summary" in in_front and summary:
            head["summary"] = summary
        if "sections" in in_front and sections:
            head["sections"] = sections
        parts = [body_summary] if body_summary else []
        for title, body in body_sections.items():
            parts.append(f"## {title}\n\n{body}" if body else f"## {title}")
        front = yaml.safe_dump(head, allow_unicode=True, sort_keys=False, default_flow_style=False,
                               width=1 << 20)
        note = f"---\n{front}---\n" + ("\n" + "\n\n".join(parts) + "\n" if parts else "")
        back = parse_note(label, note, node["layer"])
        if (back.summary, back.sections) == wanted and back.tags == list(node.get("tags") or []) \
                and not back.mentions:
            return note
    return note  # the last form holds everything in the front matter, which reads back as it is
