"""Chinese words around a name: is "马铃" in "马铃薯" the name, or part of the word for potato?

Chinese has no spaces, so the world's names are looked up at every character and
are found inside longer words: 马铃 in 马铃薯 (potato), 杜老板 in 杜老板娘 (his wife),
玉兰 in 玉兰花 (magnolia), 林远 in 树林远处 (the far side of the wood). Where a
dictionary word crosses the edge of a name found in the text, the few characters
around it are cut into words the way a unigram segmenter does (the most probable
sequence of dictionary words, jieba's method), with the world's names as words too;
the name stands only where the best cut has a word boundary at both its ends.

The dictionary is jieba's word list with its frequencies, as a table shipped in
the package (``chinese.txt.gz`` beside this module, made by
``tools/chinese_table.py`` from jieba's ``dict.txt``; jieba is MIT-licensed and its
notice travels with the table, in its header and in ``chinese.txt.gz.LICENSE``).
jieba itself is not needed: its package is 42 MB installed, and building its own
segmenter takes 2-3 s a process. The table (1.6 MB) is read once per process, and
only when a Chinese name is found in a text: about 20 ms to decompress; then words
are looked up by binary search, a few microseconds each, and only where a word
crosses a name is the segmenter run, over at most a dozen characters. Nothing is
written anywhere. Without the table (a package stripped of it), names are matched as
before, longest first.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable
from functools import lru_cache

NAME_BONUS = 50.0  # a name is this much likelier than the words it is made of (measured: 10-600)
MAX_WORD = 6  # characters in a dictionary word considered
WINDOW = 6  # characters of context on each side of a name
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


class Dictionary:
    """Word frequencies, looked up by binary search in a sorted ``word\tfreq`` list."""

    def __init__(self, data: bytes) -> None:
        pos = 0
        while data.startswith(b"# ", pos) or data.startswith(b"#\n", pos):  # the header
            pos = data.index(b"\n", pos) + 1
        end = data.index(b"\n", pos)
        self.total = int(data[pos:end].split(b"\t")[1])  # "#total\tN"
        self.data = data[end:]  # "\nword\tfreq" lines
        self._known: dict[str, int | None] = {}

    def freq(self, word: str) -> int | None:
        if word in self._known:
            return self._known[word]
        key = word.encode("utf-8")
        data = self.data
        lo, hi = 0, len(data)  # the newline starting the first line whose word is >= key
        while lo < hi:
            mid = (lo + hi) // 2
            s = data.rfind(b"\n", 0, mid + 1)
            if data[s + 1:data.find(b"\t", s)] < key:
                nxt = data.find(b"\n", s + 1)
                lo = len(data) if nxt < 0 else nxt
            else:
                hi = s
        found: int | None = None
        tab = data.find(b"\t", lo)
        if lo < len(data) and tab >= 0 and data[lo + 1:tab] == key:
            end = data.find(b"\n", tab)
            found = int(data[tab + 1:end if end >= 0 else None])
        if len(self._known) < 200_000:
            self._known[word] = found
        return found


TABLE = "chinese.txt.gz"


def _load() -> bytes | None:
    """The shipped table's text, or None when the package was installed without it."""
    import gzip
    from importlib.resources import files

    try:
        return gzip.decompress(files(__package__).joinpath(TABLE).read_bytes())
    except (OSError, EOFError):
        return None


@lru_cache(maxsize=1)
def dictionary() -> Dictionary | None:
    """The dictionary, or None when its table is missing."""
    data = _load()
    return Dictionary(data) if data is not None else None


def whole_words(text: str, spans: Iterable[tuple[int, int]], names: Iterable[str]) -> set[tuple[int, int]]:
    """The CJK ``spans`` (names found in ``text``) that are whole words, not parts of longer ones.

    A span no dictionary word crosses is kept without more ado; spans that are not
    Chinese, and all of them when there is no dictionary, are kept.
    """
    spans = list(spans)
    d = dictionary()
    if d is None:
        return set(spans)
    known = {n for n in names if _CJK.search(n)}
    out: set[tuple[int, int]] = set()
    for i, j in spans:
        if _longer_name(text, i, j, known, d):
            continue
        if not _CJK.search(text[i:j]) or not _crossed(d, text, i, j, known):
            out.add((i, j))
            continue
        lo, hi = _run(text, i, j)
        cuts = _best_cut(d, text, lo, hi, known)
        if i in cuts and j in cuts:
            out.add((i, j))
    return out


# What follows a subject's name at once without being part of it: particles and adverbs
# ("周铁又去了", "周铁轻拍着他", "周铁一把抓住").
_AFTER_NAME = frozenset("的地得了着过把被将在和与跟同也又就便都还才却正先再已早刚只仍竟轻慢猛紧死忙快悄默"
                        "一不没别很最更太可要会能是说对向从给让叫往朝")


# The second character of a verb compound: a result or a direction (跑出了, 捡起了, 躲进了).
_COMPLEMENTS = frozenset("出进到起下上回过开走掉亮住完好成伤死灭破断碎倒光透满错懂见在给向往来去")


def _longer_name(text: str, i: int, j: int, names: set[str], d: Dictionary) -> bool:
    """Whether the two-character name at ``[i, j)`` begins the longer name of someone else:
    in "周铁生抱着一箱零件" the character after 周铁 is no verb of its own, since another verb
    with its aspect (抱着) follows it at once, and the two make no word nor a verb and its result
    (跑出了, 捡起了): 周铁生 is another person. A name of the world that goes on there ("高德" in
    "高德顺") is weighed by the segmenter instead."""
    if j - i != 2 or j + 2 >= len(text) or any(n.startswith(text[i:j]) and len(n) > 2 for n in names):
        return False
    after, verb, aspect = text[j], text[j + 1], text[j + 2]
    return (bool(_CJK.match(after)) and after not in _AFTER_NAME and bool(_CJK.match(verb))
            and verb not in _AFTER_NAME and verb not in _COMPLEMENTS and aspect in "着了过"
            and d.freq(after + verb) is None)


def _crossed(d: Dictionary, text: str, i: int, j: int, names: set[str]) -> bool:
    """Whether some dictionary word (not a name) crosses the start or the end of ``[i, j)``."""
    n = len(text)
    for a in range(max(0, i - MAX_WORD + 1), j):
        for b in range(max(a + 2, i + 1), min(n, a + MAX_WORD) + 1):
            if (a < i < b) or (a < j < b):
                w = text[a:b]
                if w not in names and _CJK.fullmatch(w[0]) and d.freq(w) is not None:
                    return True
    return False


def _run(text: str, i: int, j: int) -> tuple[int, int]:
    """The stretch of Chinese characters around ``[i, j)``, at most ``WINDOW`` on each side."""
    lo = i
    while lo > 0 and i - lo < WINDOW and _CJK.match(text[lo - 1]):
        lo -= 1
    hi = j
    while hi < len(text) and hi - j < WINDOW and _CJK.match(text[hi]):
        hi += 1
    return lo, hi


def _best_cut(d: Dictionary, text: str, lo: int, hi: int, names: set[str]) -> set[int]:
    """Word boundaries of the most probable cut of ``text[lo:hi]`` (dynamic programming)."""
    log_total = math.log(d.total)

    def score(w: str) -> float | None:
        if w in names:
            return _name_score(d, w, log_total) + _longer(w, names)
        f = d.freq(w)
        if f is None:
            return -log_total if len(w) == 1 else None  # an unknown character: as rare as can be
        return math.log(f) - log_total

    best: list[tuple[float, int]] = [(-math.inf, hi)] * (hi - lo + 1)
    best[hi - lo] = (0.0, hi)
    for p in range(hi - 1, lo - 1, -1):
        for q in range(p + 1, min(hi, p + MAX_WORD + 4) + 1):
            s = score(text[p:q])
            if s is None:
                continue
            total = s + best[q - lo][0]
            if total > best[p - lo][0]:
                best[p - lo] = (total, q)
    cuts = {lo}
    p = lo
    while p < hi:
        p = best[p - lo][1]
        cuts.add(p)
    return cuts


LONGER_NAME_BONUS = math.log(20.0)  # per character a name covers beyond a shorter name it begins with


def _longer(name: str, names: set[str]) -> float:
    """What a name that begins with a shorter name of the world gains for each character more:
    "高德顺手里" is 高德顺 and 手里, though "顺手" is a commoner word than "顺" ("高德顺手把药方揣进了
    袖子里" stays 高德 and 顺手: 手 alone would be the rarer cut). Without it a longer name would
    pay for its last character as a word of its own, and lose to the shorter name beside any
    word that character begins."""
    shorter = max((len(n) for n in names if len(n) < len(name) and name.startswith(n)), default=0)
    return (len(name) - shorter) * LONGER_NAME_BONUS if shorter else 0.0


@lru_cache(maxsize=4096)
def _name_score(d: Dictionary, name: str, log_total: float) -> float:
    """A name's log-probability: its own best cut into dictionary words, times the bonus."""
    parts = sorted(_best_cut(d, name, 0, len(name), set()))
    total = 0.0
    for a, b in itertools.pairwise(parts):
        f = d.freq(name[a:b])
        total += (math.log(f) if f else 0.0) - log_total
    return total + math.log(NAME_BONUS)
