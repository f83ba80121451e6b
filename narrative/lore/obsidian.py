"""Obsidian vaults: notes with front matter, wiki links and tags, read the way a writer keeps them.

A note (``Name.md``) is one node:

- its **name**: the front matter's ``name``, else a leading ``# Title`` (the body's first line,
  when it is the note's only first-level heading or names the file), else the file name;
- **front matter** (YAML, bounded: :mod:`narrative.lore.safeyaml`): ``layer``, ``type`` (a layer,
  or a word such as ``person`` or ``place`` that says one, else the kind), ``kind``, ``aliases``
  (a list or one name), ``tags`` (a list, or words separated by commas or spaces),
  ``lifecycle``, ``always_in_view``, ``traits.KEY`` and ``state.KEY`` (one property a field, as
  Obsidian's flat properties hold them; a ``traits`` or ``state`` mapping is read too),
  ``summary``, ``sections``, ``relations`` (a type and the names, ids or ``[[links]]`` it points
  at; an item may be ``{link: "[[X]]", ...attributes}``), ``narr-id`` (the id a narr export
  wrote) and ``extensions``; any other property whose value is a link or a list of links
  (``rival: "[[Wen Qiao]]"``) is a relation of that type; every other property is kept under
  ``extensions.obsidian.properties``;
- the **body**, as Markdown, byte for byte (line breaks, lists, tables, quotes, code and
  ``[[links]]`` as written; blank lines at either end and the spaces ending the text left out):
  what comes before the first heading is the summary (unless the front matter has one: then it
  is the section ``Notes``); the shallowest headings below the title start the sections, each
  of that heading's title, deeper headings staying inside them;
- ``[[Note]]``, ``[[Note|shown]]``, ``[[Note#Heading]]``, ``![[Note]]`` in the body stay in the
  text and are listed as the note's ``mentions`` (the engine makes each a relation to the note
  it resolves to, :mod:`narrative.lore.wikilinks`); ``#tags`` in the body (not ``#1``, not
  inside a word or a URL, not in code) join the front matter's tags.

A note narr wrote (``narr export vault``, :mod:`narrative.lore.vaultnote`: it has ``narr-id``) is
read as the node it holds: its relations are the lines of its last ``## Relations`` section
(``- type:: [[Note]]``), what flat properties cannot hold is in the fenced ``narr`` block that
ends it, and its body's links and tags are its text only (the node's own relations and tags
are the structured ones, so that a relation removed in narr does not come back).

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
from narrative.lore.limits import MAX_ENTRY_TEXT, check_value, too_big
from narrative.lore.safeyaml import load_front_matter
from narrative.lore.wikilinks import link_text, links_in, prose, prose_lines

NOTE_SUFFIXES: Final = (".md", ".markdown")
NARRIGNORE: Final = ".narrignore"
_TAG: Final = re.compile(r"(?<![\w/#&])#([\w][\w/-]*)")
HEADING: Final = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
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
FIELD_PREFIXES: Final = ("traits.", "state.")  # flat properties: one per trait or state field
NOTES_SECTION: Final = "Notes"
RELATIONS_SECTION: Final = "Relations"
DATA_FENCE: Final = "```narr"
RELATION_LINE: Final = re.compile(r"^- ([^\s:/~]{1,64}):: \[\[([^\[\]\n]+)\]\](?: (\{.*\}))?[ \t]*$")


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


@dataclass
class Body:
    """A note's body: its leading ``# Title`` (None: none), the text before the first section,
    and the sections in order, each text as written."""

    title: str | None
    preamble: str
    sections: list[tuple[str, str]]


def block(lines: list[str]) -> str:
    """Lines as a text field: blank lines at either end and the spaces ending it left out."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end]).rstrip()


def split_body(body: str, stem: str) -> Body:
    """The title, preamble and sections of a note's body (module docstring)."""
    lines = prose_lines(body)
    heads: list[tuple[int, int, str]] = []  # (line, level, title)
    for i, (line, is_prose) in enumerate(lines):
        m = HEADING.match(line) if is_prose else None
        if m is not None:
            heads.append((i, len(m.group(1)), " ".join((m.group(2) or "").split())))
    first = next((i for i, (line, _) in enumerate(lines) if line.strip()), None)
    title = None
    skip = -1
    if heads and heads[0][0] == first and heads[0][1] == 1:
        ones = sum(1 for h in heads if h[1] == 1)
        if ones == 1 or normalize_name(heads[0][2]) == normalize_name(stem):
            title, skip = heads[0][2] or None, heads[0][0]
            heads = heads[1:]
    level = min((h[1] for h in heads), default=0)
    cuts = [h for h in heads if h[1] == level]
    text = [line for line, _ in lines]
    preamble_end = cuts[0][0] if cuts else len(text)
    preamble = block(text[skip + 1:preamble_end])
    sections = []
    for k, (at, _, heading) in enumerate(cuts):
        upto = cuts[k + 1][0] if k + 1 < len(cuts) else len(text)
        sections.append((heading or "Untitled", block(text[at + 1:upto])))
    return Body(title, preamble, sections)


def take_data(label: str, body: str) -> tuple[str, dict[str, Any]]:
    """A narr note's body without the fenced ``narr`` block that ends it, and the block's data."""
    lines = body.split("\n")
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    if not end or lines[end - 1].strip() != "```":
        return body, {}
    start = end - 2
    while start >= 0 and not lines[start].startswith("```"):
        start -= 1
    if start < 0 or lines[start].strip() != DATA_FENCE:
        return body, {}
    try:
        data = safejson.loads("\n".join(lines[start + 1:end - 1]))
    except ValueError:
        raise InvalidInputError(f"{label}: the narr block at its end is not JSON",
                                hint="it holds what the note's properties cannot: mend or remove "
                                     "it") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{label}: the narr block at its end is not an object")
    check_value(f"{label} (narr block)", data)
    return "\n".join(lines[:start]), data


def relation_lines(label: str, text: str) -> list[tuple[str, str, dict[str, Any]]] | None:
    """The relations a narr note's ``## Relations`` section lists (``- type:: [[Note]]``,
    attributes as a JSON object after it), or None when it holds anything else."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        m = RELATION_LINE.match(line)
        if m is None:
            return None
        attrs: dict[str, Any] = {}
        if m.group(3):
            try:
                got = safejson.loads(m.group(3))
            except ValueError:
                return None
            if not isinstance(got, dict):
                return None
            check_value(f"{label} (relations)", got)
            attrs = got
        out.append((m.group(1), f"[[{m.group(2).split('|')[0].strip()}]]", attrs))
    return out


def parse_note(label: str, text: str, layer: str) -> Entry:
    """The node one note describes (module docstring)."""
    if len(text) > MAX_ENTRY_TEXT:
        raise too_big(label, len(text.encode("utf-8")), MAX_ENTRY_TEXT, "note")
    text = text.replace("\r\n", "\n")
    meta, body = split_front_matter(label, text)
    stem = PurePosixPath(label).stem
    ref = meta.get("narr-id")
    own = isinstance(ref, str)  # narr wrote it: the node as it was, exactly
    data: dict[str, Any] = {}
    if own:
        body, data = take_data(label, body)
    parts = split_body(body, stem)
    relations: list[tuple[str, str, dict[str, Any]]] = []
    if own and parts.sections and parts.sections[-1][0] == RELATIONS_SECTION:
        listed = relation_lines(label, parts.sections[-1][1])
        if listed is not None:
            relations = listed
            parts.sections.pop()
    for key in ("name", "kind", "aliases", "tags"):  # a field the note could not hold as written
        if key in data:
            meta[key] = data[key]
    given_name = meta.get("name")
    name = " ".join(str(given_name if given_name not in (None, "") else parts.title or stem).split())
    if not normalize_name(name):
        raise InvalidInputError(f"{label}: the note has no name (its name is blank)",
                                hint="give it one: name: ... in its front matter")
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
    for key in ("traits", "state", "sections", "extensions"):
        more = data.get(key) or {}
        if not isinstance(more, dict):
            raise InvalidInputError(f"{label}: {key} in the narr block must be an object")
        maps[key].update(more)
    relations += _front_relations(label, maps["relations"])
    properties: dict[str, Any] = {}
    fields: dict[str, dict[str, Any]] = {"traits": maps["traits"], "state": maps["state"]}
    for key, value in meta.items():
        if key in KNOWN_KEYS:
            continue
        prefix = next((p for p in FIELD_PREFIXES if key.startswith(p)), None)
        if prefix is not None:
            fields[prefix[:-1]][key[len(prefix):]] = value
            continue
        links = _links_only(value)
        if links is not None:
            rtype = "-".join(key.split())
            relations.extend((rtype, f"[[{target}]]", {}) for target in links)
        else:
            properties[key] = value
    summary_given = data.get("summary", meta.get("summary"))
    if summary_given is not None:
        summary = str(summary_given) if "summary" in data else str(summary_given).strip()
    else:
        summary = parts.preamble
    sections_out = {str(k): str(v) for k, v in maps["sections"].items()}
    if summary_given is not None and parts.preamble:  # the body's text is kept, as a section
        sections_out = {NOTES_SECTION: parts.preamble, **sections_out}
    for title, text_ in parts.sections:
        sections_out[free_title(sections_out, title)] = text_
    tags = _tags(label, meta.get("tags", meta.get("tag")))
    if not own:
        for tag in body_tags(body):
            if tag not in tags:
                tags.append(tag)
    extensions = _jsonable(label, maps["extensions"])
    obsidian = dict(extensions.get("obsidian") or {})
    # where the note lies, so an export puts it back there: always for a vault of the writer's,
    # for narr's own export only where the writer moved it (or the block says so)
    from narrative.lore.vaultnote import default_paths

    if not own or "path" in obsidian or label not in default_paths(name, node_layer, str(ref)):
        obsidian["path"] = label
    if properties:
        obsidian["properties"] = _jsonable(label, properties)
    if obsidian:
        extensions["obsidian"] = obsidian
    else:
        extensions.pop("obsidian", None)
    mentions = [] if own else links_in("\n\n".join([summary, *sections_out.values()]))
    value_links = [(f, k, t) for f, values in fields.items() for k, v in values.items()
                   if isinstance(v, str) and (t := link_text(v)) is not None]
    always = meta.get("always_in_view")
    if always is not None and not isinstance(always, bool):
        raise InvalidInputError(f"{label}: always_in_view in the front matter must be true or false")
    ids = _source_ids(properties)
    return Entry(label, name, node_layer, kind=kind or kind_from_type,
                 aliases=_aliases(name, [*_names(meta.get("aliases", meta.get("alias"))),
                                         *([" ".join(parts.title.split())] if parts.title else [])]),
                 summary=summary, lifecycle=lifecycle, layer_given=given is not None,
                 traits=_jsonable(label, fields["traits"]), state=_jsonable(label, fields["state"]),
                 relations=relations, title=name, named_by="note", tags=tags, sections=sections_out,
                 always_in_view=always is True, extensions=extensions,
                 ref=ref if own else None, exact=own, mentions=mentions,
                 note_path=PurePosixPath(label).with_suffix("").as_posix(),
                 value_links=value_links, source_ids=ids)


def _source_ids(properties: dict[str, Any]) -> list[str]:
    """The ids a writer's note gives itself (``id``, ``uid`` properties): the same id is the same thing."""
    out = []
    for key in ("id", "uid"):
        value = properties.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            out.append(f"{key}:{str(value).strip()}")
    return out


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


def free_title(sections: dict[str, str], title: str) -> str:
    """``title``, or ``title (2)``, ``(3)``... when a section has it already."""
    if title not in sections:
        return title
    n = 2
    while f"{title} ({n})" in sections:
        n += 1
    return f"{title} ({n})"


def _links_only(value: Any) -> list[str] | None:
    """The targets when ``value`` is a link or a list of nothing but links, else None."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if not isinstance(item, str):
            return None
        target = link_text(item)
        if target is None:
            return None
        out.append(target)
    return out if items else None


def _front_relations(label: str, relations: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """A ``relations`` mapping: a link target comes as ``[[target]]``, a name or an id as it is."""
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
            target = link_text(item)
            out.append((rtype, f"[[{target}]]" if target is not None else " ".join(item.split()),
                        _jsonable(label, attrs)))
    return out


def _jsonable(label: str, value: dict[str, Any]) -> dict[str, Any]:
    """YAML values as JSON holds them (a date becomes its ISO text)."""
    # the front matter was checked whole when it was read (load_front_matter)
    result: dict[str, Any] = safejson.loads(json.dumps(value, default=str, ensure_ascii=False))
    return result


def body_tags(body: str) -> list[str]:
    """The ``#tags`` of a body's prose: a letter or ``_`` after ``#`` (so not ``#1``), not after a
    word character, ``/`` or ``&`` (a URL's fragment, an entity), headings aside."""
    out: list[str] = []
    for line in prose(body).split("\n"):
        if HEADING.match(line):
            continue
        for m in _TAG.finditer(line):
            tag = m.group(1).rstrip("/-")
            if tag and not tag.replace("/", "").replace("-", "").replace("_", "").isdigit() \
                    and tag not in out:
                out.append(tag)
    return out
