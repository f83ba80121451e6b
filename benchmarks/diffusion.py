"""How well the offline ``rules`` diffuser turns prose into changes, on labelled sets.

The sets, reported separately because they measure different things:

- **the repository's set**, ``tests/data/diffusion_eval.jsonl``: sentences written for
  the sample world beside the cue lists and rules (plain actions, two actions,
  pronouns, dropped subjects, contrast, and each way a clause can assert nothing).
  It is a regression floor. Every sentence runs as a dry-run event on one fresh
  sample world through the library (a dry run changes nothing, so each sees the
  same world).
- **the frozen set**, ``tests/data/prose_eval/``: prose written by someone who never
  read the rules, the cues or the diffusers, on a world of its own made with
  ``narr init --rules both`` (``setup.txt`` is replayed through the real ``narr``
  command on a fresh directory). For each sentence its ``before`` events are
  recorded first on a fresh copy of that world, as content-only events with no
  changes (the ``explicit`` diffuser), then the sentence runs as a dry-run ``rules``
  event. What it measures is how the rules do on prose nobody wrote for them.
- **the held-out set**, ``tests/data/prose_heldout/``: the same kind of set in another
  world, written after the rules were last changed and never used to change them. The
  frozen set has since been read to fix rules; the held-out set is the fair measure.
- **the trial set**, ``tests/data/prose_trial/``: the same kind of set on a small world of its
  own, written from the wrong writes a user reported (modal verbs, dreams, imperatives,
  leaving read as arriving, figures of speech that kill, ...) and their near twins, and
  frozen before the rules were changed for them.
- **the fresh set**, ``tests/data/prose_fresh/``: the same kind of set on another world of its
  own (a polar station), written before any rule was changed for it: leaving and arriving in
  one sentence in both languages, setting off for a place, items, knowing, suspecting and
  trusting, deaths real and figurative, and the frames around them (modals, dreams, plans,
  reported speech, conditionals, questions, quotations).
- **the fifth set**, ``tests/data/prose_court/`` and ``tests/data/prose_ward/``: two worlds of
  their own in genres no other set has (a Ming court intrigue, a hospital on the night of a
  ferry disaster), mostly Chinese, written as novelists write and frozen before any rule was
  changed for them: wounds told by the body, heals, death euphemisms, destruction, Chinese
  give and take constructions, frames that run on past a comma, the future, summons, names
  inside names, and changes the world contradicts. Each world is reported on its own, then
  both together.

A *wrong write* is a change made that the sentence does not say happened (or
with another value): the failure that matters, since it corrupts the story
silently. A *miss* is an expected change left out: the user adds it with
``--set``. A sentence is *exact* when the changes are exactly the expected ones.
A change *held back* (the rules matched under a structure they do not know, and
ask instead of writing) is no write: it counts as a miss when the change was
expected.

    python benchmarks/diffusion.py                  # every set: tables, then every sentence not exact
    python benchmarks/diffusion.py --only frozen --quiet
    python benchmarks/diffusion.py --only heldout --quiet
    python benchmarks/diffusion.py --only trial
    python benchmarks/diffusion.py --only fresh
    python benchmarks/diffusion.py --only fifth
    python benchmarks/diffusion.py --cost           # what a one-sentence dry run costs on the sample world
    python benchmarks/diffusion.py --long           # long texts: one large event, narr audit of a chapter

``--cost`` times ``narr event --dry-run SENTENCE`` on a fresh sample world, as a
fresh process each time (what a writer pays, start-up and the loading of rules
and word classes included) and in-process after a warm-up (the diffuser alone),
alternating an English and a Chinese sentence; medians.

``--long`` times what grows with the text: one dry-run event of about 100 KB and
one of about 250 KB of name-dense prose (the repository's sentences repeated),
and ``narr audit`` of a chapter of 2,000 sentences, on the sample world, in-process.

``--diffuser llm --base-url URL`` runs the same sets through the ``llm`` diffuser and a
served model (Ollama, llama.cpp's ``llama-server``, llama-cpp-python, LM Studio, vLLM, a
hosted API; ``--model`` names it, the rest of ``[llm]`` comes from your narr config) and
prints the same figures, each sentence's latency being the model's, plus the prompt
tokens narr sent (its estimate, and the server's own count where it gives one). An
event the model fails is counted with no changes, its error among the notes::

    python benchmarks/diffusion.py --only trial --diffuser llm --base-url http://127.0.0.1:8080/v1
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative.api import EventRequest, init_world, open_world, run_event

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
EVAL_SET = DATA / "diffusion_eval.jsonl"
FROZEN = DATA / "prose_eval"
HELDOUT = DATA / "prose_heldout"
TRIAL = DATA / "prose_trial"
FRESH = DATA / "prose_fresh"
COURT = DATA / "prose_court"
WARD = DATA / "prose_ward"

Change = tuple[str, str, str]  # target, field, value as canonical JSON


@dataclass
class Outcome:
    text: str
    category: str
    lang: str
    expected: set[Change]
    actual: set[Change]
    notes: list[str]
    ms: float
    held: int = 0  # changes held back for the user to accept
    prompt_tokens: int | None = None  # the llm diffuser's prompt, as narr estimates it
    counted_tokens: int | None = None  # the same prompt, as the server counted it
    failed: bool = False  # the diffuser failed the event (the llm diffuser's model, say)

    @property
    def wrong(self) -> set[Change]:
        return self.actual - self.expected

    @property
    def missed(self) -> set[Change]:
        return self.expected - self.actual

    @property
    def exact(self) -> bool:
        return self.actual == self.expected


def _split(rows: list[Outcome]) -> str:
    """``total (en / zh)`` of exact sentences."""
    en = sum(1 for o in rows if o.exact and o.lang == "en")
    zh = sum(1 for o in rows if o.exact and o.lang == "zh")
    return f"{en + zh} ({en} / {zh})"


def _count(rows: list[Outcome], what: str) -> str:
    en = sum(len(getattr(o, what)) for o in rows if o.lang == "en")
    zh = sum(len(getattr(o, what)) for o in rows if o.lang == "zh")
    return f"{en + zh} ({en} / {zh})" if en + zh else "0"


@dataclass
class Report:
    name: str = ""
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def exact(self) -> int:
        return sum(1 for o in self.outcomes if o.exact)

    @property
    def wrong_writes(self) -> int:
        return sum(len(o.wrong) for o in self.outcomes)

    @property
    def misses(self) -> int:
        return sum(len(o.missed) for o in self.outcomes)

    @property
    def held(self) -> int:
        return sum(o.held for o in self.outcomes)

    @property
    def rate(self) -> float:
        return self.exact / len(self.outcomes) if self.outcomes else 0.0

    @property
    def median_ms(self) -> float:
        return statistics.median(o.ms for o in self.outcomes) if self.outcomes else 0.0

    def table(self) -> str:
        """Per category: sentences, exact, wrong writes, misses (Markdown), each ``all (en / zh)``."""
        cats: dict[str, list[Outcome]] = {}
        for o in self.outcomes:
            cats.setdefault(o.category, []).append(o)
        lines = ["| category | sentences (en / zh) | with no change | exact (en / zh) "
                 "| wrong writes (en / zh) | misses (en / zh) |",
                 "| --- | ---: | ---: | ---: | ---: | ---: |"]

        def row(label: str, rows: list[Outcome]) -> str:
            en = sum(1 for o in rows if o.lang == "en")
            return (f"| {label} | {len(rows)} ({en} / {len(rows) - en}) | "
                    f"{sum(1 for o in rows if not o.expected)} | {_split(rows)} | "
                    f"{_count(rows, 'wrong')} | {_count(rows, 'missed')} |")

        for cat, rows in cats.items():
            lines.append(row(cat, rows))
        lines.append(row("**all**", self.outcomes).replace(
            f"| {_split(self.outcomes)} |", f"| {_split(self.outcomes)}, {100 * self.rate:.1f}% |"))
        return "\n".join(lines)

    def summary(self) -> str:
        times = sorted(o.ms for o in self.outcomes)
        return (f"{self.name}: {len(self.outcomes)} sentences, {self.exact} exact "
                f"({100 * self.rate:.1f}%), {self.wrong_writes} wrong writes, {self.misses} misses, "
                f"{self.held} changes held back; dry run median {self.median_ms:.1f} ms, "
                f"max {times[-1]:.1f} ms" + self.prompt_summary())

    def prompt_summary(self) -> str:
        """The llm diffuser's prompts: narr's estimate, the server's count, events it failed."""
        sizes = sorted(o.prompt_tokens for o in self.outcomes if o.prompt_tokens is not None)
        if not sizes:
            return ""
        counted = sorted(o.counted_tokens for o in self.outcomes if o.counted_tokens is not None)
        out = (f"; prompt tokens median {statistics.median(sizes):.0f}, max {sizes[-1]} "
               "(narr's estimate)")
        if counted:
            out += f", median {statistics.median(counted):.0f}, max {counted[-1]} (the server's count)"
        failed = sum(1 for o in self.outcomes if o.failed)
        return out + (f"; {failed} events failed" if failed else "")


def _value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def load(path: Path = EVAL_SET) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _outcome(world: Any, row: dict[str, Any], diffuser: Any = None) -> Outcome:
    """One sentence as a dry-run event on ``world``, compared with its labels: the ``rules``
    diffuser's, or ``diffuser``'s (an :class:`LLMDiffuser`) when one is given."""
    started = time.perf_counter()
    if diffuser is not None:
        return _llm_outcome(world, row, diffuser)
    result = run_event(world, EventRequest(content=row["text"], diffuser="rules"), dry_run=True)
    ms = (time.perf_counter() - started) * 1000
    actual = _changes(result)
    expected = {(e["target"], e["field"], _value(e["value"])) for e in row["expect"]}
    proposal = result.proposal
    notes = proposal.notes if proposal else []
    held = len(getattr(proposal, "held", None) or [])
    return Outcome(row["text"], row["category"], row.get("lang", "en"), expected, actual, notes,
                   ms, held)


def _llm_outcome(world: Any, row: dict[str, Any], diffuser: Any) -> Outcome:
    """One sentence through the llm diffuser: a failed event counts as one with no changes."""
    from narrative.errors import NarrError

    started = time.perf_counter()
    notes: list[str] = []
    actual: set[Change] = set()
    failed = False
    diffuser.last = None
    try:
        result = run_event(world, EventRequest(content=row["text"], diffuser="llm"), dry_run=True,
                           diffuser=diffuser)
    except NarrError as exc:
        failed = True
        notes.append(f"failed: {exc.message}")
    else:
        actual = _changes(result)
        notes = result.proposal.notes if result.proposal else []
    ms = (time.perf_counter() - started) * 1000
    expected = {(e["target"], e["field"], _value(e["value"])) for e in row["expect"]}
    usage = diffuser.last
    return Outcome(row["text"], row["category"], row.get("lang", "en"), expected, actual, notes, ms,
                   prompt_tokens=usage.prompt_tokens if usage else None,
                   counted_tokens=usage.counted_prompt_tokens if usage else None, failed=failed)


def _changes(result: Any) -> set[Change]:
    """What a dry-run event would write, as (target, field, value) triples."""
    actual: set[Change] = set()
    for c in result.record.diffusions:
        if c.field == "":
            if "lifecycle" in result.expired.get(c.target, ""):
                continue  # an event-lifecycle node ends with any event: not the sentence's doing
            actual.add((c.target, "", _value("expired" if c.has_old else "created")))
        else:
            actual.add((c.target, c.field, _value(c.new_value if c.has_new else None)))
    return actual


def evaluate(path: Path = EVAL_SET, scratch: Path | None = None, diffuser: Any = None) -> Report:
    """Run every sentence of the repository's set as a dry-run event on a fresh sample world
    (the ``rules`` diffuser's, or ``diffuser``'s)."""
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        root = Path(tmp) / "world"
        init_world(root, sample=True)
        world = open_world(root)
        report = Report("repository set (sample world)" + _through(diffuser))
        for row in load(path):
            report.outcomes.append(_outcome(world, row, diffuser))
        return report


def _through(diffuser: Any) -> str:
    if diffuser is None:
        return ""
    return f", through the llm diffuser ({diffuser.settings.model or diffuser.settings.base_url})"


def setup_commands(directory: Path = FROZEN) -> list[list[str]]:
    """The ``narr`` commands of ``setup.txt``, with ``--create`` paths made absolute."""
    out = []
    for line in (directory / "setup.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        args = shlex.split(line)
        for i, arg in enumerate(args[:-1]):
            if arg == "--create":
                args[i + 1] = str((directory / args[i + 1]).resolve())
        out.append(args)
    return out


def build_frozen_world(parent: Path, directory: Path = FROZEN, rules: str | None = None) -> Path:
    """Replay ``setup.txt`` through the real ``narr`` command in ``parent``; the world's root.

    ``rules`` (``en``, ``zh``) replaces the generic rule set ``init`` asks for.
    """
    from click.testing import CliRunner

    from narrative.cli import main

    commands = setup_commands(directory)
    first, rest = commands[0], commands[1:]
    if first[0] != "init":
        raise SystemExit(f"{directory}/setup.txt: the first command is not 'init'")
    if rules is not None and "--rules" in first:
        first = list(first)
        first[first.index("--rules") + 1] = rules
    runner = CliRunner()

    def narr(cwd: Path, args: list[str]) -> None:
        result = runner.invoke(main, ["-C", str(cwd), *args], catch_exceptions=False)
        if result.exit_code != 0:
            raise SystemExit(f"narr {shlex.join(args)} exited {result.exit_code}:\n"
                             f"{result.stdout}{result.stderr}")

    narr(parent, first)
    root = parent / first[1]
    for args in rest:
        narr(root, args)
    for args in (["check"], ["status", "--json"]):
        narr(root, args)
    return root


def _title(directory: Path) -> str:
    """The set's name and its world's, from the README beside it."""
    kind = {HELDOUT.resolve(): "held-out set", TRIAL.resolve(): "trial set",
            FRESH.resolve(): "fresh set", COURT.resolve(): "fifth set",
            WARD.resolve(): "fifth set"}.get(
        directory.resolve(), "frozen set")
    readme = directory / "README.md"
    world = ""
    if readme.is_file():
        for line in readme.read_text(encoding="utf-8").splitlines():
            if line.startswith("## The world:"):
                world = line.removeprefix("## The world:").strip().strip("*")
                break
    return f"{kind}, {world}" if world else f"{kind}, {directory.name}"


def evaluate_frozen(directory: Path = FROZEN, scratch: Path | None = None,
                    rules: str | None = None, diffuser: Any = None) -> Report:
    """Run the frozen set: each sentence on a fresh copy of the world ``setup.txt`` builds.

    With ``rules`` ``en`` or ``zh``, the world gets that generic rule set instead of
    ``both`` and only the sentences of that language run.
    """
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        base = build_frozen_world(Path(tmp), directory, rules)
        shared = open_world(base)
        report = Report(f"{_title(directory)} (narr init --rules {rules or 'both'})" + _through(diffuser))
        for n, row in enumerate(load(directory / "sentences.jsonl")):
            if rules in ("en", "zh") and row.get("lang") != rules:
                continue
            world = shared
            if row.get("before"):
                # A dry run writes nothing, so a sentence without earlier events may share the
                # base world; one with them gets its own copy to record them on.
                copy = Path(tmp) / f"copy-{n}"
                shutil.copytree(base, copy, symlinks=True)
                world = open_world(copy)
                for earlier in row["before"]:
                    run_event(world, EventRequest(content=earlier, diffuser="explicit"))
            report.outcomes.append(_outcome(world, row, diffuser))
            if world is not shared:
                shutil.rmtree(Path(tmp) / f"copy-{n}")
        return report


def _details(report: Report) -> list[str]:
    lines = []
    for o in report.outcomes:
        if o.exact:
            continue
        lines.append(f"\n[{o.category}, {o.lang}] {o.text}")
        lines.extend(f"  WRONG  {c[0]} {c[1]} = {c[2]}" for c in sorted(o.wrong))
        lines.extend(f"  missed {c[0]} {c[1]} = {c[2]}" for c in sorted(o.missed))
        lines.extend(f"  # {n}" for n in o.notes)
    return lines


COST_SENTENCES = ("Lin Yuan hurries down the mountain path to the ferry, his sleeves soaked through.",
                  "苏晴冒雨走进了藏经阁，从老周手里接过了灯笼。")


def cost(rounds: int = 15, scratch: Path | None = None, against: Path | None = None) -> dict[str, float]:
    """Medians (ms) of a one-sentence dry-run ``rules`` event on the sample world.

    With ``against`` (another checkout of narr), its fresh processes alternate with this
    one's on a copy of the same world (``against_ms``): the two figures share the machine's
    load at the time.
    """
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        root = Path(tmp) / "world"
        init_world(root, sample=True)
        other = Path(tmp) / "other"
        shutil.copytree(root, other)
        # Bytecode is kept (outside the source tree), as an installed narr has it.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "narr-bench" / "pycache")
        here = str(Path(__file__).resolve().parent.parent)
        fresh: list[float] = []
        theirs: list[float] = []
        for r in range(rounds + 2):
            text = COST_SENTENCES[r % 2]
            sides = [(here, root, fresh)] + ([(str(against), other, theirs)] if against else [])
            for path, world_root, into in (sides if r % 2 else sides[::-1]):
                run_env = {**env, "PYTHONPATH": path}
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "narrative", "-C", str(world_root), "event",
                                "--dry-run", "--diffuser", "rules", text], check=True,
                               capture_output=True, env=run_env)
                if r > 1:  # the first rounds compile the bytecode and warm the page cache
                    into.append((time.perf_counter() - started) * 1000)
        world = open_world(root)
        warm: list[float] = []
        for r in range(rounds * 4 + 1):
            started = time.perf_counter()
            run_event(world, EventRequest(content=COST_SENTENCES[r % 2], diffuser="rules"), dry_run=True)
            if r:
                warm.append((time.perf_counter() - started) * 1000)
        out = {"fresh_process_ms": statistics.median(fresh), "in_process_ms": statistics.median(warm)}
        if theirs:
            out["against_ms"] = statistics.median(theirs)
        return out


def long_texts(scratch: Path | None = None, sentences: int = 2000) -> dict[str, float]:
    """Seconds for a large dry-run event and for ``audit`` of a chapter (sample world)."""
    from narrative.api import audit

    rows = [r["text"] for r in load(EVAL_SET)]
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        root = Path(tmp) / "world"
        init_world(root, sample=True)
        world = open_world(root)
        for size in (100_000, 250_000):
            text, k = [], 0
            while sum(len(t) + 1 for t in text) < size:
                text.append(rows[k % len(rows)])
                k += 1
            content = " ".join(text)
            started = time.perf_counter()
            request = EventRequest(content=content, diffuser="rules")
            if "large" in EventRequest.model_fields:
                request.large = True  # type: ignore[attr-defined]
            run_event(world, request, dry_run=True)
            out[f"event_{len(content.encode()) // 1000}kb_s"] = time.perf_counter() - started
        chapter = " ".join(rows[k % len(rows)] for k in range(sentences))
        started = time.perf_counter()
        report = audit(world, chapter)
        out[f"audit_{report.sentences}_sentences_s"] = time.perf_counter() - started
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("repo", "frozen", "heldout", "trial", "fresh", "fifth"),
                        help="run one set only")
    parser.add_argument("--worlds", action="store_true",
                        help="run the frozen set also on worlds made with --rules en and --rules zh "
                             "(each with the sentences of its language)")
    parser.add_argument("--set", type=Path, default=EVAL_SET,
                        help="the repository's labelled sentences (JSONL)")
    parser.add_argument("--frozen", type=Path, default=FROZEN,
                        help="the frozen set's directory (setup.txt, nodes/, sentences.jsonl)")
    parser.add_argument("--heldout", type=Path, default=HELDOUT,
                        help="the held-out set's directory, laid out as the frozen set's")
    parser.add_argument("--trial", type=Path, default=TRIAL,
                        help="the trial set's directory, laid out as the frozen set's")
    parser.add_argument("--fresh", type=Path, default=FRESH,
                        help="the fresh set's directory, laid out as the frozen set's")
    parser.add_argument("--fifth", type=Path, nargs=2, default=(COURT, WARD), metavar="DIR",
                        help="the fifth set's two world directories, laid out as the frozen set's")
    parser.add_argument("--quiet", action="store_true", help="only the tables")
    parser.add_argument("--cost", action="store_true",
                        help="only time a one-sentence dry run on the sample world")
    parser.add_argument("--rounds", type=int, default=15, help="rounds for --cost")
    parser.add_argument("--against", type=Path,
                        help="with --cost: another checkout of narr to alternate with (before/after)")
    parser.add_argument("--long", action="store_true",
                        help="only time a large event and narr audit of 2,000 sentences")
    parser.add_argument("--diffuser", choices=("rules", "llm"), default="rules",
                        help="the diffuser the sets run through (llm: a served model, see --base-url)")
    parser.add_argument("--base-url", help="with --diffuser llm: the server, e.g. "
                                           "http://127.0.0.1:11434/v1 (else [llm] base_url)")
    parser.add_argument("--model", help="with --diffuser llm: the model to ask (else [llm] model)")
    args = parser.parse_args(argv)
    llm = _llm_diffuser(args) if args.diffuser == "llm" else None
    if args.long:
        for key, seconds in long_texts().items():
            print(f"{key}: {seconds:.1f}")
        return 0
    if args.cost:
        got = cost(args.rounds, against=args.against)
        print(f"one-sentence dry run on the sample world (median of {args.rounds}): fresh process "
              f"{got['fresh_process_ms']:.1f} ms, in-process {got['in_process_ms']:.1f} ms")
        if "against_ms" in got:
            print(f"  {args.against}, alternating with it: fresh process {got['against_ms']:.1f} ms")
        return 0
    reports = []
    if args.only in (None, "repo"):
        reports.append(evaluate(args.set, diffuser=llm))
    if args.only in (None, "frozen"):
        reports.append(evaluate_frozen(args.frozen, diffuser=llm))
        if args.worlds:
            reports += [evaluate_frozen(args.frozen, rules=lang, diffuser=llm) for lang in ("en", "zh")]
    if args.only in (None, "heldout"):
        reports.append(evaluate_frozen(args.heldout, diffuser=llm))
        if args.worlds:
            reports += [evaluate_frozen(args.heldout, rules=lang, diffuser=llm) for lang in ("en", "zh")]
    if args.only in (None, "trial"):
        reports.append(evaluate_frozen(args.trial, diffuser=llm))
    if args.only in (None, "fresh"):
        reports.append(evaluate_frozen(args.fresh, diffuser=llm))
    together = []
    if args.only in (None, "fifth"):
        worlds = [evaluate_frozen(directory, diffuser=llm) for directory in args.fifth]
        reports += worlds
        together.append(Report("fifth set, both worlds" + _through(llm),
                               [o for report in worlds for o in report.outcomes]))
    for report in reports + together:
        print(f"## {report.name}\n\n{report.table()}\n\n{report.summary()}\n")
    if not args.quiet:
        for report in reports:
            print(f"\n## not exact: {report.name}")
            print("\n".join(_details(report)))
    return 0


def _llm_diffuser(args: argparse.Namespace) -> Any:
    """The llm diffuser with your [llm] settings, ``--base-url`` and ``--model`` over them."""
    from narrative.diffusers.llm import LLMDiffuser
    from narrative.userconfig import load_user_config

    settings = load_user_config().llm
    update = {k: v for k, v in (("base_url", args.base_url), ("model", args.model)) if v}
    settings = settings.model_copy(update=update)
    if not settings.base_url:
        raise SystemExit("--diffuser llm needs a server: --base-url URL (or [llm] base_url)")
    return LLMDiffuser(settings)


if __name__ == "__main__":
    sys.exit(main())
