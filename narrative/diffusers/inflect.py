"""English verb inflections for rule patterns: ``~go`` reads goes, went, gone, going, go.

A rule author who spells out ``(goes|went|going)`` by hand forgets a form
("has gone") or misspells one, and every rule file repeats the same lists. The
forms come from ``lemminflect`` instead: its lexicon (shipped with the package,
no download) knows the irregular verbs (go/went/gone, take/took/taken,
burn/burnt), and its rules inflect a verb it has never seen (``~zorp``: zorps,
zorped, zorping). Expansion happens once per verb per process (cached), when
rule files are read, so matching an event costs what a hand-written list did.
"""

from __future__ import annotations

import re
from functools import lru_cache

VERB_RE = re.compile(r"^[a-z]+(?:-[a-z]+)*$")
_TAGS = ("VB", "VBP", "VBZ", "VBD", "VBN", "VBG")


@lru_cache(maxsize=1024)
def verb_forms(lemma: str) -> tuple[str, ...]:
    """Every form of the English verb ``lemma``, the lemma first; ``ValueError`` if it is no base form.

    A past or third-person form (``~went``, ``~walks``) is refused with the base
    form to write instead: inflecting an inflected word gives nonsense ("wented").
    """
    import lemminflect  # a few hundred milliseconds: only worlds whose rules use ``~`` pay it

    word = lemma.lower()
    if not VERB_RE.match(word):
        raise ValueError(f"'~{lemma}': '~' takes one English verb in lowercase letters (e.g. ~go)")
    table = lemminflect.getAllInflections(word, upos="VERB")
    if not table:
        base = lemminflect.getAllLemmas(word, upos="VERB").get("VERB", ())
        if base and word not in base:
            raise ValueError(f"'~{lemma}': write the verb's base form (~{base[0]})")
        table = lemminflect.getAllInflectionsOOV(word, upos="VERB")
    forms = [word]
    for tag in _TAGS:
        for form in table.get(tag, ()):
            if form not in forms:
                forms.append(form)
    return tuple(forms)


@lru_cache(maxsize=4096)
def is_word(word: str) -> bool:
    """Whether lemminflect's lexicon knows ``word`` (any part of speech): "crane" yes, "qing" no.

    The lexicon's word list is read straight from its file: importing lemminflect and
    building its lemma table costs more than half a second, a word list a twentieth.
    """
    lexicon = _lexicon()
    key = word.lower()
    if lexicon is None:  # a lemminflect that keeps its lexicon elsewhere
        import lemminflect

        return bool(lemminflect.getAllLemmas(key))
    words, overrides = lexicon
    return key in overrides or ("\n" + key + ",").encode() in words


@lru_cache(maxsize=8192)
def parts_of_speech(word: str) -> frozenset[str]:
    """What lemminflect's lexicon says ``word`` can be: ``noun``, ``verb``, ``adj``, ``aux`` ...
    (empty for a word it does not know). Read from the same word list as :func:`is_word`,
    whose lines are sorted by word: a binary search finds them without an index."""
    lexicon = _lexicon()
    if lexicon is None:
        try:
            import lemminflect
        except ImportError:  # no lexicon at all: nothing is known of the word
            return frozenset()
        return frozenset(k.lower() for k in lemminflect.getAllLemmas(word.lower()))
    words, _ = lexicon
    out: set[str] = set()
    for form in dict.fromkeys((word, word.lower(), word.capitalize())):
        out |= _categories(words, form.encode())
    return frozenset(out)


@lru_cache(maxsize=4096)
def is_base_verb(word: str) -> bool:
    """Whether ``word`` is an English verb in its base form ("take", "go"; not "took", "goes")."""
    lexicon = _lexicon()
    if lexicon is None:
        return False
    w = word.lower()
    return w in _lemmas(lexicon[0], w.encode(), b"verb")


@lru_cache(maxsize=4096)
def is_inflected_verb(word: str) -> bool:
    """Whether ``word`` is an inflected form of some English verb ("found": find; "walks")."""
    lexicon = _lexicon()
    if lexicon is None:
        return False
    w = word.lower()
    return any(lemma != w for lemma in _lemmas(lexicon[0], w.encode(), b"verb"))


def _lemmas(blob: bytes, key: bytes, category: bytes) -> set[str]:
    """The lemmas the lexicon gives ``key`` in ``category``."""
    out: set[str] = set()
    start = _first_line(blob, key)
    pos = start
    while 0 <= pos < len(blob):
        comma = blob.find(b",", pos + 1)
        if comma < 0 or blob[pos + 1:comma] != key:
            break
        cat_end = blob.find(b",", comma + 1)
        line_end = blob.find(b"\n", cat_end)
        if blob[comma + 1:cat_end] == category:
            out.update(x.decode() for x in blob[cat_end + 1:line_end if line_end >= 0 else None].split(b"/"))
        if line_end < 0:
            break
        pos = line_end
    return out


def _first_line(blob: bytes, key: bytes) -> int:
    """Where the first line whose word is ``key`` (or the first after it) starts (its newline)."""
    lo, hi = 0, len(blob)
    while lo < hi:
        mid = (lo + hi) // 2
        start = blob.rfind(b"\n", 0, mid + 1)
        comma = blob.find(b",", start + 1)
        if blob[start + 1:comma] < key:
            nxt = blob.find(b"\n", mid + 1)
            lo = len(blob) if nxt < 0 else nxt
        else:
            hi = start
    return lo


def _categories(blob: bytes, key: bytes) -> set[str]:
    """The categories of ``key`` in ``blob`` (``\nword,category,lemmas`` lines sorted by word)."""
    lo, hi = 0, len(blob)
    while lo < hi:  # the first line whose word is >= key
        mid = (lo + hi) // 2
        start = blob.rfind(b"\n", 0, mid + 1)
        comma = blob.find(b",", start + 1)
        if blob[start + 1:comma] < key:
            nxt = blob.find(b"\n", mid + 1)
            lo = len(blob) if nxt < 0 else nxt
        else:
            hi = start
    out: set[str] = set()
    pos = lo
    while 0 <= pos < len(blob):
        comma = blob.find(b",", pos + 1)
        if comma < 0 or blob[pos + 1:comma] != key:
            if blob[pos + 1:comma] > key and pos > lo:
                break
            if pos > lo + 4096:
                break
        else:
            cat_end = blob.find(b",", comma + 1)
            out.add(blob[comma + 1:cat_end].decode())
        nxt = blob.find(b"\n", pos + 1)
        if nxt < 0:
            break
        pos = nxt
    return out


@lru_cache(maxsize=1)
def _lexicon() -> tuple[bytes, frozenset[str]] | None:
    """lemminflect's lemma table as text (``\nword,category,lemmas`` lines) and the words its
    overrides add, or None when the files are not where this lemminflect keeps them."""
    import gzip
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("lemminflect")
    if spec is None or not spec.submodule_search_locations:
        return None
    resources = Path(next(iter(spec.submodule_search_locations))) / "resources"
    try:
        with gzip.open(resources / "lemma_lu.csv.gz", "rb") as f:
            words = b"\n" + f.read()
        lines = (resources / "lemma_overrides.csv").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    overrides = frozenset(line.split(",", 1)[0].strip().lower() for line in lines
                          if line.strip() and not line.startswith("#"))
    return words, overrides
