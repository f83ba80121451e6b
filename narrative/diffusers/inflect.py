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
