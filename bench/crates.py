#!/usr/bin/env python3
"""Self cost per request of a callgrind dump, grouped by crate: bench/instructions.sh's "By crate"
tables.

    python3 bench/crates.py --requests N DUMP [DUMP...]

Each dump is read with `callgrind_annotate --inclusive=no` (self cost, every line), and each line
is put to the crate its source file belongs to, so inlined code counts where it was written:
crates.io sources to their crate, the standard library to core, alloc or std (its own
dependencies, such as hashbrown behind std's HashMap, as `hashbrown (std)`), the workspace's
files to its crate, C code without a crate to its library (libc, with memcpy, memmove and memset
apart as `libc mem*`, and the dynamic loader). Lines with no source file (a binary without line
tables) are put to their object. Prints a markdown table: the crates costing most in the last
dump, instructions per request in each dump, and the rest as one row.
"""

import argparse
import re
import subprocess
import sys
from collections import defaultdict

LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.+?)(?:\s+\[(.+)\])?$")
REGISTRY = re.compile(r"/index\.crates\.io-[^/]+/([^/]+?)-\d+\.\d+\.\d+[^/]*/")
LIBRARY = re.compile(r"/rustc/[0-9a-f]+/library/([a-z_]+)/")
STD_DEPS = re.compile(r"^/rust/deps/([^/]+?)-\d+\.\d+\.\d+[^/]*/")
WORKSPACE = ("api", "shard-router", "gatekeeper", "cache", "index-tables", "valet", "bench", "tests")
SHOWN = 14


def crate_of(source: str, function: str, obj: str) -> str:
    """The crate (or library) a line of self cost belongs to."""
    if source == "???":
        name = obj.rsplit("/", 1)[-1] if obj else "?"
        if name.startswith("libc.so") and re.search(r"mem(cpy|move|set)", function):
            return "libc mem*"
        return name.split(".so")[0] if ".so" in name else f"({name}, no line tables)"
    registry = REGISTRY.search(source)
    if registry:
        name = registry.group(1)
        return "mimalloc" if name == "libmimalloc-sys" else name
    library = LIBRARY.search(source)
    if library:
        return library.group(1)
    std_dep = STD_DEPS.search(source)
    if std_dep:  # the standard library's own dependencies (its HashMap is hashbrown)
        return f"{std_dep.group(1)} (std)"
    for member in WORKSPACE:
        if source.startswith(member + "/") or f"/{member}/src/" in source:
            return f"shardgate-{member}"
    if source.startswith("./"):  # glibc's own sources
        return "libc mem*" if re.search(r"mem(cpy|move|set)", function) else "libc"
    return "other"


def by_crate(dump: str) -> dict:
    """Self cost per crate of one dump."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", dump],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    costs = defaultdict(int)
    listing = False
    for line in out.splitlines():
        if "file:function" in line:
            listing = True
            continue
        if listing and costs and line.startswith("-----"):
            break
        match = LINE.match(line) if listing else None
        if not match:
            continue
        cost, place, obj = int(match.group(1).replace(",", "")), match.group(2), match.group(3) or ""
        source, _, function = place.partition(":")
        costs[crate_of(source, function, obj)] += cost
    return costs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, required=True, help="requests each dump counted")
    parser.add_argument("dumps", nargs="+")
    args = parser.parse_args()
    tables = [by_crate(dump) for dump in args.dumps]
    last = tables[-1]
    shown = sorted(last, key=last.get, reverse=True)[:SHOWN]
    per = lambda n: f"{n / args.requests:,.0f}"  # noqa: E731
    print("| crate |" + " |".join(f" {i + 1}" for i in range(len(tables))) + " |")
    print("| --- |" + " ---: |" * len(tables))
    for crate in shown:
        print(f"| {crate} |" + " |".join(f" {per(t.get(crate, 0))}" for t in tables) + " |")
    rest = [sum(v for k, v in t.items() if k not in shown) for t in tables]
    print("| (the rest) |" + " |".join(f" {per(r)}" for r in rest) + " |")
    print("| **total** |" + " |".join(f" **{per(sum(t.values()))}**" for t in tables) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
