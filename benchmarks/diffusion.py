"""How well the offline ``rules`` diffuser turns prose into changes, on a labelled set.

``tests/data/diffusion_eval.jsonl`` holds event sentences written for the sample
world, English and Chinese, each with the changes a reader expects (``target``,
``field``, ``value``; ``null`` for a removed field or edge, ``"expired"`` or
``"created"`` for a whole node) and a category (plain action, two actions,
pronoun, dropped subject, contrast, and each way a clause can assert nothing:
negated, question, condition, reported, ordered, intended, hesitated, imagined,
almost). Every sentence runs as a dry-run event on one fresh sample world
through the library (a dry run changes nothing, so each sees the same world).

A *wrong write* is a change made that the sentence does not say happened (or
with another value): the failure that matters, since it corrupts the story
silently. A *miss* is an expected change left out: the user adds it with
``--set``. A sentence is *exact* when the changes are exactly the expected ones.

    python benchmarks/diffusion.py            # the table, and every sentence that is not exact
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative.api import EventRequest, init_world, open_world, run_event

EVAL_SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "diffusion_eval.jsonl"

Change = tuple[str, str, str]  # target, field, value as canonical JSON


@dataclass
class Outcome:
    text: str
    category: str
    expected: set[Change]
    actual: set[Change]
    notes: list[str]
    ms: float

    @property
    def wrong(self) -> set[Change]:
        return self.actual - self.expected

    @property
    def missed(self) -> set[Change]:
        return self.expected - self.actual


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def exact(self) -> int:
        return sum(1 for o in self.outcomes if o.actual == o.expected)

    @property
    def wrong_writes(self) -> int:
        return sum(len(o.wrong) for o in self.outcomes)

    @property
    def misses(self) -> int:
        return sum(len(o.missed) for o in self.outcomes)

    @property
    def rate(self) -> float:
        return self.exact / len(self.outcomes) if self.outcomes else 0.0

    def table(self) -> str:
        """Per category: sentences, exact, wrong writes, misses (Markdown)."""
        cats: dict[str, list[Outcome]] = {}
        for o in self.outcomes:
            cats.setdefault(o.category, []).append(o)
        lines = ["| category | sentences | with no change | exact | wrong writes | misses |",
                 "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for cat, rows in cats.items():
            lines.append(f"| {cat} | {len(rows)} | {sum(1 for o in rows if not o.expected)} | "
                         f"{sum(1 for o in rows if o.actual == o.expected)} | "
                         f"{sum(len(o.wrong) for o in rows)} | {sum(len(o.missed) for o in rows)} |")
        n = len(self.outcomes)
        lines.append(f"| **all** | {n} | {sum(1 for o in self.outcomes if not o.expected)} | "
                     f"{self.exact} ({100 * self.rate:.1f}%) | {self.wrong_writes} | {self.misses} |")
        return "\n".join(lines)


def _value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def load(path: Path = EVAL_SET) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def evaluate(path: Path = EVAL_SET, scratch: Path | None = None) -> Report:
    """Run every sentence of the set as a dry-run ``rules`` event on a fresh sample world."""
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        root = Path(tmp) / "world"
        init_world(root, sample=True)
        world = open_world(root)
        report = Report()
        for row in load(path):
            started = time.perf_counter()
            result = run_event(world, EventRequest(content=row["text"], diffuser="rules"), dry_run=True)
            ms = (time.perf_counter() - started) * 1000
            actual: set[Change] = set()
            for c in result.record.diffusions:
                if c.field == "":
                    if "lifecycle" in result.expired.get(c.target, ""):
                        continue  # the evening bell ends with any event: not the sentence's doing
                    actual.add((c.target, "", _value("expired" if c.has_old else "created")))
                else:
                    actual.add((c.target, c.field, _value(c.new_value if c.has_new else None)))
            expected = {(e["target"], e["field"], _value(e["value"])) for e in row["expect"]}
            notes = result.proposal.notes if result.proposal else []
            report.outcomes.append(Outcome(row["text"], row["category"], expected, actual, notes, ms))
        return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=EVAL_SET, help="the labelled sentences (JSONL)")
    parser.add_argument("--quiet", action="store_true", help="only the table")
    args = parser.parse_args(argv)
    report = evaluate(args.set)
    print(report.table())
    times = sorted(o.ms for o in report.outcomes)
    print(f"\nper event (dry run): median {times[len(times) // 2]:.1f} ms, max {times[-1]:.1f} ms")
    if not args.quiet:
        for o in report.outcomes:
            if o.actual == o.expected:
                continue
            print(f"\n[{o.category}] {o.text}")
            for c in sorted(o.wrong):
                print(f"  WRONG  {c[0]} {c[1]} = {c[2]}")
            for c in sorted(o.missed):
                print(f"  missed {c[0]} {c[1]} = {c[2]}")
            for n in o.notes:
                print(f"  # {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
