"""Shell completion's answers: the nodes, branches and chains a typed prefix may mean.

A node is offered by the first of its id, name and aliases that starts with what was
typed (compared as names are everywhere: Unicode-normalised, case aside), so
``li`` offers ``lin-yuan`` and ``林`` offers ``林远``; with nothing typed, the ids.
At most :data:`LIMIT` candidates, so a shell never waits on a world of 100k nodes.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from narrative.store import NodeSource, branch_names, chain_labels, node_names

if TYPE_CHECKING:
    from narrative.store import WorldRepo

LIMIT: Final = 200


@dataclass(frozen=True)
class Candidate:
    value: str
    help: str = ""


def _norm(text: str) -> str:
    """As :func:`narrative.ids.normalize_name`, but a trailing space typed is kept."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    joined = " ".join(folded.split())
    return joined + " " if joined and folded[-1:].isspace() else joined


def nodes(wr: NodeSource, typed: str) -> list[Candidate]:
    want = _norm(typed)
    out: list[Candidate] = []
    for node in node_names(wr, want, LIMIT):
        if node.id.startswith(want):
            word: str | None = node.id
        else:
            word = next((w for w in [node.name, *node.aliases] if w and _norm(w).startswith(want)),
                        None)
        if word is None:
            continue
        about = node.name if word == node.id else node.id
        out.append(Candidate(word, f"{about} ({node.layer})" if about else node.layer))
        if len(out) >= LIMIT:
            break
    return out


def branches(wr: WorldRepo, typed: str) -> list[Candidate]:
    return [Candidate(b, "branch") for b in branch_names(wr) if b.startswith(typed)][:LIMIT]


def chains(wr: WorldRepo, typed: str) -> list[Candidate]:
    """Chains by readable name, or by number when a digit was typed."""
    labels = chain_labels(wr)
    if typed[:1].isdigit():
        return [Candidate(str(n), label) for n, label in labels if str(n).startswith(typed)]
    want = _norm(typed)
    return [Candidate(label, f"chain {n}") for n, label in labels if _norm(label).startswith(want)]


def fields(wr: NodeSource, node_text: str, typed: str) -> list[Candidate]:
    """The dotted fields of the node ``node_text`` names (its id, or a name or alias only
    one node carries), as its file holds them now: ``state.location``, ``traits``, ..."""
    from narrative.store import node_document

    want = _norm(node_text)
    ids = [n.id for n in node_names(wr, want, LIMIT)
           if n.id == node_text or want in {_norm(w) for w in [n.name, *n.aliases] if w}]
    if len(ids) != 1:
        return []
    node = node_document(wr, ids[0])
    paths: list[str] = []

    def walk(value: object, prefix: str, depth: int) -> None:
        if not isinstance(value, dict):
            return
        for key in sorted(value):
            if not isinstance(key, str) or "." in key or not key:
                continue
            path = f"{prefix}{key}"
            paths.append(path)
            if depth < 2:
                walk(value[key], f"{path}.", depth + 1)

    walk(node, "", 0)
    return [Candidate(p) for p in paths if p.startswith(typed)][:LIMIT]
