"""The English table shipped in the package says what lemminflect, which it was made from, says.

lemminflect is a test dependency only (it brings numpy); these tests hold the
shipped table equal to what ``tools/english_table.py`` makes from it, and narr's
answers (``is_word``, ``verb_forms``) equal to lemminflect's own.
"""

from __future__ import annotations

import gzip
import importlib.util
import random
import sys
from pathlib import Path

import pytest

from narrative.diffusers.inflect import TAGS, VERB_RE, is_word, verb_forms, verbs

lemminflect = pytest.importorskip("lemminflect")
TOOL = Path(__file__).resolve().parent.parent / "tools" / "english_table.py"


def lemminflect_forms(word: str) -> tuple[str, ...] | str:
    """What narr asked lemminflect before the table: the forms, or the base form to write instead."""
    table = lemminflect.getAllInflections(word, upos="VERB")
    if not table:
        base = lemminflect.getAllLemmas(word, upos="VERB").get("VERB", ())
        if base and word not in base:
            return base[0]
        table = lemminflect.getAllInflectionsOOV(word, upos="VERB")
    forms = [word]
    for tag in TAGS:
        forms += [f for f in table.get(tag, ()) if f not in forms]
    return tuple(forms)


def narr_forms(word: str) -> tuple[str, ...] | str:
    try:
        return verb_forms.__wrapped__(word)  # type: ignore[attr-defined, no-any-return]
    except ValueError as exc:
        return str(exc).rsplit("~", 1)[1].rstrip(")")


def test_the_shipped_table_is_what_the_script_makes_from_lemminflect() -> None:
    spec = importlib.util.spec_from_file_location("english_table", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules["english_table"] = tool
    try:
        spec.loader.exec_module(tool)
        assert gzip.decompress(tool.OUT.read_bytes()) == gzip.decompress(tool.build())
    finally:
        del sys.modules["english_table"]


def test_every_verb_and_inflected_form_gets_what_lemminflect_gives() -> None:
    table = verbs()
    words = [w for w in (*table.forms, *table.bases) if VERB_RE.match(w)]
    assert len(words) > 25_000
    assert [narr_forms(w) for w in words] == [lemminflect_forms(w) for w in words]
    assert verb_forms("go") == ("go", "goes", "went", "gone", "going")
    assert narr_forms("went") == "go"


def test_an_unknown_verb_gets_every_spelling_lemminflect_guesses() -> None:
    """lemminflect guesses with a model (numpy) whether to double; narr takes both spellings then."""
    invented = ["zorp", "blig", "frob", "snarf", "glomp", "yeet", "vrat", "plon", "skitch", "mizzle", "flurb",
                "quop", "dreel", "trab", "smeg", "glave", "wiz", "fonk", "brinch", "slurd"]
    for word in invented:
        assert not lemminflect.getAllInflections(word) and not lemminflect.getAllLemmas(word), word
        ours, theirs = narr_forms(word), lemminflect_forms(word)
        assert isinstance(ours, tuple) and set(theirs) <= set(ours), (word, theirs, ours)
    assert verb_forms("blig") == ("blig", "bligs", "bliged", "bliging", "bligged", "bligging")
    assert verb_forms("zorp") == ("zorp", "zorps", "zorped", "zorping")


def test_the_word_list_agrees_with_lemminflect() -> None:
    known = list(lemminflect.Lemmatizer()._getLemmaDict())
    words = [*random.Random(7).sample(known, 2000),
             "crane", "Bell", "all", "another", "'d", "qing", "xue", "zhou", "xyzzy", "lin-yuan", "", "a\nb"]
    assert [is_word.__wrapped__(w) for w in words] == [bool(lemminflect.getAllLemmas(w)) for w in words]
    assert is_word("Crane") and not is_word("Qing")
