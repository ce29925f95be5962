"""Open-loop GETs at a fixed rate, for the bench scripts (Python 3, standard library only).

    python3 bench/paced_get.py HOST PORT PATH RATE SECS [WARMUP]

Request i is due at start + i/RATE whatever happened to the earlier ones: it takes an idle
keep-alive connection or opens one, so a slow answer never delays the next request (no
coordinated omission). Latency is from the write of the request to the end of its body, 5 s at
most; `lag` is how late the client itself sent (its own scheduling, a check of the pacing).
Requests due in the first WARMUP seconds (default 0) are sent but not counted. With TOKEN in
the environment, requests carry `Authorization: Bearer $TOKEN`. Prints one line:

SGGETS sent=... secs=... send_rate=... ok=... non2xx=... failed=... p50_ms=... p99_ms=...
max_ms=... p99_from_due_ms=... lag_p99_ms=... lag_max_ms=... connections=... statuses=...

(`failed`: no answer; `statuses`: status:count, 0 for no answer.)
"""

import asyncio
import os
import sys
from collections import Counter


def nearest_rank(sorted_values, q):
    if not sorted_values:
        return float("nan")
    i = max(1, -(-len(sorted_values) * q // 100))  # ceil(n * q / 100), at least 1
    return sorted_values[int(i) - 1]


async def main():
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rate, secs = float(sys.argv[4]), float(sys.argv[5])
    warmup = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    token = os.environ.get("TOKEN")
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}\r\n".encode()
    loop = asyncio.get_running_loop()
    idle = []
    opened = 0
    results = []  # (due, sent, done, status); status 0 = no answer

    async def connect():
        nonlocal opened
        opened += 1
        return await asyncio.wait_for(asyncio.open_connection(host, port), 5)

    async def exchange(conn):
        reader, writer = conn
        writer.write(request)
        status = int((await reader.readline()).split()[1])
        length, close = 0, False
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        await reader.readexactly(length)
        return status, close

    async def one(due):
        sent, conn = loop.time(), None
        try:
            conn = idle.pop() if idle else await connect()
            status, close = await asyncio.wait_for(exchange(conn), timeout=5)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError):
            status, close = 0, True
        done = loop.time()
        if conn is not None and close:
            conn[1].close()
        elif conn is not None:
            idle.append(conn)
        results.append((due, sent, done, status))

    for _ in range(4):
        try:
            idle.append(await connect())
        except (OSError, asyncio.TimeoutError):
            break
    start, tasks = loop.time() + 0.05, []
    for i in range(int((warmup + secs) * rate)):
        due = start + i / rate
        wait = due - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        tasks.append(asyncio.create_task(one(due)))
    await asyncio.gather(*tasks)
    for _, writer in idle:
        writer.close()

    measured = [r for r in results if r[0] >= start + warmup]
    answered = sorted((d - s) * 1000 for _, s, d, st in measured if st)
    from_due = sorted((d - due) * 1000 for due, _, d, st in measured if st)
    lags = sorted((s - due) * 1000 for due, s, _, _ in measured)
    sends = sorted(s for _, s, _, _ in measured)
    span = (sends[-1] - sends[0]) if len(sends) > 1 else float("nan")
    ok = sum(1 for r in measured if 200 <= r[3] < 300)
    failed = sum(1 for r in measured if r[3] == 0)
    statuses = Counter(r[3] for r in measured)
    fields = {
        "sent": len(measured),
        "secs": f"{span:.3f}",
        "send_rate": f"{(len(measured) - 1) / span:.1f}" if span else "nan",
        "ok": ok,
        "non2xx": len(measured) - ok - failed,
        "failed": failed,
        "p50_ms": f"{nearest_rank(answered, 50):.3f}",
        "p99_ms": f"{nearest_rank(answered, 99):.3f}",
        "max_ms": f"{answered[-1] if answered else float('nan'):.3f}",
        "p99_from_due_ms": f"{nearest_rank(from_due, 99):.3f}",
        "lag_p99_ms": f"{nearest_rank(lags, 99):.3f}",
        "lag_max_ms": f"{lags[-1] if lags else float('nan'):.3f}",
        "connections": opened,
        "statuses": ",".join(f"{s}:{n}" for s, n in sorted(statuses.items())),
    }
    print("SGGETS " + " ".join(f"{k}={v}" for k, v in fields.items()))


asyncio.run(main())
