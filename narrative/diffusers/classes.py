"""Classes of verbs and phrases: the words a rule family is about, held as data.

A rule pattern names a class with ``@name`` ("{who} @go (to|into) {place}", "{killer}
@kill {who}") instead of spelling out its verbs, so one list of hundreds of motion
verbs serves every rule about motion, and a world adds a verb once. The classes
narr ships are in ``classes.toml`` beside this module; a world's rule files add
entries to them, or new classes, in a ``[classes]`` table::

    [classes]
    go = ["mosey", "skedaddle", "溜达到"]          # added to narr's own class @go
    [classes.haunt]                                # a class of the world's own
    en = ["haunt", "walk through the walls of"]
    zh = ["闹鬼"]

An English entry is a phrase whose first word is a verb in its base form: it stands
for every form of that verb ("stagger" is staggers, staggered, staggering; "be sure"
is "is sure", "was sure" ...). ``(a|b)`` gives alternatives for one place of the
phrase ("take a (rickshaw|cab) to"). ``_`` marks where an object stands in a
separable phrasal verb ("finish _ off": "finished Cook off"); a two-word phrasal
verb ending in a particle ("gun down") also matches with the object between
("gunned him down"). An entry written with a leading ``=`` is taken literally,
uninflected. A Chinese entry is characters, with ``(a|b)`` alternatives (so
resultative compounds are written "(打|刺|捅|砍)死") and ``·`` where an aspect
particle may stand ("结成·同盟": 结成同盟, 结成了同盟).

An idiom that means an action is a phrase of its class ("bury the hatchet" in
@ally, "冰释前嫌" too), not a special case. Classes are expanded and compiled once
per process (and once per server), not per event: the shipped classes are read
expanded from ``classes.json``, generated from ``classes.toml`` and the English
table of :mod:`narrative.diffusers.inflect` (``python -m narrative.diffusers.classes``
rewrites it; a test keeps it equal to what that makes), so an event pays neither the
expansion nor the inflection lexicon for them.
"""

from __future__ import annotations

import itertools
import json
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, NamedTuple

from narrative import safejson

CLASS_NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
# particles that may follow the object ("gunned him down"); "in", "on", "over" ... are prepositions
# as often ("hid the ring in the library"), so an entry spells those out with "_"
PARTICLES = frozenset({"up", "down", "out", "off", "away", "back", "aside", "together", "apart"})
MAX_ENTRY_WORDS = 8
MAX_ENTRY_FORMS = 1024
MAX_ENTRY_CHARS = 300
_EN_TOKEN = re.compile(r"^[a-z0-9][a-z0-9'-]*$")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
_ASPECT = ("", "了", "过", "着")


class Phrase(NamedTuple):
    """One English form of an entry: its words (lowercase), and for a separable phrasal verb
    the particle that must follow within a few words ("finished Cook off": ``("off",)``).
    (A named tuple: thousands are made per process.)"""

    tokens: tuple[str, ...]
    particle: tuple[str, ...] = ()
    base: bool = False  # the verb stands in its base form ("take", not "took")
    past: bool = False  # the verb is a past form or participle ("took", "taken"): for ``@class.ed``


@dataclass
class WordClass:
    name: str
    en: set[Phrase] = field(default_factory=set)
    zh: set[str] = field(default_factory=set)
    entries: int = 0


def _alternatives(token: str, entry: str) -> list[str]:
    if token.startswith("("):
        if not token.endswith(")") or token.count("(") != 1 or token.count(")") != 1:
            raise ValueError(f"class entry {entry!r}: '(' is never closed, or brackets nest")
        alts = [a.strip() for a in token[1:-1].split("|")]
        if any(not a for a in alts):
            raise ValueError(f"class entry {entry!r}: empty alternative in {token}")
        return alts
    if any(c in token for c in "()|"):
        raise ValueError(f"class entry {entry!r}: alternatives are written (a|b)")
    return [token]


def _tokens(entry: str) -> list[str]:
    """The words of an entry, a bracketed group of alternatives counting as one."""
    out: list[str] = []
    for m in re.finditer(r"\([^()]*\)|[^\s()]+|[()]", entry):
        out.append(m.group(0))
    return out


def parse_entry(entry: str, forms: Any = None) -> tuple[set[Phrase], set[str]]:
    """The English phrases and Chinese words of one class entry; ``ValueError`` says what is wrong."""
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError("a class entry is a non-empty string")
    text = " ".join(entry.strip().split())
    if any(c in text for c in "{}*@\\"):
        raise ValueError(f"class entry {entry!r}: '{{', '}}', '*' and '@' belong in patterns, "
                         "not in a class")
    if len(text) > MAX_ENTRY_CHARS:
        raise ValueError(f"class entry {entry!r}: longer than {MAX_ENTRY_CHARS} characters")
    if _CJK.search(text):
        return set(), _chinese(text, entry)
    return _english(text, entry, forms or verb_forms), set()


def _chinese(text: str, entry: str) -> set[str]:
    if re.search(r"[A-Za-z~]", text):
        raise ValueError(f"class entry {entry!r}: mixes Chinese and Latin letters")
    if " " in text or "_" in text:
        raise ValueError(f"class entry {entry!r}: a Chinese entry has no spaces and no '_'")
    pieces: list[list[str]] = []
    for m in re.finditer(r"\([^()]*\)|·|[^()·]+|[()]", text):
        tok = m.group(0)
        if tok == "·":
            pieces.append(list(_ASPECT))
        elif tok in "()":
            raise ValueError(f"class entry {entry!r}: '(' is never closed, or brackets nest")
        else:
            pieces.append(_alternatives(tok, entry) if tok.startswith("(") else [tok])
    out = {"".join(p) for p in itertools.product(*pieces)}
    if len(out) > MAX_ENTRY_FORMS:
        raise ValueError(f"class entry {entry!r}: more than {MAX_ENTRY_FORMS} forms")
    return out


def _english(text: str, entry: str, forms: Any) -> set[Phrase]:
    literal = text.startswith("=")
    tokens = _tokens(text[1:].strip() if literal else text.lower())
    if not tokens:
        raise ValueError(f"class entry {entry!r}: no words")
    if len(tokens) > MAX_ENTRY_WORDS:
        raise ValueError(f"class entry {entry!r}: more than {MAX_ENTRY_WORDS} words")
    if tokens.count("_") > 1 or tokens[0] == "_" or tokens[-1] == "_":
        raise ValueError(f"class entry {entry!r}: '_' stands once, between the verb and its particle")
    split = tokens.index("_") if "_" in tokens else None
    marked = [i for i, tok in enumerate(t for t in tokens if t != "_") if tok.startswith("~")]
    if literal and marked:
        raise ValueError(f"class entry {entry!r}: '=' takes the words as they are; no '~' in it")
    if len(marked) > 1 or any(tok.count("~") > 1 or ("~" in tok and not tok.startswith("~"))
                              for tok in tokens):
        raise ValueError(f"class entry {entry!r}: '~' marks the one word to inflect, at its start")
    verb_at = marked[0] if marked else 0
    slots: list[list[str]] = []
    for tok in tokens:
        if tok == "_":
            continue
        alts = _alternatives(tok.removeprefix("~"), entry)
        words = [a.lower() for a in alts]
        for w in words:
            if not all(_EN_TOKEN.match(p) for p in w.replace("’", "'").split()):
                raise ValueError(f"class entry {entry!r}: {w!r} is not an English word")
        slots.append(words)
    first = slots[verb_at]
    if literal:
        verb_options = [(w, False) for w in first]
    else:
        verb_options = []
        for lemma in first:
            if " " in lemma or not re.match(r"^[a-z][a-z'-]*$", lemma):
                raise ValueError(f"class entry {entry!r}: {lemma!r} is not a verb to inflect "
                                 "(write '=' first for a phrase taken literally)")
            try:
                got = forms(lemma)
            except ValueError as exc:
                raise ValueError(f"class entry {entry!r}: {exc}") from None
            verb_options.extend((f, f == lemma) for f in got)
    out: set[Phrase] = set()
    rest = [*slots[:verb_at], *slots[verb_at + 1:]]
    first_lemmas = set(first)
    for (verb, base), others in itertools.product(verb_options, itertools.product(*rest)):
        parts: list[str] = [*others[:verb_at], verb, *others[verb_at:]]
        toks = tuple(w for part in parts for w in part.split())
        past = not literal and _is_past(verb, first_lemmas)
        if split is None:
            out.add(Phrase(toks, (), base, past))
            if len(toks) == 2 and toks[-1] in PARTICLES:
                out.add(Phrase(toks[:-1], (toks[-1],), base, past))  # "gunned him down"
        else:
            cut = sum(len(p.split()) for p in parts[:split])
            out.add(Phrase(toks[:cut], toks[cut:], base, past))
        if len(out) > MAX_ENTRY_FORMS:
            raise ValueError(f"class entry {entry!r}: more than {MAX_ENTRY_FORMS} forms")
    return out


def _is_past(form: str, lemmas: set[str]) -> bool:
    """Whether ``form`` of one of ``lemmas`` is a past form or participle (not base, -s, -ing)."""
    if form in lemmas or form.endswith("ing"):
        return False
    return not any(form in (lemma + "s", lemma + "es", lemma[:-1] + "ies") for lemma in lemmas)


# --- the forms of English verbs -----------------------------------------------------------

@lru_cache(maxsize=1)
def _compiled() -> dict[str, Any]:
    """``classes.json``: the shipped classes expanded, and the forms of their verbs, generated
    from ``classes.toml`` and the English table (``python -m narrative.diffusers.classes``)."""
    try:
        text = resources.files("narrative.diffusers").joinpath("classes.json").read_text("utf-8")
    except OSError:
        return {}
    data: dict[str, Any] = safejson.loads(text)
    return data


def _shipped_forms() -> dict[str, list[str]]:
    forms: dict[str, list[str]] = _compiled().get("forms", {})
    return forms


@lru_cache(maxsize=8192)
def verb_forms(lemma: str) -> tuple[str, ...]:
    """Every form of an English verb, the lemma first: from the shipped table when it has the
    verb, else from :func:`narrative.diffusers.inflect.verb_forms`. A hyphenated verb is
    inflected on its last part ("pistol-whip": pistol-whipped)."""
    known = _shipped_forms().get(lemma)
    if known is not None:
        return tuple(known)
    return _computed_forms(lemma)


def _computed_forms(lemma: str) -> tuple[str, ...]:
    from narrative.diffusers import inflect

    head, dash, last = lemma.rpartition("-")
    if dash and head and last:
        return tuple(dict.fromkeys([lemma, *(f"{head}-{f}" for f in inflect.verb_forms(last))]))
    return inflect.verb_forms(lemma)


# --- the table ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ClassSpec:
    """One class as a file writes it: entries, in either language."""

    name: str
    entries: tuple[str, ...]


@lru_cache(maxsize=1)
def shipped_specs() -> tuple[ClassSpec, ...]:
    """The classes narr ships (``classes.toml``)."""
    text = resources.files("narrative.diffusers").joinpath("classes.toml").read_text("utf-8")
    return specs_of(tomllib.loads(text).get("classes", {}), "classes.toml")


def specs_of(raw: Any, source: str) -> tuple[ClassSpec, ...]:
    """Class specs from a ``[classes]`` table (already checked by :func:`check_table`)."""
    out = []
    for name, value in (raw or {}).items():
        entries = [*value.get("en", []), *value.get("zh", [])] if isinstance(value, dict) else value
        out.append(ClassSpec(name, tuple(entries)))
    return tuple(out)


def check_table(raw: Any) -> list[tuple[str, str, str]]:
    """Problems of a ``[classes]`` table: ``(class, entry, message)``, empty when it is good."""
    problems: list[tuple[str, str, str]] = []
    if not isinstance(raw, dict):
        return [("", "", "[classes] is a table of class names")]
    for name, value in raw.items():
        if not CLASS_NAME.match(str(name)):
            problems.append((str(name), "", f"class name {name!r}: lowercase letters, digits and '-'"))
            continue
        if isinstance(value, dict):
            extra = set(value) - {"en", "zh", "summary"}
            if extra:
                problems.append((name, "", f"class {name!r}: unknown key(s) {', '.join(sorted(extra))} "
                                           "(en, zh, summary)"))
            entries = [*value.get("en", []), *value.get("zh", [])]
            if not all(isinstance(value.get(k, []), list) for k in ("en", "zh")):
                problems.append((name, "", f"class {name!r}: en and zh are lists of strings"))
                continue
        elif isinstance(value, list):
            entries = value
        else:
            problems.append((name, "", f"class {name!r}: a list of entries or a table with en/zh"))
            continue
        for entry in entries:
            try:
                parse_entry(entry)
            except ValueError as exc:
                problems.append((name, str(entry), f"class {name!r}: {exc}"))
    return problems


class ClassTable:
    """Every class with its expanded phrases; build with :func:`table`.

    The shipped classes come expanded from ``classes.json`` when it was generated from
    the ``classes.toml`` at hand (expanding 2,400 entries takes about 0.1 s, once per
    process; reading them, a few milliseconds); a world's additions are expanded here.
    """

    def __init__(self, specs: tuple[ClassSpec, ...], shipped: int = 0, forms: Any = None) -> None:
        self.classes: dict[str, WordClass] = {}
        if shipped:  # the shipped classes, expanded already (``specs`` holds only the world's)
            for name, data in _compiled()["classes"].items():
                cls = self.classes.setdefault(name, WordClass(name))
                cls.en = {_phrase(row) for row in data["en"]}
                cls.zh = set(data["zh"])
                cls.entries = data["entries"]
        for spec in specs:
            cls = self.classes.setdefault(spec.name, WordClass(spec.name))
            for entry in spec.entries:
                en, zh = parse_entry(entry, forms)
                cls.en |= en
                cls.zh |= zh
                cls.entries += 1

    def __contains__(self, name: object) -> bool:
        return name in self.classes

    def get(self, name: str) -> WordClass:
        return self.classes[name]

    @property
    def names(self) -> list[str]:
        return sorted(self.classes)


def _phrase(row: str) -> Phrase:
    words, particle, flags = row.split("\t")
    return Phrase(tuple(words.split(" ")), tuple(particle.split(" ")) if particle else (),
                  "b" in flags, "p" in flags)


def _row(p: Phrase) -> str:
    return f"{' '.join(p.tokens)}\t{' '.join(p.particle)}\t{'b' if p.base else ''}{'p' if p.past else ''}"


@lru_cache(maxsize=1)
def _source_hash() -> str:
    import zlib

    text = resources.files("narrative.diffusers").joinpath("classes.toml").read_bytes()
    return f"crc32:{zlib.crc32(text):08x}:{len(text)}"


def current() -> bool:
    """Whether ``classes.json`` was generated from the ``classes.toml`` at hand."""
    return bool(_compiled()) and _compiled().get("source") == _source_hash()


def table(extra: tuple[ClassSpec, ...] = ()) -> ClassTable:
    """The shipped classes with a world's additions.

    narr's own table is built once per process; one with a world's additions is built
    once per set of its rule files and kept with them
    (:class:`narrative.diffusers.rulefile.RuleSet`).
    """
    if not extra:
        return _shipped_table()
    return _build_table(extra)


@lru_cache(maxsize=1)
def _shipped_table() -> ClassTable:
    return _build_table(())


def _build_table(extra: tuple[ClassSpec, ...]) -> ClassTable:
    if current():
        return ClassTable(extra, shipped=1)
    return ClassTable((*shipped_specs(), *extra), shipped=0)


def shipped_names() -> set[str]:
    """The names of the shipped classes."""
    if current():
        return set(_compiled()["classes"])
    return {s.name for s in shipped_specs()}


def compiled_json(extra_lemmas: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    """The text of ``classes.json`` for the ``classes.toml`` at hand."""
    lemmas = sorted(shipped_lemmas() | set(extra_lemmas))
    forms = {lemma: list(_computed_forms(lemma)) for lemma in lemmas}
    # the forms as computed now, not as an earlier classes.json has them: the file is made
    # from the table alone, so making it twice gives the same file
    fresh = ClassTable(shipped_specs(), forms=lambda lemma: tuple(forms.get(lemma) or _computed_forms(lemma)))
    classes_out = {name: {"entries": cls.entries, "en": sorted(_row(p) for p in cls.en),
                          "zh": sorted(cls.zh)} for name, cls in sorted(fresh.classes.items())}
    return json.dumps({"source": _source_hash(), "forms": forms, "classes": classes_out},
                      ensure_ascii=False, indent=0, sort_keys=True) + "\n"


def rule_file_lemmas() -> set[str]:
    """The verbs written with ``~`` in the rule files narr ships (the sample world's, the generic ones)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out: set[str] = set()
    for path in [*(root.parent / "sample-world" / "rules").glob("*.toml"),
                 *(root / "_sample_world" / "rules").glob("*.toml"),
                 *(root / "rules_generic").glob("*/*.toml")]:
        out |= set(re.findall(r"~([a-z][a-z-]*)", path.read_text(encoding="utf-8")))
    return out


def shipped_lemmas() -> set[str]:
    """The English verbs the shipped classes inflect."""
    lemmas: set[str] = set()

    def collect(lemma: str) -> tuple[str, ...]:
        lemmas.add(lemma)
        return (lemma,)

    for spec in shipped_specs():
        for entry in spec.entries:
            if not _CJK.search(entry) and not entry.strip().startswith("="):
                parse_entry(entry, collect)
    return lemmas
