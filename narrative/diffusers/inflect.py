"""English verb inflections for rule patterns (``~go`` reads goes, went, gone, going, go), English
words and what they can be (a noun, a verb in its base form ...).

A rule author who spells out ``(goes|went|going)`` by hand forgets a form
("has gone") or misspells one, and every rule file repeats the same lists. The
forms come from a table of lemminflect's lexicon instead (``english.txt.gz``
beside this module, made by ``tools/english_table.py``): it knows the irregular
verbs (go/went/gone, take/took/taken, burn/burnt), the words of English and the
parts of speech of each (lemminflect's lemma lookup, which the clause analysis
asks whether "found" is a past form or "lantern" a noun). lemminflect itself is
not imported: it brings numpy, 73 MB installed, for a model of how to inflect an
unknown word, and a test holds the table equal to it.

A verb the table does not know (``~zorp``) gets the regular forms by the
spelling rules; when it ends in one vowel and one consonant (``~blig``) the
forms with that consonant doubled too (bligged, bligging), since whether English
doubles it depends on the stress (visited, permitted), which the spelling does
not show, and matching one spelling more costs a pattern nothing.

The table loads once per process (about 8 ms to decompress, 10 ms more to read
the verbs when a rule file with ``~`` names one narr's classes do not), when an
alias is weighed or an English clause is read; every answer is cached, so matching
an event costs what a hand-written list did.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

TABLE = "english.txt.gz"
VERB_RE = re.compile(r"^[a-z]+(?:-[a-z]+)*$")
TAGS = ("VB", "VBP", "VBZ", "VBD", "VBN", "VBG")  # the order of a verb's forms
_SIBILANT = re.compile(r"(?:[sxz]|ch|sh)$")
_ONE_VOWEL_ONE_CONSONANT = re.compile(r"(?:^|[^aeiou])[aeiou][b-df-gj-np-tvz]$")


class Verbs(NamedTuple):
    forms: dict[str, str]  # lemma -> "" (regular), "+" (doubled), "." (no other) or its other forms
    bases: dict[str, str]  # an inflected form that is no lemma -> its base form


@lru_cache(maxsize=1024)
def verb_forms(lemma: str) -> tuple[str, ...]:
    """Every form of the English verb ``lemma``, the lemma first; ``ValueError`` if it is no base form.

    A past or third-person form (``~went``, ``~walks``) is refused with the base
    form to write instead: inflecting an inflected word gives nonsense ("wented").
    """
    word = lemma.lower()
    if not VERB_RE.match(word):
        raise ValueError(f"'~{lemma}': '~' takes one English verb in lowercase letters (e.g. ~go)")
    table = verbs()
    entry = table.forms.get(word)
    if entry is not None:
        if entry == "":
            return regular_forms(word)
        if entry == "+":
            return doubled_forms(word)
        if entry == ".":
            return (word,)
        return (word, *entry.split("|"))
    base = table.bases.get(word)
    if base is not None:
        raise ValueError(f"'~{lemma}': write the verb's base form (~{base})")
    forms = regular_forms(word)
    if _ONE_VOWEL_ONE_CONSONANT.search(word):
        forms = tuple(dict.fromkeys((*forms, *doubled_forms(word))))
    return forms


@lru_cache(maxsize=4096)
def is_word(word: str) -> bool:
    """Whether the English lexicon knows ``word`` (any part of speech, any case): "crane" yes, "qing" no.

    As lemminflect answers it: the lowercase word is a word of its lemma lookup or of its
    overrides (which add pronouns and determiners: "him", "another").
    """
    if "\n" in word or "," in word:
        return False
    key = word.lower()
    table = _table()
    return key in table.overrides or bool(_lines_of(table.lemmas, key.encode()))


def regular_forms(word: str) -> tuple[str, ...]:
    """``word``, its third person, past and present participle by the regular spelling rules."""
    if _SIBILANT.search(word):
        third, past, ing = word + "es", word + "ed", word + "ing"
    elif word.endswith("ie"):
        third, past, ing = word + "s", word + "d", word[:-2] + "ying"
    elif word.endswith(("ee", "oe", "ye")):
        third, past, ing = word + "s", word + "d", word + "ing"
    elif len(word) > 1 and word.endswith("y") and word[-2] not in "aeiou":
        third, past, ing = word[:-1] + "ies", word[:-1] + "ied", word[:-1] + "ying"
    elif len(word) > 1 and word.endswith("e") and word[-2] not in "iyeo":
        third, past, ing = word + "s", word + "d", word[:-1] + "ing"
    else:
        third, past, ing = word + "s", word + "ed", word + "ing"
    return word, third, past, ing


def doubled_forms(word: str) -> tuple[str, ...]:
    """The regular forms with the last consonant doubled before -ed and -ing (stop: stopped, stopping)."""
    return word, regular_forms(word)[1], word + word[-1] + "ed", word + word[-1] + "ing"


def lexicon_forms(word: str, table: Mapping[str, Sequence[str]]) -> tuple[str, ...] | None:
    """A verb's forms in narr's order from a lexicon's tag -> spellings map (None: no verb forms)."""
    if not table:
        return None
    forms = [word]
    for tag in TAGS:
        for form in table.get(tag, ()):
            if form not in forms:
                forms.append(form)
    return tuple(forms)


@lru_cache(maxsize=1)
def verbs() -> Verbs:
    """The table's verbs, read once."""
    forms, bases = _table().verbs, _table().bases
    table: dict[str, str] = {}
    for line in forms.splitlines():
        lemma, _, rest = line.partition("\t")
        table[lemma] = rest
    return Verbs(table, dict(line.split("\t", 1) for line in bases.splitlines()))


@lru_cache(maxsize=8192)
def parts_of_speech(word: str) -> frozenset[str]:
    """What lemminflect's lexicon says ``word`` can be: ``noun``, ``verb``, ``adj``, ``adv``, ``aux``
    (empty for a word it does not know), for the word as written, in lowercase and capitalised.

    The lemma lookup's own categories only: lemminflect's overrides, which make pronouns and
    determiners nouns ("him", "that"), are no part of it, so "begged him that ..." reads
    "him" as no noun and the "that"-clause as a complement, not as a relative clause.
    """
    blob = _table().lemmas
    out: set[str] = set()
    for form in dict.fromkeys((word, word.lower(), word.capitalize())):
        if "\n" not in form and "," not in form:
            out.update(category for category, _ in _lines_of(blob, form.encode()))
    return frozenset(out)


@lru_cache(maxsize=4096)
def is_base_verb(word: str) -> bool:
    """Whether ``word`` is an English verb in its base form ("take", "go"; not "took", "goes")."""
    w = word.lower()
    return w in _lemmas(w, "verb")


@lru_cache(maxsize=4096)
def is_inflected_verb(word: str) -> bool:
    """Whether ``word`` is an inflected form of some English verb ("found": find; "walks")."""
    w = word.lower()
    return any(lemma != w for lemma in _lemmas(w, "verb"))


def _lemmas(word: str, category: str) -> set[str]:
    """The lemmas the lexicon gives ``word`` in ``category``."""
    if "\n" in word or "," in word:
        return set()
    return {lemma for cat, lemmas in _lines_of(_table().lemmas, word.encode()) if cat == category
            for lemma in lemmas.split("/")}


def _lines_of(blob: bytes, key: bytes) -> list[tuple[str, str]]:
    """``(category, lemmas)`` of every line of ``blob`` (``\nword,category,lemmas`` lines sorted by
    word) whose word is ``key``: a binary search for the first, then the lines after it."""
    lo, hi = 0, len(blob)
    while lo < hi:  # the newline starting the first line whose word is >= key
        mid = (lo + hi) // 2
        start = blob.rfind(b"\n", 0, mid + 1)
        if blob[start + 1:blob.find(b",", start + 1)] < key:
            nxt = blob.find(b"\n", mid + 1)
            lo = len(blob) if nxt < 0 else nxt
        else:
            hi = start
    out: list[tuple[str, str]] = []
    pos = lo
    while pos < len(blob):
        comma = blob.find(b",", pos + 1)
        if comma < 0 or blob[pos + 1:comma] != key:
            break
        end = blob.find(b"\n", comma)
        end = len(blob) if end < 0 else end
        category, _, lemmas = blob[comma + 1:end].decode().partition(",")
        out.append((category, lemmas))
        pos = end
    return out


class _Table(NamedTuple):
    verbs: str
    bases: str
    lemmas: bytes  # "\nword,category,lemmas" lines, sorted by word
    overrides: frozenset[str]  # the words of lemminflect's lemma overrides


@lru_cache(maxsize=1)
def _table() -> _Table:
    """The table shipped beside this module (see ``tools/english_table.py``), read once.

    The lemma lookup stays the bytes it is, binary-searched: building a dict of its
    80,000 lines would cost several times the decompression (about 8 ms for the whole
    table), and each answer is cached.
    """
    import gzip
    from importlib.resources import files

    data = gzip.decompress(files(__package__).joinpath(TABLE).read_bytes())
    parts: dict[str, bytes] = {}
    names = ("verbs", "bases", "lemmas", "overrides")
    at = [data.index(b"\n[%s]\n" % name.encode()) for name in names]
    for k, name in enumerate(names):
        start = at[k] + len(name) + 4
        parts[name] = data[start:at[k + 1] + 1 if k + 1 < len(at) else len(data)]
    overrides = frozenset(line.split(b",", 1)[0].decode() for line in parts["overrides"].splitlines()
                          if line)
    return _Table(parts["verbs"].decode(), parts["bases"].decode(), b"\n" + parts["lemmas"].rstrip(b"\n"),
                  overrides)
