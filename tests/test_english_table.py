"""The English table shipped in the package says what lemminflect, which it was made from, says.

lemminflect is a test dependency only (it brings numpy); these tests hold the
shipped table equal to what ``tools/english_table.py`` makes from it, and narr's
answers (``is_word``, ``verb_forms``, ``parts_of_speech``, ``is_base_verb``,
``is_inflected_verb``) equal to lemminflect's own.
"""

from __future__ import annotations

import gzip
import importlib.util
import random
import sys
from pathlib import Path

import pytest

from narrative.diffusers.inflect import (
    TAGS,
    VERB_RE,
    is_base_verb,
    is_inflected_verb,
    is_word,
    parts_of_speech,
    verb_forms,
    verbs,
)

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


def lemminflect_parts(word: str) -> frozenset[str]:
    """The categories lemminflect's lemma lookup gives the word as written, lowercase and
    capitalised (its overrides, pronouns as nouns, left out: see ``parts_of_speech``)."""
    lookup = lemminflect.Lemmatizer()._getLemmaDict()
    return frozenset(upos.lower() for form in (word, word.lower(), word.capitalize())
                     for upos in lookup.get(form, {}))


def test_parts_of_speech_agree_with_lemminflect() -> None:
    lookup = lemminflect.Lemmatizer()._getLemmaDict()
    known = sorted(lookup)
    rng = random.Random(11)
    words = [*rng.sample(known, 3000), *(w.capitalize() for w in rng.sample(known, 500)),
             *(w.upper() for w in rng.sample(known, 200)),
             "found", "went", "lantern", "Bishop", "Lee", "hung", "take", "Take", "'d", "qing", "",
             "him", "that", "another"]
    assert [parts_of_speech.__wrapped__(w) for w in words] == [lemminflect_parts(w) for w in words]
    verbs_of = {w: lookup.get(w.lower(), {}).get("VERB", ()) for w in words}
    assert [is_base_verb.__wrapped__(w) for w in words] == [w.lower() in verbs_of[w] for w in words]
    assert [is_inflected_verb.__wrapped__(w) for w in words] == [
        any(lemma != w.lower() for lemma in verbs_of[w]) for w in words]
    assert parts_of_speech("found") == {"verb"} and parts_of_speech("lantern") == {"noun"}
    assert parts_of_speech("him") == frozenset() and is_word("him")  # an override: a word, no noun
    assert is_base_verb("take") and not is_base_verb("took") and is_inflected_verb("found")


def test_the_shipped_classes_are_what_the_table_makes() -> None:
    """classes.json holds the shipped classes expanded with the table's verb forms (a verb the
    table does not know, such as "blazon", with its doubled spellings too)."""
    from narrative.diffusers import classes

    shipped = (Path(classes.__file__).parent / "classes.json").read_text(encoding="utf-8")
    assert shipped == classes.compiled_json(classes.rule_file_lemmas()), (
        "classes.json is stale: run python tools/classes_table.py")
