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
per process (and once per server), not per event: the forms of the verbs of the
shipped classes are read from ``classforms.json``, generated from lemminflect's
lexicon (``python -m narrative.diffusers.classes`` rewrites it; a test keeps it
current), so an event pays no inflection lexicon for them.
"""

from __future__ import annotations

import itertools
import json
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

CLASS_NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
PARTICLES = frozenset({"up", "down", "out", "off", "away", "in", "back", "over", "on", "around",
                       "round", "aside", "through", "together", "apart"})
MAX_ENTRY_WORDS = 8
MAX_ENTRY_FORMS = 1024
MAX_ENTRY_CHARS = 300
_EN_TOKEN = re.compile(r"^[a-z0-9][a-z0-9'-]*$")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
_ASPECT = ("", "了", "过", "着")


@dataclass(frozen=True)
class Phrase:
    """One English form of an entry: its words (lowercase), and for a separable phrasal verb
    the particle that must follow within a few words ("finished Cook off": ``("off",)``)."""

    tokens: tuple[str, ...]
    particle: tuple[str, ...] = ()
    base: bool = False  # the verb stands in its base form ("take", not "took")


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
    if any(c in text for c in "{}~*@\\"):
        raise ValueError(f"class entry {entry!r}: '{{', '}}', '~', '*' and '@' belong in patterns, "
                         "not in a class")
    if len(text) > MAX_ENTRY_CHARS:
        raise ValueError(f"class entry {entry!r}: longer than {MAX_ENTRY_CHARS} characters")
    if _CJK.search(text):
        return set(), _chinese(text, entry)
    return _english(text, entry, forms or verb_forms), set()


def _chinese(text: str, entry: str) -> set[str]:
    if re.search(r"[A-Za-z]", text):
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
    slots: list[list[str]] = []
    for tok in tokens:
        if tok == "_":
            continue
        alts = _alternatives(tok, entry)
        words = [w.lower() for a in alts for w in [a]]
        for w in words:
            if not all(_EN_TOKEN.match(p) for p in w.replace("’", "'").split()):
                raise ValueError(f"class entry {entry!r}: {w!r} is not an English word")
        slots.append(words)
    first = slots[0]
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
    rest = slots[1:]
    for (verb, base), others in itertools.product(verb_options, itertools.product(*rest)):
        parts: list[str] = [verb, *others]
        toks = tuple(w for part in parts for w in part.split())
        if split is None:
            out.add(Phrase(toks, (), base))
            if len(toks) == 2 and toks[-1] in PARTICLES:
                out.add(Phrase(toks[:-1], (toks[-1],), base))  # "gunned him down"
        else:
            cut = sum(len(p.split()) for p in parts[:split])
            out.add(Phrase(toks[:cut], toks[cut:], base))
        if len(out) > MAX_ENTRY_FORMS:
            raise ValueError(f"class entry {entry!r}: more than {MAX_ENTRY_FORMS} forms")
    return out


# --- the forms of English verbs -----------------------------------------------------------

@lru_cache(maxsize=1)
def _shipped_forms() -> dict[str, tuple[str, ...]]:
    try:
        text = resources.files("narrative.diffusers").joinpath("classforms.json").read_text("utf-8")
    except OSError:
        return {}
    return {k: tuple(v) for k, v in json.loads(text).items()}


@lru_cache(maxsize=8192)
def verb_forms(lemma: str) -> tuple[str, ...]:
    """Every form of an English verb, the lemma first: from the shipped table when it has the
    verb, else from :func:`narrative.diffusers.inflect.verb_forms`. A hyphenated verb is
    inflected on its last part ("pistol-whip": pistol-whipped)."""
    known = _shipped_forms().get(lemma)
    if known is not None:
        return known
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
    """Every class with its expanded phrases; build with :func:`table`."""

    def __init__(self, specs: tuple[ClassSpec, ...]) -> None:
        self.classes: dict[str, WordClass] = {}
        for spec in specs:
            cls = self.classes.setdefault(spec.name, WordClass(spec.name))
            for entry in spec.entries:
                en, zh = parse_entry(entry)
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


@lru_cache(maxsize=16)
def table(extra: tuple[ClassSpec, ...] = ()) -> ClassTable:
    """The shipped classes with a world's additions (cached: compiled once per process)."""
    return ClassTable((*shipped_specs(), *extra))


def _write_forms() -> int:
    """Regenerate ``classforms.json`` from the shipped classes (and the verbs of ``~`` in the
    sample world's and the generic rules' patterns)."""
    from pathlib import Path

    here = Path(__file__).resolve().parent
    lemmas = sorted(shipped_lemmas())
    table_out = {lemma: list(_computed_forms(lemma)) for lemma in lemmas}
    (here / "classforms.json").write_text(
        json.dumps(table_out, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"classforms.json: {len(table_out)} verbs")
    return 0


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


if __name__ == "__main__":
    raise SystemExit(_write_forms())
