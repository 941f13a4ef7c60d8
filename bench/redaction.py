"""False positives of secret redaction on real conversations, and its cost on adversarial text.

    python -m bench.redaction --dataset locomo:../shared/datasets/locomo/locomo_dev.json \\
        --dataset beam:../shared/datasets/beam/100K [--out FILE] [--adversarial]

Every turn of every conversation (read through bench/quality's adapters) goes through
`app.lib.redaction.redact`; a turn is counted as changed when redaction replaced anything in it. The
development conversations hold no credentials, so every changed turn is a false positive unless a human
reading the hits file finds a real-shaped secret there. Printed: per dataset, turns and changed turns,
and one line per replaced span (dataset, conversation, turn id, placeholder kind). The changed turns,
before and after, go to --out (outside the repository: the datasets are evaluation-only and must not be
committed). --adversarial times redact() on inputs built to make regexes backtrack, at doubling sizes:
linear time shows as a ratio near 2 per doubling.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from app.lib.redaction import redact
from bench.quality.model import Dataset
from bench.quality.runner import Options, load_dataset

MARKER = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")
DEFAULT_OUT = Path(tempfile.gettempdir()) / "engram-redaction-hits.txt"  # outside the repository


def spans(before: str, after: str) -> list[tuple[str, str]]:
    """(kind, replaced text with 30 characters either side) for each marker of ``after``.

    Redaction only swaps spans for markers, so the text between markers is found in ``before`` in order.
    """
    found: list[tuple[str, str]] = []
    pieces = MARKER.split(after)  # literal, kind, literal, kind, ..., literal
    at = len(pieces[0])
    for index in range(1, len(pieces), 2):
        following = pieces[index + 1]
        end = before.find(following, at) if following else len(before)
        context = before[max(0, at - 30) : at] + "<<" + before[at:end] + ">>" + before[end : end + 30]
        found.append((pieces[index], context.replace("\n", "\\n")))
        at = end + len(following)
    return found


def scan(dataset: Dataset, out: list[str]) -> tuple[int, int, int, Counter[str]]:
    """(turns, changed turns, characters, spans per kind); one printed line per span."""
    turns = changed = chars = 0
    per_kind: Counter[str] = Counter()
    for conversation in dataset.conversations:
        for turn in conversation.turns:
            turns += 1
            chars += len(turn.text)
            result = redact(turn.text)
            if not result.changed:
                continue
            changed += 1
            kinds = MARKER.findall(result.text)
            per_kind.update(kinds)
            for kind in kinds:
                print(f"  {dataset.name} {conversation.id} {turn.id}: {kind}")
            out.append(f"=== {dataset.name} {conversation.id} {turn.id}")
            out += [f"  {kind}: {context}" for kind, context in spans(turn.text, result.text)]
            out += ["--- before", turn.text, "--- after", result.text, ""]
    return turns, changed, chars, per_kind


def adversarial(unit: int) -> dict[str, str]:
    return {
        "dots": "a." * (unit // 2),
        "dashes": "-" * unit,
        "repeated keys": "password: " * (unit // 10),
        "prose nouns": "my password is " * (unit // 15),
        "qualifiers": "the token for a b c d e f " * (unit // 26),
        "open quote": 'password="' + "a" * unit,
        "url userinfo": "a://b:" * (unit // 6),
        "credential + random": ("key " + "aB3" * 200 + " ") * (unit // 605),
        "random run": "token " + "aB3+" * (unit // 4),
        "digit groups": "4111 1111 " * (unit // 10),
        "pem headers": "-----BEGIN RSA PRIVATE KEY-----\n" * (unit // 32),
    }


def time_adversarial(sizes: list[int]) -> None:
    print(f"\nredact() on adversarial inputs, ms at {', '.join(f'{s // 1000} kB' for s in sizes)}:")
    by_size = {size: adversarial(size) for size in sizes}
    for name in by_size[sizes[0]]:
        figures = []
        for size in sizes:
            text = by_size[size][name]
            start = time.perf_counter()
            redact(text)
            figures.append((time.perf_counter() - start) * 1000)
        ratio = figures[-1] / max(figures[-2], 1e-6)
        print(f"  {name:22} " + " ".join(f"{f:8.1f}" for f in figures) + f"   last doubling x{ratio:.1f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.redaction", description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", action="append", default=[], help="locomo:PATH, beam:DIR, json:PATH")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="changed turns, before and after")
    parser.add_argument("--adversarial", action="store_true", help="time redact() on adversarial inputs")
    args = parser.parse_args(argv)
    options = Options(systems=[], budgets=[], modes=[])
    lines: list[str] = []
    total_turns = total_changed = 0
    for spec in args.dataset:
        kind, dataset = load_dataset(spec, options)
        if kind != "dataset":
            sys.exit(f"--dataset {spec}: only conversation datasets (locomo, beam, json) have turns")
        start = time.perf_counter()
        turns, changed, chars, kinds = scan(dataset, lines)
        elapsed = time.perf_counter() - start
        total_turns += turns
        total_changed += changed
        per_kind = ", ".join(f"{k} {n}" for k, n in kinds.most_common()) or "none"
        print(f"{dataset.name}: {changed} of {turns} turns changed ({per_kind})")
        print(f"  {chars:,} characters in {elapsed:.2f} s ({elapsed / max(chars, 1) * 1e6:.2f} us/char)")
    if args.dataset:
        print(f"total: {total_changed} of {total_turns} turns changed")
        args.out.write_text("\n".join(lines))
        print(f"changed turns, before and after: {args.out}")
    if args.adversarial:
        time_adversarial([25_000, 50_000, 100_000, 200_000])


if __name__ == "__main__":
    main()
