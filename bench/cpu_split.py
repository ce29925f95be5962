"""Where a load run's CPU goes, by process (Python 3, standard library only).

    python3 bench/cpu_split.py SECS

Reads every process's user and system time (/proc/PID/stat, all its threads) now and SECS
seconds later, and prints the CPU each kind of process used meanwhile, in milliseconds per
second of wall time (1000 is one core kept busy), on one line:

SGCPU gateway=... postgres=... redis=... load=... other=...

gateway: shardgate; postgres: PostgreSQL's server processes; redis: redis-server; load: the load
generators (wrk, pgbench, redis-benchmark); other: every other process, kernel threads included
(a process that ended within the SECS is not counted). Divided by the run's requests per
second, it gives each one's CPU per request.
"""

import os
import sys
import time

KINDS = {
    "shardgate": "gateway",
    "postgres": "postgres",
    "redis-server": "redis",
    "wrk": "load",
    "pgbench": "load",
    "redis-benchmark": "load",
}
ORDER = ["gateway", "postgres", "redis", "load", "other"]


def parse(stat):
    """(comm, user + system ticks) of a /proc/PID/stat line; comm may hold spaces and parentheses."""
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return comm, int(fields[11]) + int(fields[12])


def kind(comm):
    return KINDS.get(comm, "other")


def snapshot():
    ticks = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ticks[pid] = parse(f.read())
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
    return ticks


def split(before, after, secs, hz):
    """Milliseconds of CPU per second of wall time, by kind, of the processes alive at both ends."""
    used = {k: 0 for k in ORDER}
    for pid, (comm, ticks) in after.items():
        if pid in before and before[pid][0] == comm:
            used[kind(comm)] += ticks - before[pid][1]
    return {k: used[k] * 1000 / hz / secs for k in ORDER}


def selftest():
    assert parse("42 (wrk) S 1 2 3 4 5 6 7 8 9 10 110 7 0 0 20") == ("wrk", 117)
    assert parse("7 (tokio (x) y) R 1 2 3 4 5 6 7 8 9 10 3 4 0 0") == ("tokio (x) y", 7)
    before = {"1": ("shardgate", 100), "2": ("postgres", 50), "3": ("sh", 9), "4": ("postgres", 0)}
    after = {"1": ("shardgate", 300), "2": ("postgres", 150), "3": ("sh", 10), "5": ("wrk", 400)}
    got = split(before, after, 2.0, 100)
    assert got == {"gateway": 1000.0, "postgres": 500.0, "redis": 0.0, "load": 0.0, "other": 5.0}, got


def main():
    if sys.argv[1:] == ["--selftest"]:
        selftest()
        print("ok")
        return
    secs = float(sys.argv[1])
    hz = os.sysconf("SC_CLK_TCK")
    before = snapshot()
    started = time.monotonic()
    time.sleep(secs)
    after = snapshot()
    used = split(before, after, time.monotonic() - started, hz)
    print("SGCPU " + " ".join(f"{k}={used[k]:.0f}" for k in ORDER))


if __name__ == "__main__":
    main()
