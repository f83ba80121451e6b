"""``narr import``: a story bible the writer already has becomes nodes, in one event.

Four sources are read, each file recognised by its content rather than its name:

- a SillyTavern World Info / lorebook (``{"entries": {"0": {...}}}`` or a list of
  entries): an entry's title (``comment``) is the name, its keys the aliases, its
  content the summary; the layer is the caller's (``background`` by default);
- a SillyTavern character card (V2/V3 ``{"spec": "chara_card_v2", "data": {...}}``,
  or the flat V1 form): one character node, ``description`` as its summary and
  ``personality`` as a trait; a lorebook embedded in the card comes along;
- Markdown notes with YAML front matter (Obsidian style, one note per node): the
  keys ``name``, ``layer``, ``kind``, ``aliases``, ``lifecycle``, ``summary``,
  ``traits``, ``state`` and ``relations`` (type -> names or ids); without them the
  file stem is the name and the first paragraph the summary;
- narr's own ``narr export codex`` Markdown, read back whole: names, aliases,
  summaries, kinds, lifecycles, traits, state and relations (the outgoing ones:
  the incoming ones are the other node's).

Everything a source holds becomes one delta: the creates first, then the
relations, so that a relation can name a node created in the same import. The
delta goes through the arbiter (:func:`narrative.delta.arbiter.arbitrate`) against
the world as it stands, hand edits included, so an entry the world already has
(the same name or an alias of it in any layer, a close spelling in its own layer,
the same id in the same layer) becomes a reference and adds only what the world
lacks: state fields and relations, aliases the node does not carry (unless another
node carries them) and a summary where it has none. A summary it has is never
overwritten, a different one is noted, and so is a layer the source gives that is not
the node's. Importing a file twice adds nothing, and the second time no event is
recorded at all. A name the import would leave on two nodes is reported (``ambiguous``):
``narr get`` would then ask which is meant. Ids are made as ``narr new`` makes them
(pinyin for Chinese names); a codex keeps its own ids where they are free.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from narrative.delta.arbiter import arbitrate
from narrative.delta.request import EventRequest
from narrative.engine.codex import LAYER_TITLES
from narrative.engine.event import EventResult, run_event
from narrative.engine.naming import Names
from narrative.engine.new import free_id, slugify
from narrative.errors import InvalidInputError, NotFoundError
from narrative.ids import LAYERS, LIFECYCLES, id_problem, normalize_name
from narrative.model import CreateOp, Delta, Node, Op, RelateOp, SetOp
from narrative.store.worldrepo import WorldRepo

Progress = Callable[[int, int, str], None]

NOTE_SUFFIXES: Final = (".md", ".markdown")
_CODEX_TITLE: Final = re.compile(r"^# .*: codex\s*$")
_WIKILINK: Final = re.compile(r"\[\[([^\]|]*)(?:\|([^\]]*))?\]\]")
_LAYER_BY_TITLE: Final = {title: layer for layer, title in LAYER_TITLES.items()}


@dataclass
class Entry:
    """One node a source describes, before it has an id in this world."""

    source: str  # "file" or "file#entry"
    name: str
    layer: str
    kind: str = ""
    aliases: list[str] = field(default_factory=list)
    summary: str = ""
    lifecycle: str = "permanent"
    traits: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    ref: str | None = None  # the id the source gave the node (a codex), relations use it
    layer_given: bool = False  # the source says the layer (a codex, a card, front matter)
    relations: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # type, target, attrs


@dataclass
class ImportResult:
    """What an import read, created, found already there and related."""

    sources: list[dict[str, Any]]  # {"path", "format", "entries"}
    created: list[dict[str, Any]]  # {"id", "name", "layer", "source"}
    existing: list[dict[str, Any]]  # {"name", "source", "id", "how", "added", "notes"}
    related: list[dict[str, Any]]  # {"source", "type", "target"}
    warnings: list[str]
    dry_run: bool
    event: EventResult | None = None
    ambiguous: list[dict[str, Any]] = field(default_factory=list)  # {"name", "ids"}

    def to_json(self) -> dict[str, Any]:
        rec = self.event.to_json() if self.event is not None else None
        return {"commit": rec["commit"] if rec else None, "id": rec["id"] if rec else None,
                "content": rec["content"] if rec else None, "dry_run": self.dry_run,
                "sources": self.sources, "created": self.created, "existing": self.existing,
                "related": self.related, "ambiguous": self.ambiguous, "warnings": self.warnings,
                "edits": rec["edits"] if rec else []}


# -- reading sources ---------------------------------------------------------------


def read_sources(path: Path, layer: str = "background", progress: Progress | None = None
                 ) -> tuple[list[dict[str, Any]], list[Entry]]:
    """Every entry of the file ``path``, or of the notes and JSON files under the folder ``path``."""
    if layer not in LAYERS:
        raise InvalidInputError(f"unknown layer {layer!r}; expected one of {', '.join(LAYERS)}")
    if not path.exists():
        raise NotFoundError(f"{path}: no such file or folder")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file()
                       and p.suffix.lower() in (*NOTE_SUFFIXES, ".json")
                       and not any(part.startswith(".") for part in p.relative_to(path).parts))
        if not files:
            raise InvalidInputError(f"{path}: no Markdown notes or JSON files to import")
        base = path
    else:
        files, base = [path], path.parent
    sources, entries = [], []
    for i, file in enumerate(files):
        label = file.relative_to(base).as_posix()
        if progress is not None:
            progress(i + 1, len(files), label)
        try:
            text = file.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{label}: not UTF-8 text ({exc.reason})") from exc
        fmt, found = parse(label, text, layer)
        sources.append({"path": label, "format": fmt, "entries": len(found)})
        entries.extend(found)
    return sources, entries


def parse(label: str, text: str, layer: str = "background") -> tuple[str, list[Entry]]:
    """``(format, entries)`` of one file's text; ``label`` names it in entries and errors."""
    if label.lower().endswith(NOTE_SUFFIXES):
        first = text.lstrip().split("\n", 1)[0]
        if _CODEX_TITLE.match(first):
            return "codex", parse_codex(label, text)
        return "note", [parse_note(label, text, layer)]
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInputError(f"{label}: not JSON ({exc})") from exc
    if isinstance(data, dict) and (str(data.get("spec", "")).startswith("chara_card")
                                   or ("name" in data and ("first_mes" in data or "personality" in data))):
        return "character card", parse_card(label, data, layer)
    if (isinstance(data, dict) and "entries" in data) or isinstance(data, list):
        return "lorebook", parse_lorebook(label, data, layer)
    raise InvalidInputError(f"{label}: not a lorebook or a character card",
                            hint='a lorebook has "entries"; a card has "spec": "chara_card_v2"')


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _names(values: Any) -> list[str]:
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list):
        return []
    return [" ".join(v.split()) for v in values if isinstance(v, str) and v.strip()]


def _aliases(name: str, candidates: list[str]) -> list[str]:
    """``candidates`` without the name, repeats (case aside) and regular expressions (``/x/i``)."""
    seen = {normalize_name(name)}
    out = []
    for alias in candidates:
        norm = normalize_name(alias)
        if norm in seen or re.fullmatch(r"/.+/[a-z]*", alias):
            continue
        seen.add(norm)
        out.append(alias)
    return out


def parse_lorebook(label: str, data: Any, layer: str) -> list[Entry]:
    raw = data.get("entries", []) if isinstance(data, dict) else data
    items = list(raw.items()) if isinstance(raw, dict) else list(enumerate(raw or []))
    out = []
    for key, item in items:
        if not isinstance(item, dict):
            raise InvalidInputError(f"{label}: entry {key} is not an object")
        keys = _names(item.get("key", item.get("keys", [])))
        name = " ".join((_text(item.get("comment")) or _text(item.get("name"))).split())
        name = name or (keys[0] if keys else "")
        if not name:
            raise InvalidInputError(f"{label}: entry {key} has neither a title (comment) nor keys")
        out.append(Entry(f"{label}#{key}", name, layer, aliases=_aliases(name, keys),
                         summary=_text(item.get("content"))))
    return out


def parse_card(label: str, data: dict[str, Any], layer: str) -> list[Entry]:
    inner = data.get("data")
    card: dict[str, Any] = inner if isinstance(inner, dict) else data
    name = " ".join(_text(card.get("name")).split())
    if not name:
        raise InvalidInputError(f"{label}: the character card has no name")
    traits = {k: _text(card.get(k)) for k in ("personality", "scenario") if _text(card.get(k))}
    node = Entry(label, name, "character", kind="person", layer_given=True,
                 aliases=_aliases(name, _names(card.get("nickname"))),
                 summary=_text(card.get("description")), traits=traits)
    book = card.get("character_book")
    return [node, *(parse_lorebook(label, book, layer) if isinstance(book, dict) else [])]


def _front_matter(label: str, text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    for i, line in enumerate(lines[1:], 1):
        if line.rstrip() in ("---", "..."):
            import yaml

            # libyaml's parser when PyYAML has it: ten times the pure-Python one (a vault of
            # 2000 notes: about 1 s against 10 s), the same safe constructors
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            try:
                meta = yaml.load("\n".join(lines[1:i]), Loader=loader) or {}
            except yaml.YAMLError as exc:
                raise InvalidInputError(f"{label}: the front matter is not YAML ({exc})") from exc
            if not isinstance(meta, dict):
                raise InvalidInputError(f"{label}: the front matter is not a mapping of keys")
            return meta, "\n".join(lines[i + 1:])
    return {}, text


def _first_paragraph(body: str) -> str:
    para: list[str] = []
    for line in body.split("\n"):
        stripped = line.strip()
        if not stripped:
            if para:
                break
            continue
        if stripped.startswith("#") and not para:
            continue  # a heading is not the summary
        para.append(stripped)
    return _WIKILINK.sub(lambda m: m.group(2) or m.group(1), " ".join(para))


def parse_note(label: str, text: str, layer: str) -> Entry:
    meta, body = _front_matter(label, text)
    name = " ".join(str(meta.get("name") or Path(label).stem).split())
    layer = str(meta.get("layer") or layer)
    lifecycle = str(meta.get("lifecycle") or "permanent")
    if layer not in LAYERS:
        raise InvalidInputError(f"{label}: unknown layer {layer!r}; expected one of {', '.join(LAYERS)}")
    if lifecycle not in LIFECYCLES:
        raise InvalidInputError(f"{label}: unknown lifecycle {lifecycle!r}; "
                                f"expected one of {', '.join(LIFECYCLES)}")
    maps = {}
    for key in ("traits", "state", "relations"):
        value = meta.get(key) or {}
        if not isinstance(value, dict):
            raise InvalidInputError(f"{label}: {key} in the front matter must be a mapping")
        maps[key] = {str(k): v for k, v in value.items()}
    relations: list[tuple[str, str, dict[str, Any]]] = [
        (rtype, target, {}) for rtype, targets in maps["relations"].items() for target in _names(targets)]
    summary = meta.get("summary")
    return Entry(label, name, layer, kind=str(meta.get("kind") or ""),
                 aliases=_aliases(name, _names(meta.get("aliases", meta.get("alias")))),
                 summary=str(summary).strip() if summary is not None else _first_paragraph(body),
                 lifecycle=lifecycle, layer_given="layer" in meta, traits=_jsonable(label, maps["traits"]),
                 state=_jsonable(label, maps["state"]), relations=relations)


def _jsonable(label: str, value: dict[str, Any]) -> dict[str, Any]:
    """YAML values as JSON holds them (a date becomes its ISO text)."""
    result: dict[str, Any] = json.loads(json.dumps(value, default=str, ensure_ascii=False))
    return result


def _value(text: str) -> Any:
    """A codex value: JSON when it parses, else the text (the rule ``codex.text_value`` writes by)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _key_and_rest(line: str) -> tuple[str, str] | None:
    """``- key: rest`` -> ``(key, rest)``, the key JSON-quoted when it holds a colon."""
    body = line[2:]
    if body.startswith('"'):
        try:
            key, end = json.JSONDecoder().raw_decode(body)
        except ValueError:
            return None
        if not isinstance(key, str) or not body[end:].startswith(": "):
            return None
        return key, body[end + 2:]
    if ": " not in body:
        return None
    key, rest = body.split(": ", 1)
    return key, rest


def _relation(rest: str) -> tuple[str, dict[str, Any]]:
    """``target (Name) {attrs}`` -> ``(target, attrs)``."""
    target, _, tail = rest.partition(" ")
    attrs: dict[str, Any] = {}
    for match in re.finditer(r"(?:^| )\{", tail):
        start = match.end() - 1
        try:
            value, end = json.JSONDecoder().raw_decode(tail, start)
        except ValueError:
            continue
        if end == len(tail.rstrip()) and isinstance(value, dict):
            attrs = value
            break
    return target, attrs


def parse_codex(label: str, text: str) -> list[Entry]:
    out: list[Entry] = []
    layer: str | None = None
    entry: Entry | None = None
    section = ""
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("## "):
            title = line[3:].strip()
            layer = _LAYER_BY_TITLE.get(title, title.lower())
            if layer not in LAYERS:
                raise InvalidInputError(f"{label}:{number}: unknown layer section {title!r}")
            entry, section = None, ""
        elif line.startswith("### "):
            if layer is None:
                raise InvalidInputError(f"{label}:{number}: a node before any layer section")
            entry = Entry(f"{label}:{number}", line[4:].strip(), layer, layer_given=True)
            out.append(entry)
            section = ""
        elif line.startswith("#### "):
            section = line[5:].strip().lower()
        elif line.startswith("- ") and entry is not None:
            parsed = _key_and_rest(line)
            if parsed is None:
                raise InvalidInputError(f"{label}:{number}: not a '- key: value' line")
            key, rest = parsed
            if section == "":
                _codex_field(entry, key, rest)
            elif section in ("traits", "state"):
                getattr(entry, section)[key] = _value(rest)
            elif section == "relations":
                target, attrs = _relation(rest)
                entry.relations.append((key, target, attrs))
    for entry in out:
        if entry.ref is None:
            raise InvalidInputError(f"{entry.source}: the node {entry.name!r} has no '- id:' line")
    return out


def _codex_field(entry: Entry, key: str, rest: str) -> None:
    if key == "id":
        entry.ref = rest.strip()
    elif key == "aliases":
        entry.aliases = _names(_value(rest))
    elif key in ("kind", "summary", "lifecycle"):
        value = _value(rest)
        setattr(entry, key, value if isinstance(value, str) else rest)


# -- into the world ----------------------------------------------------------------


def _known(names: Names, op: Op) -> bool:
    """A relation the world already has, attributes and all (a second import of the same file)."""
    if not isinstance(op, RelateOp):
        return False
    node = names.view.get(op.source) or {}
    targets = (node.get("relations") or {}).get(op.type) or {}
    return op.target in targets and targets[op.target] == op.attrs


def _ambiguous(names: Names, delta: Delta) -> list[dict[str, Any]]:
    """Names the import would leave on more than one node that were not so before."""
    given: dict[str, dict[str, str]] = {}  # normalised name -> id -> the name as written
    for op in delta.ops:
        if isinstance(op, CreateOp):
            for name in (op.node.name, *op.node.aliases):
                given.setdefault(normalize_name(name), {})[op.node.id] = name
        elif isinstance(op, SetOp) and op.field == "/aliases" and isinstance(op.value, list):
            for name in op.value:
                if isinstance(name, str):
                    given.setdefault(normalize_name(name), {})[op.target] = name
    given.pop("", None)
    ending = set(names.view.transient(["event"]))  # they end with the import's event
    before = names.view.ids_by_name(list(given))
    out = []
    for norm in sorted(given):
        was = before.get(norm, set()) - ending
        ids = sorted(was | set(given[norm]))
        if len(ids) > 1 and len(was) < len(ids) and len(was) <= 1:
            out.append({"name": next(iter(given[norm].values())), "ids": ids})
    return out


def import_bible(wr: WorldRepo, path: str | Path, *, layer: str = "background",
                 dry_run: bool = False, progress: Progress | None = None) -> ImportResult:
    """Import the story bible at ``path`` (a file, or a folder of them) as one event.

    ``progress(done, total, what)`` hears of each file read, then of each entry weighed
    against the world's names.
    """
    path = Path(path)
    sources, entries = read_sources(path, layer, progress)
    return import_entries(wr, entries, sources, content=f"Import {path.name or path}",
                          dry_run=dry_run, progress=progress)


def import_entries(wr: WorldRepo, entries: list[Entry], sources: list[dict[str, Any]], *,
                   content: str, dry_run: bool = False,
                   progress: Progress | None = None) -> ImportResult:
    """Create ``entries`` in one event, arbitrated against the world; nothing when all are there."""
    names = Names(wr)
    if names.tree is None:
        raise NotFoundError("this world has no genesis commit", hint="narr init")
    warnings: list[str] = []
    given: set[str] = set()
    ids: list[str] = []
    for entry in entries:
        if entry.ref is not None and id_problem(entry.ref) is None and entry.ref not in given:
            node_id = entry.ref  # the arbiter says whether the world's node of that id is this one
        else:
            node_id = free_id(wr, names, slugify(entry.name), given)
        given.add(node_id)
        ids.append(node_id)
    by_ref = {e.ref: i for e, i in zip(entries, ids, strict=True) if e.ref is not None}
    by_name: dict[str, str] = {}
    for entry, node_id in zip(entries, ids, strict=True):
        for name in (entry.name, *entry.aliases):
            by_name.setdefault(normalize_name(name), node_id)

    ops: list[Op] = []
    source_of: dict[str, Entry] = {}
    for entry, node_id in zip(entries, ids, strict=True):
        try:
            node = Node(id=node_id, name=entry.name, layer=entry.layer,
                        kind=entry.kind, aliases=entry.aliases, summary=entry.summary,
                        lifecycle=entry.lifecycle, traits=entry.traits,
                        state=entry.state)
        except ValueError as exc:
            raise InvalidInputError(f"{entry.source}: {entry.name!r} cannot be a node: {exc}") from exc
        source_of[node_id] = entry
        ops.append(CreateOp(node=node))
    for entry, node_id in zip(entries, ids, strict=True):
        for rtype, target, attrs in entry.relations:
            dst = by_ref.get(target) or by_name.get(normalize_name(target))
            if dst is None:
                found = names.candidates(target)
                dst = found[0] if len(found) == 1 else None
            if dst is None:
                warnings.append(f"{entry.source}: {entry.name!r} {rtype} {target!r}: no such node "
                                "in the import or the world; the relation is left out")
                continue
            ops.append(RelateOp(source=node_id, type=rtype, target=dst, attrs=attrs))

    # A name in another layer is the same node, except for an entry that carries its own
    # id (a codex, narr's own export): that source is exact, and two nodes of one name in
    # different layers there (a thread named like a character's alias) stay two.
    loose = {node_id for entry, node_id in zip(entries, ids, strict=True) if entry.ref is None}
    delta, decisions = arbitrate(names.view, Delta(ops=ops), across_layers=loose, enrich=True,
                                 progress=progress)
    delta = delta.model_copy(update={"ops": [op for op in delta.ops if not _known(names, op)]})
    new_nodes = {op.node.id: op.node for op in delta.ops if isinstance(op, CreateOp)}
    existing = []
    for d in decisions:
        if d.existing is None:
            continue
        entry = source_of[d.proposed]
        made = new_nodes.get(d.existing)
        there = made.layer if made is not None else (names.view.get(d.existing) or {}).get("layer")
        notes = list(d.notes)
        if entry.layer_given and there is not None and there != entry.layer:
            notes.append(f"the source puts it in the {entry.layer} layer; it stays in the {there} layer")
        existing.append({"name": d.name, "source": entry.source, "id": d.existing, "how": d.how,
                         "added": d.merged, "notes": notes})
    warnings += [d.note() for d in decisions if d.existing is None]
    origin_of = {d.created_as: d.proposed for d in decisions if d.created_as is not None}
    created, related = [], []
    for op in delta.ops:
        if isinstance(op, CreateOp):
            origin = origin_of.get(op.node.id, op.node.id)
            created.append({"id": op.node.id, "name": op.node.name, "layer": op.node.layer,
                            "source": source_of[origin].source})
        elif isinstance(op, RelateOp):
            related.append({"source": op.source, "type": op.type, "target": op.target})
    result = ImportResult(sources, created, existing, related, warnings, dry_run,
                          ambiguous=_ambiguous(names, delta))
    if not delta.ops:
        return result
    request = EventRequest(content=content, delta=delta, diffuser=None)
    result.event = run_event(wr, request, dry_run=dry_run, keep_failed=False)
    result.warnings += result.event.warnings
    return result
