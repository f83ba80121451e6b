"""``narr import``: a story bible the writer already has becomes nodes, in one event, no text lost.

The sources, each file recognised by its content rather than its name (:mod:`narrative.lore`):

- SillyTavern World Info books and character cards (V1, V2, V3; JSON, PNG with a ``chara`` or
  ``ccv3`` chunk, CHARX): :mod:`narrative.lore.sillytavern` says where each field lands;
- Markdown notes with YAML front matter, a whole Obsidian vault: :mod:`narrative.lore.obsidian`;
- narr's own ``narr export codex`` Markdown, and narr's own exports (lorebook, card, vault),
  which carry their nodes exactly.

The steps, each a function:

1. :func:`read_sources` reads the file, or every file of the folder the ignore rules let in. It
   never follows a symbolic link (one in the folder is skipped and named), reads a file only up
   to its bound (:func:`limit_of`), and reads every JSON and YAML within bounds: a hostile file
   is one clear error naming it, before anything is written; in a folder, every such file is
   named in one error (or, ``skip_bad``, left out and listed).
2. Disabled lorebook entries are left out, and listed, unless ``include_disabled``.
3. A book or card narr exported brings back what was changed in SillyTavern
   (:mod:`narrative.engine.homecoming`): hand edits of the nodes the world has.
4. A vault's notes find the nodes an earlier import made of them (by path, or by an ``id``
   property), and their ``[[links]]`` the notes they open (:mod:`narrative.engine.lorelinks`).
5. :func:`narrative.lore.facets.fold` joins the entries about one thing into one entry whose other
   texts are sections, and says where each entry's text went.
6. :func:`import_entries` makes one delta (the creates, then the relations, so a relation can name
   a node of the same import) and puts it through the arbiter against the world as it stands,
   hand edits included. Identity is exact: an entry the world already has (the same note, the
   same id, its name one of the node's names or the node's name one of its own, in any layer
   for a source that names none) adds only what the node lacks: state, relations, aliases no
   other node carries, a summary where it has none, tags, the always-in-view flag, other tools'
   records, and every text the node does not hold yet as a section (a different summary, a
   trait the node lacks: traits change only by hand). Nothing of the node is overwritten; the
   report says what was added, and for every entry where it went. Names only alike are kept
   apart and reported (``similar``, :mod:`narrative.engine.similar`), unless ``merge_similar``.

Importing a file twice adds nothing, and the second time no event is recorded at all. A name the
import would leave on two nodes is reported (``ambiguous``), a link to a note that is nowhere
too (``missing``; ``stubs`` makes a node for it). Ids are made as ``narr new`` makes them
(pinyin for Chinese names); a codex or an export keeps its ids where they are free.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from narrative import fields
from narrative.delta import overlay
from narrative.delta.arbiter import arbitrate
from narrative.delta.request import EventRequest
from narrative.engine import lorelinks
from narrative.engine.event import EventResult, run_event
from narrative.engine.homecoming import Homecoming, take_home
from narrative.engine.naming import Names
from narrative.engine.new import free_id, slugify
from narrative.engine.similar import similar_names
from narrative.errors import InvalidInputError, NotFoundError
from narrative.ids import LAYERS, id_problem, normalize_name
from narrative.lore import codexmd, facets, obsidian, png, sillytavern
from narrative.lore.entry import Entry, Placement, Skipped
from narrative.lore.limits import (
    MAX_FILES,
    MAX_JSON_FILE,
    MAX_PNG_FILE,
    MAX_TEXT_FILE,
    decode_text,
    load_json,
    too_big,
)
from narrative.model import CreateOp, Delta, Node, Op, RelateOp, SetOp
from narrative.nodefile import NodeDict
from narrative.store import WorldRepo

__all__ = ["Entry", "ImportResult", "import_bible", "import_entries", "parse", "read_sources"]

Progress = Callable[[int, int, str], None]

SUFFIXES: Final = (*obsidian.NOTE_SUFFIXES, ".json", ".png", ".charx")
_ZIP: Final = b"PK\x03\x04"
_SHARED_ALIAS: Final = "it shares only an alias with the node: its names are not added"


@dataclass
class ImportResult:
    """What an import read, created, found already there, related, and where each entry went."""

    sources: list[dict[str, Any]]  # {"path", "format", "entries"}
    created: list[dict[str, Any]]  # {"id", "name", "layer", "source"}
    existing: list[dict[str, Any]]  # {"name", "source", "id", "how", "added", "notes"}
    related: list[dict[str, Any]]  # {"source", "type", "target"}
    warnings: list[str]
    dry_run: bool
    event: EventResult | None = None
    ambiguous: list[dict[str, Any]] = field(default_factory=list)  # {"name", "ids"}
    entries: list[dict[str, Any]] = field(default_factory=list)  # {"source", "title", "node", "section", ...}
    skipped: list[dict[str, Any]] = field(default_factory=list)  # {"source", "title", "reason"}
    similar: list[dict[str, Any]] = field(default_factory=list)  # {"name", "id", "similar_to", ...}
    missing: list[dict[str, Any]] = field(default_factory=list)  # {"source", "link", "target"}

    def to_json(self) -> dict[str, Any]:
        rec = self.event.to_json() if self.event is not None else None
        return {"commit": rec["commit"] if rec else None, "id": rec["id"] if rec else None,
                "content": rec["content"] if rec else None, "dry_run": self.dry_run,
                "sources": self.sources, "created": self.created, "existing": self.existing,
                "related": self.related, "ambiguous": self.ambiguous, "similar": self.similar,
                "missing": self.missing, "entries": self.entries,
                "skipped": self.skipped, "warnings": self.warnings,
                "edits": rec["edits"] if rec else []}


# -- reading sources ---------------------------------------------------------------


@dataclass
class Sources:
    """What :func:`read_sources` found: per file, the entries, what it left out and why."""

    files: list[dict[str, Any]] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_sources(path: Path, layer: str = "background", progress: Progress | None = None, *,
                 user: str | None = None, skip_bad: bool = False) -> Sources:
    """Every entry of the file ``path``, or of the files under the folder ``path``.

    In a folder every file is read before anything is decided: the files that cannot be
    imported (not UTF-8, not YAML, beyond a bound...) are named all at once, in one error, or
    with ``skip_bad`` listed as left out while the rest is imported."""
    if layer not in LAYERS:
        raise InvalidInputError(f"unknown layer {layer!r}; expected one of {', '.join(LAYERS)}")
    if not path.exists():
        raise NotFoundError(f"{path}: no such file or folder")
    found = Sources()
    if path.is_dir():
        files = _folder_files(path, found)
        if not files and not found.skipped:
            raise InvalidInputError(f"{path}: no Markdown notes, JSON files or cards to import")
        base, in_folder = path, True
    else:
        files, base, in_folder = [path], path.parent, False
    bad: list[str] = []
    for i, file in enumerate(files):
        label = file.relative_to(base).as_posix()
        if progress is not None:
            progress(i + 1, len(files), label)
        data = b""
        try:
            data = _read(file, label, follow=not in_folder)
            fmt, entries = parse(label, data, layer, user=user)
        except InvalidInputError as exc:
            if not in_folder:
                raise
            if data.startswith(png.SIGNATURE):  # an image in a vault, not a card
                found.skipped.append(Skipped(label, f"an image, not a card ({exc.message})"))
                continue
            message = exc.message if exc.message.startswith(label) else f"{label}: {exc.message}"
            bad.append(message + (f" ({exc.hint})" if exc.hint else ""))
            if skip_bad:
                found.skipped.append(Skipped(label, "cannot be imported: " + message[len(label) + 2:]))
            continue
        found.files.append({"path": label, "format": fmt, "entries": len(entries)})
        found.entries.extend(entries)
    if bad and not skip_bad:
        raise InvalidInputError(
            f"{path}: {len(bad)} file{'s' if len(bad) > 1 else ''} cannot be imported; nothing was "
            "imported", details=bad,
            hint="mend them, or add --skip-bad to import the others and list these as left out")
    return found


def _folder_files(root: Path, found: Sources) -> list[Path]:
    """The files of a folder an import reads: no symbolic link followed, the ignore rules kept."""
    rules = obsidian.IgnoreRules.read(_setting_file(root / obsidian.NARRIGNORE),
                                      _setting_file(root / ".obsidian" / "daily-notes.json"),
                                      _setting_file(root / ".obsidian" / "templates.json"))
    out: list[Path] = []
    for here, dirs, names in os.walk(root, followlinks=False):
        rel_dir = Path(here).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        for name in sorted(dirs):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            full = Path(here) / name
            if full.is_symlink():
                found.skipped.append(Skipped(rel + "/", f"a symbolic link (to {os.readlink(full)}): "
                                                        "not followed"))
                dirs.remove(name)
                continue
            why = _folder_reason(rules, rel)
            if why is not None:
                if not name.startswith(".") or name in (".trash", ".obsidian"):
                    found.skipped.append(Skipped(rel + "/", why))
                dirs.remove(name)
        dirs.sort()
        for name in sorted(names):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            full = Path(here) / name
            if not name.lower().endswith(SUFFIXES) or name.startswith("."):
                continue
            if full.is_symlink():
                found.skipped.append(Skipped(rel, f"a symbolic link (to {os.readlink(full)}): not "
                                                  "followed, narr never reads through a link out of "
                                                  "the folder it imports"))
                continue
            why = rules.reason(rel)
            if why is not None:
                found.skipped.append(Skipped(rel, why))
                continue
            out.append(full)
            if len(out) > MAX_FILES:
                raise InvalidInputError(f"{root}: more than {MAX_FILES:,} files to import",
                                        hint="import the folder's parts one by one")
    return out


def _folder_reason(rules: obsidian.IgnoreRules, rel_dir: str) -> str | None:
    """Why a folder is left out whole (a rule for a folder, or one matching its name), or None."""
    return rules.reason(f"{rel_dir}/\x00")  # a name no file has: only the folder's rules apply


def _setting_file(path: Path) -> str | None:
    """A small settings file of the vault, if it is a plain file (a link is not read)."""
    try:
        st = path.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > 64 * 1024:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _read(file: Path, label: str, *, follow: bool) -> bytes:
    """The bytes of a source file, within its size bound; in a folder, never through a link."""
    flags = os.O_RDONLY | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(file, flags)
    except OSError as exc:
        raise InvalidInputError(f"{label}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        limit = limit_of(label)
        if size > limit:
            raise too_big(label, size, limit)
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise too_big(label, len(data), limit)
    return data


def limit_of(label: str) -> int:
    """How many bytes of a file an import reads: a card's image, a book, a note."""
    lower = label.lower()
    if lower.endswith((".png", ".charx")):
        return MAX_PNG_FILE
    return MAX_JSON_FILE if lower.endswith(".json") else MAX_TEXT_FILE


def parse(label: str, data: bytes | str, layer: str = "background", *,
          user: str | None = None) -> tuple[str, list[Entry]]:
    """``(format, entries)`` of one file's bytes; ``label`` names it in entries and errors."""
    if isinstance(data, bytes) and png.is_png(data):
        card = sillytavern.card_from_png(label, data)
        return "character card (PNG)", _card_or_book(label, card, layer, user)
    if isinstance(data, bytes) and (data.startswith(_ZIP) or label.lower().endswith(".charx")):
        card = sillytavern.card_from_charx(label, data)
        return "character card (CHARX)", _card_or_book(label, card, layer, user)
    text = decode_text(label, data) if isinstance(data, bytes) else data
    if len(text) > limit_of(label):
        raise too_big(label, len(text.encode("utf-8")), limit_of(label))
    if obsidian.is_note(label):
        if codexmd.is_codex(text):
            return "codex", codexmd.parse_codex(label, text)
        return "note", [obsidian.parse_note(label, text, layer)]
    value = load_json(label, text)
    kind = sillytavern.kind_of(label, value)
    if kind == "card":
        return "character card", sillytavern.parse_card(label, value, layer=layer, user=user)
    macros = sillytavern.Macros(user)
    return "lorebook", sillytavern.parse_book(label, value, layer=layer, macros=macros,
                                              book_name=sillytavern.book_name_of(label, value))


def _card_or_book(label: str, value: Any, layer: str, user: str | None) -> list[Entry]:
    if sillytavern.kind_of(label, value) != "card":
        raise InvalidInputError(f"{label}: the embedded JSON is not a character card")
    return sillytavern.parse_card(label, value, layer=layer, user=user)


# -- into the world ----------------------------------------------------------------


def import_bible(wr: WorldRepo, path: str | Path, *, layer: str = "background",
                 dry_run: bool = False, progress: Progress | None = None,
                 include_disabled: bool = False, user: str | None = None,
                 merge_similar: bool = False, stubs: bool = False,
                 skip_bad: bool = False) -> ImportResult:
    """Import the story bible at ``path`` (a file, or a folder of them) as one event.

    ``include_disabled``: disabled lorebook entries too (their flag is kept). ``user``: what
    ``{{user}}`` stands for (default: the world's ``[import] user``, else it stays as written).
    ``merge_similar``: names only alike (a close spelling, one inside the other) are one node,
    as the arbiter takes an event's; by default they are two, and reported. ``stubs``: a link
    to a note that is in neither the import nor the world makes a node of that name.
    ``skip_bad``: in a folder, the files that cannot be imported are left out (and listed)
    instead of stopping the import. ``progress(done, total, what)`` hears of each file read,
    then of each entry weighed.
    """
    path = Path(path)
    user = user if user is not None else user_name(wr)
    found = read_sources(path, layer, progress, user=user, skip_bad=skip_bad)
    names = Names(wr)
    if names.tree is None:
        raise NotFoundError("this world has no genesis commit", hint="narr init")
    entries = []
    exact = {e.ref for e in found.entries if e.exact and e.ref}
    for e in found.entries:
        if e.derived_of is not None and e.derived_of in exact:
            found.skipped.append(Skipped(e.source, f"narr's own words for {e.derived_of}, whose "
                                                   "record in the same file holds them", e.title))
        elif e.disabled and not include_disabled and not e.exact:  # narr's own: a node with its flag
            found.skipped.append(Skipped(e.source, "a disabled entry (--include-disabled imports it)",
                                         e.title or e.name))
        else:
            entries.append(e)
    entries, home = take_home(names, entries)
    same: dict[str, str] = {}  # an entry's source -> the world's node of the same note
    if any(e.note_path for e in entries):
        notes = lorelinks.world_notes(names.view)
        for k, node_id in lorelinks.same_notes(entries, notes).items():
            entry = entries[k]
            entry.ref, same[entry.source] = node_id, node_id
            if notes.layers.get(node_id, entry.layer) != entry.layer:
                found.warnings.append(f"{entry.source}: the note says the {entry.layer} layer; its node "
                                      f"{node_id} stays in the {notes.layers[node_id]} layer")
                entry.layer = notes.layers[node_id]
        linked = lorelinks.resolve(entries, notes.paths)
        found.warnings += linked.warnings
    merged, placements = facets.fold(entries)
    result = import_entries(wr, merged, found.files, content=f"Import {path.name or path}",
                            dry_run=dry_run, progress=progress, placements=placements,
                            warnings=found.warnings, identity="alike" if merge_similar else "exact",
                            stubs=stubs, layer=layer, names=names, home=home)
    for met in result.existing:
        if met["source"] in same and met["id"] == same[met["source"]] and met["how"] == "same id":
            met["how"] = "the same note"
    result.skipped = [s.to_json() for s in found.skipped]
    return result


def user_name(wr: WorldRepo) -> str | None:
    """What ``{{user}}`` stands for in this world: ``[import] user`` in ``narr.toml``, else None
    (the macro stays as written)."""
    table = wr.config.raw.get("import")
    value = table.get("user") if isinstance(table, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def _stub(target: str, source: str, layer: str) -> Entry:
    """A node for a note a link names that is neither in the import nor in the world (``--stubs``)."""
    name = " ".join(target.rsplit("/", 1)[-1].split())
    return Entry(f"{source} (a link)", name, layer, title=name, named_by="a link to a note that is not there")


def import_entries(wr: WorldRepo, entries: list[Entry], sources: list[dict[str, Any]], *,
                   content: str, dry_run: bool = False, progress: Progress | None = None,
                   placements: list[Placement] | None = None,
                   warnings: list[str] | None = None, identity: str = "exact", stubs: bool = False,
                   layer: str = "background", names: Names | None = None,
                   home: Homecoming | None = None) -> ImportResult:
    """Create ``entries`` in one event, arbitrated against the world; nothing when all are there.

    ``identity``: the arbiter's (``exact`` for an import, ``alike`` with ``--merge-similar``).
    ``home``: the edits a book or card narr exported brings back (recorded as hand edits).
    """
    names = names if names is not None else Names(wr)
    if names.tree is None:
        raise NotFoundError("this world has no genesis commit", hint="narr init")
    home = home if home is not None else Homecoming()
    warnings = list(warnings or [])
    entries = list(entries)
    ids = _ids(wr, names, entries)
    by_ref = {e.ref: i for e, i in zip(entries, ids, strict=True) if e.ref is not None}
    by_note = {normalize_name(e.note_path): i for e, i in zip(entries, ids, strict=True) if e.note_path}
    by_name: dict[str, set[str]] = {}
    for entry, node_id in zip(entries, ids, strict=True):
        for name in (entry.name, *entry.aliases):
            by_name.setdefault(normalize_name(name), set()).add(node_id)
    world_ids: dict[str, str | None] = {}  # a name -> the one world node carrying it (None: not one)

    def find(target: str) -> str | None:
        if target.startswith(lorelinks.WORLD):
            return target[1:]
        if target.startswith("[[") and target.endswith("]]"):
            hit = by_note.get(normalize_name(target[2:-2]))
            if hit is not None:
                return hit
            target = target[2:-2].rsplit("/", 1)[-1]  # no such note: a node of that name, if one
        dst = by_ref.get(target)
        if dst is not None:
            return dst
        norm = normalize_name(target)
        mine = by_name.get(norm, set())
        if len(mine) == 1:
            return next(iter(mine))
        if mine:
            return None
        if norm not in world_ids:
            candidates = names.candidates(target)
            world_ids[norm] = candidates[0] if len(candidates) == 1 else None
        return world_ids[norm]

    missing: list[dict[str, Any]] = []
    made: dict[str, str] = {}  # a missing note's name, normalised -> the stub's id
    for entry in list(entries):
        links = [(t, w) for t, w in entry.mentions] + [(t, t) for _, t, _ in entry.relations
                                                      if t.startswith("[[")]
        for target, written in links:
            if find(target) is not None:
                continue
            bare = target[2:-2] if target.startswith("[[") else target
            norm = normalize_name(bare.rsplit("/", 1)[-1])
            if stubs and norm:
                if norm not in made:
                    stub = _stub(bare, entry.source, layer)
                    stub_id = _ids(wr, names, [stub], set(ids))[0]
                    entries.append(stub)
                    ids.append(stub_id)
                    made[norm] = stub_id
                    by_name.setdefault(norm, set()).add(stub_id)
                by_note.setdefault(normalize_name(bare), made[norm])
            else:
                missing.append({"source": entry.source, "link": written, "target": bare})

    ops: list[Op] = []
    source_of: dict[str, Entry] = {}
    value_links: list[tuple[str, str, str, str]] = []  # (node, field, key, target node)
    for entry, node_id in zip(entries, ids, strict=True):
        state, traits = dict(entry.state), dict(entry.traits)
        for fname, key, target in entry.value_links:
            dst = find(target)
            if dst is not None:
                (state if fname == "state" else traits)[key] = dst
                value_links.append((node_id, fname, key, dst))
        try:
            node = Node(id=node_id, name=entry.name, layer=entry.layer, kind=entry.kind,
                        aliases=entry.aliases, summary=entry.summary, lifecycle=entry.lifecycle,
                        traits=traits, state=state, tags=entry.tags,
                        sections=entry.sections, always_in_view=entry.always_in_view,
                        extensions=entry.extensions)
        except ValueError as exc:
            raise InvalidInputError(f"{entry.source}: {entry.name!r} cannot be a node: {exc}") from None
        source_of[node_id] = entry
        ops.append(CreateOp(node=node))
    for entry, node_id in zip(entries, ids, strict=True):
        wanted: set[tuple[str, str]] = set()
        for rtype, target, attrs in entry.relations:
            dst = find(target)
            if dst is None:
                if not target.startswith("[["):
                    warnings.append(f"{entry.source}: {entry.name!r} {rtype} {target!r}: no such node "
                                    "in the import or the world; the relation is left out")
                continue
            if dst == node_id:
                warnings.append(f"{entry.source}: {entry.name!r} {rtype} {_said(target)} is the node "
                                "itself; no relation")
                continue
            rel = _relate(entry, node_id, rtype, dst, attrs, warnings)
            if rel is not None and (rtype, dst) not in wanted:
                wanted.add((rtype, dst))
                ops.append(rel)
        for target, written in entry.mentions:
            dst = find(target)
            if dst is None:
                continue  # listed under "missing"
            if dst == node_id:
                warnings.append(f"{entry.source}: {written} names the node itself; no relation")
            elif not any(d == dst for _, d in wanted):
                wanted.add(("mentions", dst))
                ops.append(RelateOp(source=node_id, type="mentions", target=dst))

    # A name in another layer is the same node, except for an entry that carries its own
    # id (a codex, narr's own export): that source is exact, and two nodes of one name in
    # different layers there (a thread named like a character's alias) stay two.
    loose = {node_id for entry, node_id in zip(entries, ids, strict=True) if entry.ref is None}
    exact = {node_id for entry, node_id in zip(entries, ids, strict=True) if entry.exact}
    if home.changes:
        # the world as SillyTavern's edits leave it, for the arbiter as for the event
        problems = overlay.lay(names.view, home.changes)
        if problems:
            raise InvalidInputError(f"the changes made in SillyTavern do not apply: {problems[0]}",
                                    details=problems)
    delta, decisions = arbitrate(names.view, Delta(ops=ops), across_layers=loose, enrich=True,
                                 exact=exact, identity=identity, progress=progress)
    kept_ops = [op for op in delta.ops if not _known(names, op) and not _to_itself(op)]
    new_nodes = {op.node.id: op.node for op in kept_ops if isinstance(op, CreateOp)}
    final: dict[str, str] = {}  # proposed id -> the node it is now
    existing = []
    extra = _Additions(names, new_nodes)
    for d in decisions:
        if d.existing is None:
            final[d.proposed] = d.created_as or d.proposed
            continue
        final[d.proposed] = d.existing
        entry = source_of[d.proposed]
        made_node = new_nodes.get(d.existing)
        there = made_node.layer if made_node is not None else (names.view.get(d.existing) or {}).get("layer")
        notes = list(d.notes)
        added = list(d.merged)
        more, more_notes = extra.add(d.existing, entry, by_name=not any("shares only an alias" in n
                                                                        for n in notes))
        added += more
        notes = [_SHARED_ALIAS if "shares only an alias" in n else n
                 for n in notes if "its summary differs" not in n] + more_notes
        if entry.layer_given and there is not None and there != entry.layer:
            notes.append(f"the source puts it in the {entry.layer} layer; it stays in the {there} layer")
        existing.append({"name": d.name, "source": entry.source, "id": d.existing, "how": d.how,
                         "added": added, "notes": notes})
    kept_ops = _retarget(extra.apply(kept_ops), value_links, final)
    delta = delta.model_copy(update={"ops": kept_ops})
    warnings += [d.note() for d in decisions if d.existing is None]
    origin_of = {d.created_as: d.proposed for d in decisions if d.created_as is not None}
    created: list[dict[str, Any]] = []
    related: list[dict[str, Any]] = []
    for op in delta.ops:
        if isinstance(op, CreateOp):
            origin = origin_of.get(op.node.id, op.node.id)
            created.append({"id": op.node.id, "name": op.node.name, "layer": op.node.layer,
                            "source": source_of[origin].source})
        elif isinstance(op, RelateOp):
            related.append({"source": op.source, "type": op.type, "target": op.target})
    made_nodes = [op.node for op in delta.ops if isinstance(op, CreateOp)]
    result = ImportResult(sources, created, [*home.existing, *existing], related, warnings, dry_run,
                          ambiguous=_ambiguous(names, delta),
                          entries=[*home.entries, *_report(entries, ids, final, placements, extra)],
                          similar=similar_names(names.view, made_nodes) if identity == "exact" else [],
                          missing=missing)
    for node_id, node in _unnamed(made_nodes).items():
        result.warnings.append(f"{source_of[origin_of.get(node_id, node_id)].source}: the name "
                               f"{node.name!r} has no letter or digit: its id is {node_id}")
    if not delta.ops and not home.changes:
        return result
    request = EventRequest(content=content, delta=delta, diffuser=None, edits=home.changes)
    result.event = run_event(wr, request, dry_run=dry_run, keep_failed=False)
    result.warnings += result.event.warnings
    return result


def _said(target: str) -> str:
    return target[1:] if target.startswith(lorelinks.WORLD) else repr(target)


def _ids(wr: WorldRepo, names: Names, entries: list[Entry], taken: set[str] | None = None) -> list[str]:
    """An id for each entry: the one its source gives, when free, else one made of its name as
    ``narr new`` makes it (:func:`narrative.engine.new.free_id`'s rule), each stem's next
    number remembered. The world's ids are gathered once, so that 20,000 entries cost a walk
    of the world, not 20,000 looks at it."""
    given: set[str] = set(taken or ())
    world = _world_ids(wr, names) if len(entries) > 8 else None
    after: dict[str, int] = {}
    out = []
    for entry in entries:
        if entry.ref is not None and id_problem(entry.ref) is None and entry.ref not in given:
            node_id = entry.ref  # the arbiter says whether the world's node of that id is this one
        else:
            stem = slugify(entry.name)
            if world is None:
                node_id = free_id(wr, names, stem, given, start=after.get(stem, 1))
            else:
                n = after.get(stem, 1)
                while (node_id := stem if n == 1 else f"{stem}-{n}") in given or node_id in world:
                    n += 1
            after[stem] = int(node_id.rsplit("-", 1)[1]) + 1 if node_id != stem else 2
        given.add(node_id)
        out.append(node_id)
    return out


def _world_ids(wr: WorldRepo, names: Names) -> set[str]:
    """Every id :func:`narrative.engine.new.free_id` would find taken: committed, edited, or a
    stray file in a layer's folder."""
    view = names.view
    out: set[str] = {node_id for _, node_id in view.catalog().names()}
    out.update(view.edits)
    world = wr.abs("world")
    if world.is_dir():
        out.update(p.stem for p in world.rglob("*.json"))
    return out


def _unnamed(nodes: list[Node]) -> dict[str, Node]:
    """New nodes whose name has no letter or digit ("???", "—"): a writer should know their id."""
    return {n.id: n for n in nodes if not any(ch.isalnum() for ch in n.name)}


def _to_itself(op: Op) -> bool:
    """A relation the arbiter turned onto its own source (two entries that became one node)."""
    return isinstance(op, RelateOp) and op.source == op.target


def _retarget(ops: list[Op], value_links: list[tuple[str, str, str, str]], final: dict[str, str]) -> list[Op]:
    """Trait and state values that link a proposed node the arbiter found in the world: its id."""
    moved = {(n, f, k): final[d] for n, f, k, d in value_links if final.get(d, d) != d}
    if not moved:
        return ops
    out: list[Op] = []
    for op in ops:
        if isinstance(op, CreateOp) and any(n == op.node.id for n, _, _ in moved):
            update: dict[str, Any] = {}
            for fname in ("traits", "state"):
                values = dict(getattr(op.node, fname))
                for (n, f, k), dst in moved.items():
                    if n == op.node.id and f == fname:
                        values[k] = dst
                update[fname] = values
            op = CreateOp(node=op.node.model_copy(update=update))
        out.append(op)
    return out


def _relate(entry: Entry, node_id: str, rtype: str, dst: str, attrs: dict[str, Any],
            warnings: list[str]) -> RelateOp | None:
    try:
        return RelateOp(source=node_id, type=rtype, target=dst, attrs=attrs)
    except ValueError:
        warnings.append(f"{entry.source}: {entry.name!r}: {rtype!r} cannot be a relation type "
                        "(1-64 characters, no spaces, ':', '/' or '~'); the relation is left out")
        return None


class _Additions:
    """What entries add to nodes the world (or this import) has already, beyond the arbiter's
    aliases and summary: their texts as sections, tags, the always-in-view flag, other tools'
    records. One set per field and node, holding every entry's part."""

    def __init__(self, names: Names, new_nodes: dict[str, Node]) -> None:
        self.names = names
        self.new_nodes = new_nodes
        self.nodes: dict[str, dict[str, Any]] = {}  # existing id -> the node as the additions leave it
        self.changed: dict[str, set[tuple[str, ...]]] = {}  # existing id -> fields changed, as tokens
        self.texts: dict[str, set[str]] = {}  # existing id -> its summary and sections, spaces collapsed

    def _node(self, node_id: str) -> dict[str, Any]:
        if node_id not in self.nodes:
            made = self.new_nodes.get(node_id)
            base: NodeDict | dict[str, Any] = (made.model_dump(mode="json") if made is not None
                                               else self.names.view.get(node_id) or {})
            self.nodes[node_id] = json.loads(json.dumps(base))
        return self.nodes[node_id]

    def add(self, node_id: str, entry: Entry, *, by_name: bool) -> tuple[list[str], list[str]]:
        node = self._node(node_id)
        changed = self.changed.setdefault(node_id, set())
        added: list[str] = []
        notes: list[str] = []
        sections: dict[str, str] = node.setdefault("sections", {})
        if node_id not in self.texts:
            self.texts[node_id] = {_same(str(node.get("summary", "")))} | {
                _same(t) for t in sections.values()}
        texts = self.texts[node_id]

        def keep(title: str, text: str, why: str) -> None:
            if not text.strip() or _same(text) in texts:
                return
            title = facets.free_title(sections, title)
            sections[title] = text
            texts.add(_same(text))
            changed.add(("sections",))
            added.append(f"/sections/{title}")
            notes.append(f"{why}: kept as the section {title!r}")

        summary = str(node.get("summary", "")).strip()
        title = entry.title or entry.name
        if normalize_name(title) == normalize_name(str(node.get("name", ""))):
            title = entry.source  # the node's own name says nothing: the file does
        if entry.summary.strip() and (summary or not by_name) and _same(entry.summary) not in texts:
            keep(title, entry.summary, "its summary differs from the node's (which stays)" if by_name
                 else "its summary")
        elif entry.summary.strip() and not summary:
            texts.add(_same(entry.summary))  # the arbiter sets it as the summary
        for title, text in entry.sections.items():
            keep(title, text, f"its section {title!r}")
        traits = node.get("traits") or {}
        for key, value in entry.traits.items():
            if key not in traits:
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                keep(key, text, f"its trait {key!r} (traits change only by hand)")
        tags = list(node.get("tags") or [])
        more = [t for t in entry.tags if t not in tags]
        if more:
            node["tags"] = tags + more
            changed.add(("tags",))
            added.append("/tags (" + ", ".join(json.dumps(t, ensure_ascii=False) for t in more) + ")")
        if entry.always_in_view and node.get("always_in_view") is not True:
            node["always_in_view"] = True
            changed.add(("always_in_view",))
            added.append("/always_in_view")
        ext: dict[str, Any] = node.setdefault("extensions", {})
        for space, value in entry.extensions.items():
            if space == "obsidian" and isinstance(value, dict):
                # where another note lay says nothing of this node; what the writer put in
                # its properties does
                value = {k: v for k, v in value.items() if k != "path"}
                if not value:
                    continue
            before = json.dumps(ext.get(space), sort_keys=True)
            facets.merge_extensions(ext, {space: value})
            if isinstance(ext.get(space), dict) and isinstance(value, dict):
                for key, v in value.items():
                    if isinstance(v, list):  # records: each once, a second import adds none
                        ext[space][key] = _unique(ext[space][key])
            if json.dumps(ext.get(space), sort_keys=True) != before:
                changed.add(("extensions", space))
                added.append(f"/extensions/{space}")
        return added, notes

    def apply(self, ops: list[Op]) -> list[Op]:
        """``ops`` with the additions: folded into a create of this import, else sets at the end."""
        out: list[Op] = []
        for op in ops:
            if isinstance(op, CreateOp) and op.node.id in self.changed and self.changed[op.node.id]:
                node = self.nodes[op.node.id]
                update = {"sections": node.get("sections") or {}, "tags": node.get("tags") or [],
                          "always_in_view": node.get("always_in_view") is True,
                          "extensions": node.get("extensions") or {}}
                out.append(CreateOp(node=op.node.model_copy(update=update)))
                self.changed[op.node.id] = set()
            else:
                out.append(op)
        for node_id, changed in self.changed.items():
            node = self.nodes[node_id]
            for tokens in sorted(changed):
                value: Any = node
                for part in tokens:
                    value = value[part]
                out.append(SetOp(target=node_id, field=fields.pointer(*tokens), value=value))
        return out

    def where(self, node_id: str, text: str) -> tuple[bool, str | None]:
        """Whether the node (as the additions leave it) holds ``text``, and in which section
        (None: its summary, or the summary the arbiter gives it)."""
        node = self._node(node_id)
        same = _same(text)
        for title, body in (node.get("sections") or {}).items():
            if _same(body) == same:
                return True, title
        summary = str(node.get("summary", ""))
        if not summary.strip() or _same(summary) == same:
            return True, None
        return False, None


def _unique(items: list[Any]) -> list[Any]:
    seen, out = set(), []
    for item in items:
        key = json.dumps(item, sort_keys=True, ensure_ascii=False)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _same(text: str) -> str:
    return " ".join(text.split())


def _report(entries: list[Entry], ids: list[str], final: dict[str, str],
            placements: list[Placement] | None, extra: _Additions) -> list[dict[str, Any]]:
    """Each entry read: the node its text is in now, and the section (None: the summary)."""
    if placements is None:
        placements = [Placement(e, i) for i, e in enumerate(entries)]
    out = []
    for p in placements:
        proposed = ids[p.group]
        node_id = final.get(proposed, proposed)
        section = p.section
        note = p.note
        if node_id != proposed and p.entry.summary.strip():  # a node that was there: look
            found, at = extra.where(node_id, p.entry.summary)
            section = at if found else section
        out.append({"source": p.entry.source, "title": p.entry.title, "name": p.entry.name,
                    "named_by": p.entry.named_by, "node": node_id, "section": section,
                    **({"note": note} if note else {})})
    return out


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
            for alias in op.value:
                if isinstance(alias, str):
                    given.setdefault(normalize_name(alias), {})[op.target] = alias
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
