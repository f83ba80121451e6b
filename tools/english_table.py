#!/usr/bin/env python3
"""Write ``narrative/diffusers/english.txt.gz``: the English words and verb forms narr uses, from lemminflect.

narr needs two things from an English lexicon: whether a word is English ("crane"
yes, "qing" no: a one-word alias that is no English word is a name wherever it
stands) and every form of a verb for a rule's ``~go``. lemminflect's lexicon
knows both, but installing lemminflect brings numpy (73 of 178 MB of narr's
installed size) for a model narr never asks. So this script reads what narr asks
of lemminflect, once, into a small table shipped in the package, and lemminflect
is only a test dependency (a test holds the table equal to what this script
makes from the installed lemminflect).

    pip install lemminflect && python tools/english_table.py            # rewrite the table
    python tools/english_table.py --check                               # exit 1 if it is stale

The table is text, gzipped; its sections:

- ``[words]``: every lowercase word lemminflect lemmatises, one a line.
- ``[verbs]``: each verb lemminflect inflects, with its forms: nothing when they are
  the regular ones (``walk``), ``+`` when the regular ones with the last consonant
  doubled (``stop``), else the forms after the lemma, in lemminflect's order
  separated by ``|`` (``go	goes|went|gone|going``; a form may hold a space).
- ``[bases]``: an inflected form that is no verb lemma, with its base (``went	go``):
  narr refuses ``~went`` and names ``~go`` instead.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from narrative.diffusers.inflect import TABLE, doubled_forms, lexicon_forms, regular_forms  # noqa: E402

OUT = ROOT / "narrative" / "diffusers" / TABLE


def build() -> bytes:
    """The table's bytes, from the lemminflect this interpreter imports (deterministic: no gzip time)."""
    import lemminflect  # type: ignore[import-untyped]

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
    text = "\n".join([f"# made by tools/english_table.py from lemminflect {lemminflect.__version__}; "
                      "do not edit", "[words]", *english, "[verbs]", *verbs, "[bases]", *bases, ""])
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the table is up to date")
    args = parser.parse_args(argv)
    data = build()
    if args.check:
        if OUT.exists() and gzip.decompress(OUT.read_bytes()) == gzip.decompress(data):
            print(f"{OUT.relative_to(ROOT)} is up to date")
            return 0
        print(f"{OUT.relative_to(ROOT)} differs from what lemminflect gives: run tools/english_table.py",
              file=sys.stderr)
        return 1
    OUT.write_bytes(data)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(data) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
