"""Names alike but not the same, among the nodes an import makes and those of their layer: a report.

An import keeps apart what its names keep apart. A name close to another, by the rules the
arbiter uses for an event's new nodes (one inside the other, starting and ending on the same
words: Giant Toad and Giant Ice Toad; a close spelling: Light and Blight, Name1 and Name12,
Control Water and Control Weather; the same words but for an article or a hyphen), is as
often another thing in a writer's bible as a slip of the pen. The writer decides: the import
lists each such pair, kept apart (``narr import --merge-similar`` takes them as one).

Pairs are found without comparing every name with every other, so that a book of 20,000
entries is weighed in seconds: a name meets only those that share its first and last word,
its words (articles and hyphens aside), or a variant of it with one long word shortened by up
to two letters (two close spellings of a word meet in such a variant; a word of five letters
or more may differ, as the arbiter allows); each meeting is then weighed by the arbiter's own
rule (:class:`narrative.delta.arbiter.Likeness`). A spelling further off than that (three
letters of one word, two words at once) may go unreported; it is never merged.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, Final

from narrative.delta.arbiter import FUZZY_RATIO, FUZZY_WORD_CHARS, FUZZY_WORD_RATIO, Likeness, key
from narrative.ids import normalize_name
from narrative.model import Node
from narrative.store import WorldView

LONG_WORD: Final = 7  # a word this long may lose two letters, a shorter long word one
CROWD: Final = 300  # names meeting by one signature beyond this are too common a pattern to weigh


def _variants(k: str) -> set[str]:
    """The signatures a key meets others by (module docstring)."""
    words = k.split()
    out = {"=" + k}
    if len(words) >= 2:
        out.add(f"<{words[0]}>{words[-1]}")
    for i, word in enumerate(words):
        if len(word) < FUZZY_WORD_CHARS:
            continue  # a short word never differs in a close spelling (the arbiter's rule)
        shorter = {word[:j] + word[j + 1:] for j in range(len(word))}
        if len(word) >= LONG_WORD:
            shorter |= {w[:j] + w[j + 1:] for w in shorter for j in range(len(w))}
        for w in (word, *shorter):
            out.add(f"{i}:{' '.join([*words[:i], w, *words[i + 1:]])}")
    return out


def _may_be_alike(a: str, b: str) -> bool:
    """False when :class:`Likeness` would surely say no to a close spelling: rapidfuzz's Indel
    ratio bounds difflib's from above (the arbiter's own argument), word by word and whole;
    cheap, so that only the few pairs left are weighed by difflib."""
    wa, wb = a.split(), b.split()
    if len(wa) != len(wb) or a == b:
        return True  # "within", or the same words: Likeness decides at once
    from rapidfuzz.fuzz import ratio

    if ratio(a, b) < FUZZY_RATIO * 100 - 0.01:
        return False
    return all(x == y or (min(len(x), len(y)) >= FUZZY_WORD_CHARS
                          and ratio(x, y) >= FUZZY_WORD_RATIO * 100 - 0.01)
               for x, y in zip(wa, wb, strict=True))


def similar_names(view: WorldView, created: list[Node]) -> list[dict[str, Any]]:
    """``{"name", "id", "similar_to", "other", "how"}`` for each pair of alike names, one of
    them of a node in ``created`` (the others: the world's, in the same layer, or ``created``)."""
    by_sig: dict[tuple[str, str], list[tuple[str, str, str]]] = {}  # (layer, sig) -> (key, id, name)
    new_ids = {n.id for n in created}
    for node in created:
        for name in dict.fromkeys([node.name, *node.aliases]):
            k = key(name)
            if k:
                for sig in _variants(k):
                    by_sig.setdefault((node.layer, sig), []).append((k, node.id, name))
    found: dict[tuple[str, str], tuple[str, str, str]] = {}  # (id, other) -> (name, other name, how)
    verdicts: dict[tuple[str, str], str | None] = {}  # pair of keys -> how alike (None: not)
    likeness: dict[str, Likeness] = {}

    def weigh(a: tuple[str, str, str], b: tuple[str, str, str]) -> None:
        (ka, ia, na), (kb, ib, nb) = a, b
        if ia == ib or (ia, ib) in found or (ib, ia) in found:
            return  # one node, or a pair said already
        if ka == kb and normalize_name(na) == normalize_name(nb):
            return  # one name on two nodes: the import's "ambiguous"
        pair = (ka, kb) if ka <= kb else (kb, ka)
        if pair not in verdicts and not _may_be_alike(*pair):
            verdicts[pair] = None
        if pair not in verdicts:
            if pair[0] not in likeness:
                likeness[pair[0]] = Likeness(pair[0])
            alike = likeness[pair[0]](pair[1])
            verdicts[pair] = alike[1] if alike is not None else None
        how = verdicts[pair]
        if how is not None:
            found[(ia, ib)] = (na, nb, how)

    for group in by_sig.values():
        if len(group) <= CROWD:
            for a, b in combinations(group, 2):
                weigh(a, b)
    for layer in sorted({n.layer for n in created}):
        for norm, node_id in view.names_in_layer(layer):
            if node_id in new_ids:
                continue
            k = key(norm)
            if not k:
                continue
            for sig in _variants(k):
                group = by_sig.get((layer, sig), [])
                if len(group) <= CROWD:
                    for a in group:
                        weigh(a, (k, node_id, norm))
    names = {n.id: n.name for n in created}
    out = []
    for (ia, ib), (na, nb, how) in sorted(found.items()):
        other = names.get(ib) or str((view.get(ib) or {}).get("name", nb))
        out.append({"name": names.get(ia, na), "id": ia, "similar_to": other, "other": ib, "how": how})
    return out
