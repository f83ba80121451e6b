"""English verb inflections for rule patterns (``~go`` reads goes, went, gone, going, go), and English words.

A rule author who spells out ``(goes|went|going)`` by hand forgets a form
("has gone") or misspells one, and every rule file repeats the same lists. The
forms come from a table of lemminflect's lexicon instead (``english.txt.gz``
beside this module, made by ``tools/english_table.py``): it knows the irregular
verbs (go/went/gone, take/took/taken, burn/burnt) and the words of English.
lemminflect itself is not imported: it brings numpy, 73 MB installed, for a
model of how to inflect an unknown word, and a test holds the table equal to it.

A verb the table does not know (``~zorp``) gets the regular forms by the
spelling rules; when it ends in one vowel and one consonant (``~blig``) the
forms with that consonant doubled too (bligged, bligging), since whether English
doubles it depends on the stress (visited, permitted), which the spelling does
not show, and matching one spelling more costs a pattern nothing.

The table loads once per process (about 10 ms for the words, as much again for
the verbs), when a rule file with ``~`` is read or an alias is weighed; expansion
is cached per verb, so matching an event costs what a hand-written list did.
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
    """Whether the English lexicon knows ``word`` (any part of speech, any case): "crane" yes, "qing" no."""
    return "\n" not in word and f"\n{word.lower()}\n" in _sections()[0]


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
    _, forms, bases = _sections()
    table: dict[str, str] = {}
    for line in forms.splitlines():
        lemma, _, rest = line.partition("\t")
        table[lemma] = rest
    return Verbs(table, dict(line.split("\t", 1) for line in bases.splitlines()))


@lru_cache(maxsize=1)
def _sections() -> tuple[str, str, str]:
    """The table shipped beside this module: its words (one a line, a newline either side), verbs, bases.

    The words stay one string searched for ``\\nword\\n``: building a set of 64,000
    words would double what the first look-up costs (about 10 ms), and ``is_word`` is cached.
    """
    import gzip
    from importlib.resources import files

    text = gzip.decompress(files(__package__).joinpath(TABLE).read_bytes()).decode("utf-8")
    _, words, forms, bases = re.split(r"^\[(?:words|verbs|bases)\]\n", text, flags=re.M)
    return "\n" + words, forms, bases
