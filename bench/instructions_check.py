#!/usr/bin/env python3
"""Compares instructions per request with the committed baseline: the verdict of
`bench/instructions.sh --check`.

    python3 bench/instructions_check.py BASELINE MEASURED [--tolerance 0.05] [--failed FILE]

Both files hold `requests N` and one `scenario instructions` line per scenario (`#` comments
allowed). Fails (exit 1) when a scenario of the baseline costs more than the tolerance above it,
is missing from the measurement, or was measured with another request count (background work is
spread over the requests, so counts from different request counts do not compare). A scenario
costing more than the tolerance below its baseline passes, with a hint to bless the baseline
again so that the gain is kept. Prints a markdown table either way; with --failed, writes the
scenarios that cost too much to FILE (one per line), for bench/instructions.sh to measure again.
"""

import argparse
import sys


def read(path: str) -> dict:
    values = {}
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) != 2 or not fields[1].isdigit():
                raise SystemExit(f"{path}:{number}: expected `name count`, found {line!r}")
            values[fields[0]] = int(fields[1])
    return values


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("baseline")
    parser.add_argument("measured")
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--failed", help="write the scenarios that cost too much here")
    args = parser.parse_args()
    baseline, measured = read(args.baseline), read(args.measured)
    failures, regressed = [], []
    if baseline.get("requests") != measured.get("requests"):
        failures.append(
            f"measured with {measured.get('requests')} requests per scenario, the baseline with "
            f"{baseline.get('requests')}"
        )
    print("| scenario | baseline | measured | ratio | verdict |")
    print("| --- | ---: | ---: | ---: | --- |")
    for scenario, base in baseline.items():
        if scenario == "requests":
            continue
        if scenario not in measured:
            failures.append(f"{scenario}: not measured")
            print(f"| {scenario} | {base} | — | — | missing |")
            continue
        now = measured[scenario]
        ratio = now / base
        if ratio > 1 + args.tolerance:
            verdict = f"**regressed** (over {1 + args.tolerance:.2f})"
            failures.append(f"{scenario}: {now} instructions per request, {ratio:.3f}× its baseline {base}")
            regressed.append(scenario)
        elif ratio < 1 - args.tolerance:
            verdict = "cheaper: bless the baseline again to keep the gain"
        else:
            verdict = "ok"
        print(f"| {scenario} | {base} | {now} | {ratio:.3f} | {verdict} |")
    if args.failed:
        with open(args.failed, "w", encoding="utf-8") as file:
            file.writelines(f"{scenario}\n" for scenario in regressed)
    if failures:
        print("\nthe instruction check failed:", file=sys.stderr)
        for failure in failures:
            print(f"  - {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
