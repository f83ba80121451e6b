#!/usr/bin/env python3
"""Write ``narrative/diffusers/english.txt.gz``: the English words and verb forms narr uses, from lemminflect.

narr needs three things from an English lexicon: whether a word is English ("crane"
yes, "qing" no: a one-word alias that is no English word is a name wherever it
stands), what a word can be (a noun, a verb, an adjective: "found" is a past form,
"the lantern that hung" has a noun before "that"), and every form of a verb for a
rule's ``~go``. lemminflect's lexicon knows all three, but installing lemminflect
brings numpy (73 of 178 MB of narr's installed size) for a model narr never asks.
So this script reads what narr asks of lemminflect, once, into a small table
shipped in the package, and lemminflect is only a test dependency (a test holds
the table equal to what this script makes from the installed lemminflect).

    pip install lemminflect && python tools/english_table.py            # rewrite the table
    python tools/english_table.py --check                               # exit 1 if it is stale

The table is text, gzipped; its sections:

- ``[verbs]``: each verb lemminflect inflects, with its forms: nothing when they are
  the regular ones (``walk``), ``+`` when the regular ones with the last consonant
  doubled (``stop``), else the forms after the lemma, in lemminflect's order
  separated by ``|`` (``go	goes|went|gone|going``; a form may hold a space).
- ``[bases]``: an inflected form that is no verb lemma, with its base (``went	go``):
  narr refuses ``~went`` and names ``~go`` instead.
- ``[lemmas]``: lemminflect's lemma lookup as it ships it (``lemma_lu.csv.gz``), one
  ``word,category,lemmas`` line for each part of speech of a word, sorted by word
  (``found,verb,find/found``): narr binary-searches it for a word's parts of speech
  and for whether it is a verb's base or inflected form.
- ``[overrides]``: the lines lemminflect's lemma overrides add (``lemma_overrides.csv``:
  pronouns and determiners it knows as nouns, ``him,NOUN,him``), in its own spelling.

A word is English when lemminflect lemmatises it: when its lowercase form is a word of
``[lemmas]`` or of ``[overrides]``.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from narrative.diffusers.inflect import TABLE, doubled_forms, lexicon_forms, regular_forms  # noqa: E402
from tools.shipped_table import write_or_check  # noqa: E402

OUT = ROOT / "narrative" / "diffusers" / TABLE


def build() -> bytes:
    """The table's bytes, from the lemminflect this interpreter imports (deterministic: no gzip time)."""
    import lemminflect  # type: ignore[import-untyped]
    from lemminflect import config

    lemmas = lemminflect.Lemmatizer()
    inflections = lemminflect.Inflections()
    words = {w.lower() for w in (*lemmas._getLemmaDict(), *lemmas._getOverridesDict())}
    english = sorted(w for w in words if lemminflect.getAllLemmas(w))
    lemma_keys = {w.lower() for w in (*inflections._getInflDict(), *inflections._getOverridesDict())}
    verbs: list[str] = []
    for word in sorted(lemma_keys):
        forms = lexicon_forms(word, lemminflect.getAllInflections(word, upos="VERB"))
        if forms is None:
            continue
        if forms == regular_forms(word):
            verbs.append(word)
        elif forms == doubled_forms(word):
            verbs.append(f"{word}\t+")
        else:
            verbs.append(f"{word}\t{'|'.join(forms[1:]) or '.'}")
    known = {v.split("\t")[0] for v in verbs}
    assert not any("|" in v or "\n" in v for v in english), "a word holds the table's separators"
    bases: list[str] = []
    for word in english:
        if word in known:
            continue
        base = lemminflect.getAllLemmas(word, upos="VERB").get("VERB", ())
        if base and word not in base:
            bases.append(f"{word}\t{base[0]}")
    with gzip.open(config.lemma_lu_fn, "rt", encoding="utf-8") as f:
        lookup = [line.strip() for line in f if line.strip()]
    with open(config.lemma_overrides_fn, encoding="utf-8") as f:
        overrides = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    for line in (*lookup, *overrides):
        assert line.count(",") == 2 and not line.startswith(("[", "#")), line
    words_of = [line.split(",", 1)[0] for line in lookup]
    assert words_of == sorted(words_of), "lemminflect's lemma lookup is no longer sorted by word"
    keys = {*words_of, *(line.split(",", 1)[0] for line in overrides)}
    assert set(english) == {k for k in keys if k.lower() == k}, "is_word would differ from lemminflect"
    text = "\n".join([f"# made by tools/english_table.py from lemminflect {lemminflect.__version__}; "
                      "do not edit", "[verbs]", *verbs, "[bases]", *bases, "[lemmas]", *lookup,
                      "[overrides]", *overrides, ""])
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the table is up to date")
    args = parser.parse_args(argv)
    data = build()
    return write_or_check(OUT, data, check=args.check, source="lemminflect", script="english_table.py")


if __name__ == "__main__":
    sys.exit(main())
