"""The context pack a diffuser works from: who and what the event names, their
neighbourhood in the world graph, and the last few events.

Names are found without reading the world: every span of the text that starts
and ends on a word boundary (any character boundary inside Chinese, Japanese or
Korean text, which has no spaces) is looked up among the world's names
(:meth:`~narrative.delta.world.World.ids_by_name`), and the longest matches win.
The cost follows the length of the text, not the size of the world. A Chinese
name found inside a longer dictionary word (马铃 in 马铃薯) is not the name
(:mod:`narrative.diffusers.zhwords`).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from narrative.ids import normalize_name
from narrative.nodefile import NodeDict, edges_of

if TYPE_CHECKING:
    from narrative.delta.request import EventRequest
    from narrative.delta.world import World

MAX_NAME_CHARS = 40
RECENT_EVENTS = 5


def is_cjk(ch: str) -> bool:
    """Characters of scripts written without spaces between words."""
    if not ch:
        return False
    name = unicodedata.name(ch, "")
    return name.startswith(("CJK ", "HIRAGANA", "KATAKANA", "HANGUL", "IDEOGRAPHIC"))


@dataclass(frozen=True)
class Mention:
    """A span of the event text that names one node (or several, when the name is shared)."""

    start: int
    end: int
    text: str
    ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "text": self.text, "ids": list(self.ids)}


def candidate_spans(text: str, max_chars: int = MAX_NAME_CHARS,
                    reach: Callable[[str], int] | None = None) -> list[tuple[int, int]]:
    """Spans that could be a name: they start and end on a word boundary.

    ``reach(ch)`` bounds the spans starting with ``ch`` (0: no name starts so);
    without it a long Chinese text, where every character is a boundary, makes
    forty spans per character to look up.
    """
    n = len(text)
    starts = []
    ends = set()
    for i, ch in enumerate(text):
        prev = text[i - 1] if i else ""
        if ch.isspace() or not (ch.isalnum() or is_cjk(ch)):
            continue
        if is_cjk(ch) or not prev or not prev.isalnum() or is_cjk(prev):
            starts.append(i)
    for j in range(1, n + 1):
        last = text[j - 1]
        nxt = text[j] if j < n else ""
        if last.isspace() or not (last.isalnum() or is_cjk(last)):
            continue
        if is_cjk(last) or not nxt or not nxt.isalnum() or is_cjk(nxt):
            ends.add(j)
    spans = []
    for i in starts:
        longest = max_chars if reach is None else min(max_chars, reach(text[i]))
        for j in range(i + 1, min(n, i + longest) + 1):
            if j in ends:
                spans.append((i, j))
    return spans


class DisjointSpans:
    """Non-overlapping ``[start, end)`` spans, asked "does this one overlap?" in log time.

    Long texts (a pasted chapter names the same people hundreds of times) made
    the pairwise check quadratic: seconds for 30 KB.
    """

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        k = bisect.bisect_left(self.starts, end)  # spans starting before ``end``
        return k > 0 and self.ends[k - 1] > start

    def add(self, start: int, end: int) -> None:
        k = bisect.bisect_left(self.starts, start)
        self.starts.insert(k, start)
        self.ends.insert(k, end)


def find_mentions(world: World, text: str) -> list[Mention]:
    """Nodes named in ``text`` by name or alias, longest match first, without overlaps."""
    spans = candidate_spans(text, reach=_name_reach(world))
    by_norm: dict[str, list[tuple[int, int]]] = {}
    for i, j in spans:
        by_norm.setdefault(normalize_name(text[i:j]), []).append((i, j))
    hits = world.ids_by_name(set(by_norm))
    found: list[tuple[int, int, tuple[str, ...]]] = []
    for norm, named in hits.items():
        for i, j in by_norm.get(norm, []):
            found.append((i, j, tuple(sorted(named))))
    starts = _sentence_starts(text)
    found = [(i, j, kept) for i, j, ids in found if (kept := _as_name(world, text, i, j, ids, starts))]
    cjk = [(i, j) for i, j, _ in found if is_cjk(text[i])]
    if cjk:  # 马铃 is not the name inside 马铃薯, nor 杜老板 inside 杜老板娘
        from narrative.diffusers.zhwords import whole_words

        whole = whole_words(text, cjk, {text[i:j] for i, j in cjk})
        found = [(i, j, ids) for i, j, ids in found if not is_cjk(text[i]) or (i, j) in whole]
    found.sort(key=lambda t: (-(t[1] - t[0]), t[0]))
    taken = DisjointSpans()
    out: list[Mention] = []
    for i, j, ids in found:
        if taken.overlaps(i, j):
            continue
        taken.add(i, j)
        out.append(Mention(i, j, text[i:j], ids))
    return sorted(out, key=lambda m: m.start)


_ONE_WORD = re.compile(r"[A-Za-z][a-z]*(?:['’-][A-Za-z]+)?")
_OPENING = re.compile(r"[\s\"'“‘(\[«「『—-]*")
# an article or a possessive: "the Bishop of Shanghai", "Lin Yuan's Crane" ("that" is left out: "saw
# that Tom had gone" is a clause, not a determiner)
_DETERMINER_BEFORE = re.compile(r"(?:(?<![\w'’])(?:the|a|an|his|her|its|their|my|our|your|every|each|"
                                r"some|no|any|another)|['’]s)\s+$", re.IGNORECASE)
_NEXT_WORD = re.compile(r"\s+(?:[a-z]+ly\s+)?([A-Za-z'’-]+)")
_AUXILIARIES = frozenset({"had", "has", "have", "was", "is", "were", "are", "did", "does", "would",
                          "could", "will", "shall", "should", "might", "may", "must", "can", "never",
                          "always", "then", "too", "also", "alone", "himself", "herself"})


def _as_name(world: World, text: str, i: int, j: int, ids: tuple[str, ...],
             starts: Callable[[], frozenset[int]]) -> tuple[str, ...]:
    """The nodes a span names, without characters whose one-word alias is used here as a common word.

    A character called "Crane" or "Bell" must not walk whenever "a crane walks by"
    or "the bell rings". A one-word name or alias of a character that is also an
    English word counts as the name only where the text writes it capitalised and
    with no article or possessive before it ("the Bishop of Shanghai" is none);
    at the start of a sentence, where every word is capitalised, only when a verb
    follows it ("Crane walks to the ferry": a common noun would need an article),
    or when the character lists it in its ``name_words`` trait (the world says that
    word is a name). Aliases with an article ("the elder", "the ferryman"), names of
    several words, other layers and names that are no English word ("Qing", "Xue")
    are names as written. Sentence starts are the sentence splitter's ("Maj. F.
    Bishop" starts none).
    """
    word = text[i:j]
    if not _ONE_WORD.fullmatch(word):
        return ids
    capital = text[i].isupper()
    determined = bool(_DETERMINER_BEFORE.search(text, max(0, i - 12), i))
    if capital and not determined and not _at_start(text, i, starts()):
        return ids
    # "Hope去了花园": an English word written into Chinese, capitalised, is a name
    verb_after = capital and not determined and (_verb_follows(text, j)
                                                 or "\u4e00" <= text[j:j + 1] <= "\u9fff")
    kept = []
    for node_id in ids:
        node = world.get(node_id)
        if node is None or node.get("layer") != "character":
            kept.append(node_id)
            continue
        declared = (node.get("traits") or {}).get("name_words")
        named = (capital and not determined and isinstance(declared, list)
                 and word.lower() in {str(w).lower() for w in declared})
        if named or verb_after or not _english_word(word):
            kept.append(node_id)
    return tuple(kept)


def _at_start(text: str, i: int, starts: frozenset[int]) -> bool:
    """Whether only opening quotes and spaces stand between a sentence start and ``i``."""
    k = i
    while k > 0 and _OPENING.fullmatch(text[k - 1]):
        k -= 1
    return k == 0 or k in starts


def _verb_follows(text: str, j: int) -> bool:
    """Whether a finite verb follows ("Lee lit", "Cook had", "Bishop, who ...": a name)."""
    from narrative.diffusers.inflect import is_base_verb, is_inflected_verb, parts_of_speech

    rest = text[j:j + 3]
    if rest.startswith((",", "'s", "’s")):
        return True
    m = _NEXT_WORD.match(text, j)
    if m is None:
        return False
    nxt = m.group(1)
    if nxt.lower() in _AUXILIARIES:
        return True
    if nxt.lower() == "and" and text[m.end():m.end() + 2].strip()[:1].isupper():
        return True  # "Lee and White Rose talked"
    if not nxt.islower():
        return False
    tags = parts_of_speech(nxt.lower())
    if not tags:
        return nxt.endswith("ed")  # a verb the lexicon lacks: "pistol-whipped"
    return ("verb" in tags or "aux" in tags) and (not is_base_verb(nxt) or is_inflected_verb(nxt))


def _sentence_starts(text: str) -> Callable[[], frozenset[int]]:
    """Where the sentences of ``text`` start, found once and only when asked."""
    found: list[frozenset[int]] = []

    def starts() -> frozenset[int]:
        if not found:
            from narrative.diffusers.clauses import segmenter

            found.append(frozenset(segmenter().ends(text)))
        return found[0]

    return starts


def _english_word(word: str) -> bool:
    """Whether ``word`` is an English word (the English table of :mod:`inflect`: "crane", "bell", "yuan")."""
    from narrative.diffusers.inflect import is_word

    return is_word(word)


def _name_reach(world: World) -> Callable[[str], int]:
    """For a character, how long a span starting with it may need to be to spell a name.

    One question to the world per distinct character of the text. Normalising can
    change a span's length (full-width letters, ligatures), hence the slack.
    """
    known: dict[str, int] = {}

    def reach(ch: str) -> int:
        if ch not in known:
            first = normalize_name(ch)[:1]
            longest = world.name_reach(first) if first else 0
            known[ch] = 2 * longest + 2 if longest else 0
        return known[ch]

    return reach


@dataclass
class ContextPack:
    """What a diffuser sees of the world for one event (JSON-ready via :meth:`to_json`)."""

    content: str
    timestamp: str | None
    world: dict[str, str]
    mentions: list[Mention]
    nodes: dict[str, NodeDict]
    edges: list[dict[str, str]]
    recent_events: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "timestamp": self.timestamp,
            "world": self.world,
            "mentions": [m.to_json() for m in self.mentions],
            "nodes": self.nodes,
            "edges": self.edges,
            "recent_events": self.recent_events,
        }


def build_context(world: World, request: EventRequest, *, radius: int = 1,
                  recent: int = RECENT_EVENTS) -> ContextPack:
    """The context pack: mentioned nodes, their neighbourhood (networkx), recent events."""
    import networkx as nx

    mentions = find_mentions(world, request.content)
    seeds = {i for m in mentions for i in m.ids}
    graph = nx.MultiDiGraph()
    loaded: dict[str, NodeDict] = {}

    def load(node_id: str) -> NodeDict | None:
        if node_id not in loaded:
            node = world.get(node_id)
            if node is None:
                return None
            loaded[node_id] = node
        return loaded[node_id]

    expanded: set[str] = set()
    frontier = set(seeds)
    for _ in range(radius):
        reached: set[str] = set()
        for node_id in sorted(frontier):
            node = load(node_id)
            if node is None:
                continue
            graph.add_node(node_id)
            for rtype, dst in edges_of(node):
                graph.add_edge(node_id, dst, key=rtype)
                reached.add(dst)
        for src, rtype, dst in world.incoming(frontier):
            graph.add_edge(src, dst, key=rtype)
            reached.add(src)
        expanded |= frontier
        frontier = reached - expanded
    keep = set(seeds)
    undirected = graph.to_undirected(as_view=True)
    for s in seeds:
        if s in graph:
            keep |= set(nx.ego_graph(undirected, s, radius=radius).nodes)
    nodes = {i: load(i) for i in sorted(keep)}
    edges = [{"source": a, "type": k, "target": b}
             for a, b, k in sorted(graph.edges(keys=True)) if a in keep and b in keep]
    return ContextPack(
        content=request.content,
        timestamp=request.timestamp,
        world={"name": world.name, "language": world.language},
        mentions=mentions,
        nodes={k: v for k, v in nodes.items() if v is not None},
        edges=edges,
        recent_events=world.recent_events(recent),
    )
