"""``narr new``: a node file from a layer and a name, with an id made for it.

The node is written to the working tree only; the next event records it as it
records any hand edit, so a new node and a hand-made one travel the same road
(``narr status`` shows it, ``narr reset`` sets it aside, ``narr check`` explains it).

Ids become file names and stay ASCII slugs (:data:`narrative.ids.ID_PATTERN`).
A Chinese name gets its pinyin without tones (林远 -> ``lin-yuan``), so the file
list stays readable and sorts like the names do; other scripts are folded to
ASCII where Unicode can, and a name with nothing left becomes ``node``.
A taken id gets ``-2``, ``-3`` ...: two different nodes may well share a
romanisation (林远 and 林园), and the names, not the ids, tell them apart; the
result says so. A name in Latin letters whose id is taken is the same words as
that node's name or id ("Old Mill!", "old-mill" beside Old Mill): most likely the
writer means that node, so it is refused unless ``force`` (``--force``) asks for a
second one. So is a name that only looks like one the world has ("Lіn Yuan" with a
Cyrillic і beside Lin Yuan: :mod:`narrative.engine.lookalike`), naming the characters
that differ.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Final

from narrative.engine.handedit import write_hand_edit
from narrative.engine.naming import Names
from narrative.errors import InvalidInputError, Step
from narrative.ids import LAYERS, LIFECYCLES, MAX_ID_LENGTH, id_problem, node_path, normalize_name
from narrative.store import WorldRepo

_CJK: Final = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_NOT_SLUG: Final = re.compile(r"[^a-z0-9]+")
_SLUG_ROOM: Final = MAX_ID_LENGTH - 4  # room for a "-NNN" suffix
MAX_NAME: Final = 200  # a name is a label: longer text belongs in the summary


@dataclass
class NewNode:
    id: str
    path: str
    node: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "name": self.node["name"],
                "layer": self.node["layer"], "kind": self.node["kind"],
                "aliases": self.node["aliases"], "warnings": self.warnings}


def slugify(name: str) -> str:
    """A readable id stem for ``name``: pinyin for Chinese, ASCII-folded words otherwise."""
    text = unicodedata.normalize("NFKC", name)
    if _CJK.search(text):
        from pypinyin import lazy_pinyin

        # one syllable per character, other runs as they are: "林远2号" -> lin yuan 2 hao
        text = " ".join(lazy_pinyin(text))
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = _NOT_SLUG.sub("-", ascii_text.lower()).strip("-")[:_SLUG_ROOM].strip("-")
    if not slug:
        return "node"
    if id_problem(slug) is not None:  # a device name such as "con"
        slug = f"{slug}-node"
    return slug


def new_node(wr: WorldRepo, layer: str, name: str, *, kind: str = "", aliases: list[str] | None = None,
             lifecycle: str = "permanent", summary: str = "", force: bool = False,
             pronouns: str | None = None) -> NewNode:
    """Write a new node file named ``name`` in ``layer``; refuse a name the world already uses.

    ``force``: make it even when its id is taken by a node of the same words (it gets ``-2``).
    ``pronouns`` (she, he, they, it): the ``pronouns`` trait, what "he", "her" and 他 bind by;
    without it the rules read them from the summary ("他是…", "She keeps ..."), or bind a
    pronoun to the character only when nobody else could be meant.
    The names are checked and the file written under the world's lock, as one step.
    """
    if pronouns is not None:
        from narrative.model import pronouns_problem

        pronouns = pronouns.strip().lower()
        problem = pronouns_problem(pronouns)
        if problem:
            raise InvalidInputError(f"{' '.join(name.split()) or 'the new node'}: {problem}",
                                    hint="{0}", steps=[Step(
                                        "new_node", {"layer": "character", "name": "NAME",
                                                     "pronouns": "she"},
                                        cli="narr new character NAME --pronouns she")])
        if layer != "character":
            raise InvalidInputError(f"{' '.join(name.split())}: pronouns are a character's; this is "
                                    f"a node of the {layer} layer")
    with wr.lock:
        return _new_node(wr, layer, name, kind=kind, aliases=aliases, lifecycle=lifecycle,
                         summary=summary, force=force, pronouns=pronouns)


def _new_node(wr: WorldRepo, layer: str, name: str, *, kind: str, aliases: list[str] | None,
              lifecycle: str, summary: str, force: bool, pronouns: str | None) -> NewNode:
    if layer not in LAYERS:
        raise InvalidInputError(f"unknown layer {layer!r}; expected one of {', '.join(LAYERS)}")
    if lifecycle not in LIFECYCLES:
        raise InvalidInputError(f"unknown lifecycle {lifecycle!r}; expected one of {', '.join(LIFECYCLES)}")
    name = " ".join(name.split())
    if not name:
        raise InvalidInputError("a node needs a name", hint="{0}", steps=[
            Step("new_node", {"layer": "character", "name": "Lin Yuan"},
                 cli='narr new character "Lin Yuan"')])
    aliases = [" ".join(a.split()) for a in aliases or []]
    for label, text in [("name", name), *(("alias", a) for a in aliases)]:
        if len(text) > MAX_NAME:
            raise InvalidInputError(f"the {label} is {len(text)} characters long; a name has at most "
                                    f"{MAX_NAME}", hint="say more in the summary")
    if any(not a for a in aliases):
        raise InvalidInputError("an --alias cannot be empty")
    names = Names(wr)
    warnings = []
    seen: set[str] = set()
    kept: list[str] = []
    for i, text in enumerate([name, *aliases]):
        norm = normalize_name(text)
        if norm in seen:  # names match case aside: the repeat would add nothing
            warnings.append(f"alias {text!r} left out: it is the name or an alias already "
                            "(names match case and spacing aside)")
            continue
        seen.add(norm)
        if i:
            kept.append(text)
        taken = sorted(names.view.ids_by_name([norm]).get(norm, set())) if names.tree is not None else []
        if taken:
            owners = ", ".join(f"{i} ({names.display_name(i)})" for i in taken)
            raise InvalidInputError(
                f"the name {text!r} is already used by {owners}",
                hint=("to mean that node, use it ({0}); for a different one, give another name, "
                      "or tell them apart with --alias"),
                steps=[Step("get_node", {"node": taken[0]})])
    twin = _lookalike(names, [name, *kept]) if names.tree is not None else None
    if twin is not None:
        text, node_of, shown = twin
        from narrative.engine.lookalike import differences

        why = ", ".join(differences(text, shown)) or "letters that look alike"
        said = (f"{text!r} looks like {shown!r}, the name of {node_of}: they differ only in "
                f"characters that look alike ({why})")
        if not force:
            raise InvalidInputError(said, hint="to mean that node, use it ({0}); to make a second "
                                               "node anyway, add --force",
                                    steps=[Step("get_node", {"node": node_of})])
        warnings.append(said + "; made anyway (--force)")
    stem = slugify(name)
    node_id = free_id(wr, names, stem)
    aliases = kept
    if node_id != stem:
        holder = names.display_name(stem) if names.view.exists(stem) else ""
        beside = f"{stem} ({holder})" if holder else stem
        if not _CJK.search(name) and not force:
            raise InvalidInputError(
                f"{name!r} would be {node_id} beside {beside}: the same words as that node's "
                "name or id", hint="to mean that node, use it ({0}); to make a second node "
                                   f"anyway, add --force (its id: {node_id})",
                steps=[Step("get_node", {"node": stem})])
        warnings.append(f"the id {stem} is taken by {beside}: this node is {node_id}; "
                        "the names tell them apart")
    node: dict[str, Any] = {
        "id": node_id, "name": name, "layer": layer, "kind": kind.strip(),
        "aliases": aliases, "summary": summary.strip(), "lifecycle": lifecycle,
        "created_by_event": None, "traits": {"pronouns": pronouns} if pronouns else {},
        "state": {}, "relations": {},
    }
    made = write_hand_edit(wr, node, node_id=node_id, create=True)  # never over a file just made
    return NewNode(node_id, made.path, dict(made.node), warnings)


def _lookalike(names: Names, texts: list[str]) -> tuple[str, str, str] | None:
    """``(text, node id, its name or alias)`` for the first of ``texts`` that only looks like a
    name or alias of a node (the same skeleton, another name); None when none does."""
    from narrative.engine.lookalike import skeleton

    wanted = {skeleton(text): text for text in texts}
    for norm, ids in names.all_names().items():
        if norm in ids:
            continue  # an id: the id check above has it
        text = wanted.get(skeleton(norm))
        if text is not None and normalize_name(text) != norm:
            node_id = sorted(ids)[0]
            node = names.view.get(node_id) or {}
            shown = next((str(n) for n in [node.get("name", ""), *(node.get("aliases") or [])]
                          if normalize_name(str(n)) == norm), norm)
            return text, node_id, shown
    return None


def free_id(wr: WorldRepo, names: Names, stem: str, also_taken: Collection[str] = (), *,
            start: int = 1) -> str:
    """``stem``, or ``stem-2``, ``stem-3`` ...: the first id no node (committed, edited, or a
    stray file in any layer) has, nor any of ``also_taken`` (ids given out but not yet written);
    ``start``: the first number to try (1: ``stem`` itself), when the ones before are known taken."""
    head = names.tree
    n = start
    while True:
        candidate = stem if n == 1 else f"{stem}-{n}"
        taken = candidate in also_taken or names.view.exists(candidate) or (
            head is not None and names.view.committed_path(candidate) is not None) or any(
            wr.abs(node_path(candidate, lay, wr.config.layout)).exists() for lay in LAYERS)
        if not taken:
            return candidate
        n += 1
