"""One worker against two: recall and remember throughput under wrk, and the server's CPU per request.

    python -m bench.workers [--workers 1,2] [--clients 1,16,64] [--seconds 10] [--memories 200] [--profile]

`engram serve --workers N` (hash embedder, so the model is not what is measured) on a fresh embedded
database, one tenant, one user holding `--memories` memories (a small scope). Load comes from Debian's
`wrk` (native, a few % of one core at these rates), which posts recalls (rotating queries) or remembers
(unique contents), or GET /health (the HTTP stack alone: `--kinds health,recall`), back to back for
`--seconds` per cell. CPU per request: user + system CPU time of the
server's processes (the parent and its workers) and of the database's backends over the cell, divided by
the requests served (the database's own processes, autovacuum among them, apart). After a remember cell the bench runs `ANALYZE` on the tables it grew, as autovacuum
would within its naptime (a minute): a cell grows `memories` from 200 rows to thousands, and on the
statistics of the 200 the planner scans the whole table for a 200-row scope (recall's database CPU
3-7x for that minute; docs/PERFORMANCE.md). `--profile` samples the single worker with py-spy during a 16-client recall cell and
keeps the functions with the most inclusive samples. Results: bench/results/workers/.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
from sqlalchemy import text
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.db.session import create_engine
from app.tenancy import admin
from bench.common import bench_database, machine, write_results

QUERIES = [
    "which frontend framework do we use?",
    "what does the user drink in the morning?",
    "where is the team offsite this year?",
    "which database runs the billing service?",
]
TOPICS = ["frontend", "coffee", "offsite", "billing", "deploys", "hiring", "security", "travel"]

RECALL_LUA = """
local queries = {QUERIES}
local i = 0
request = function()
  i = i + 1
  local body = '{"user_id": "bench", "token_budget": 256, "query": "' .. queries[i % #queries + 1] .. '"}'
  return wrk.format("POST", "/v1/recall", nil, body)
end
"""
HEALTH_LUA = """
request = function()
  return wrk.format("GET", "/health")
end
"""
REMEMBER_LUA = """
local n = 0
local tag = tostring(math.random(1, 1e9))
request = function()
  n = n + 1
  local body = '{"user_id": "writer", "content": "Load note ' .. tag .. '-' .. n .. ' about the release train"}'
  return wrk.format("POST", "/v1/memories", nil, body)
end
"""


def tree_cpu(pid: int) -> float:
    """User + system CPU seconds of a process and its children, alive now."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        for p in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                t = p.cpu_times()
                total += t.user + t.system
    except psutil.NoSuchProcess:
        return 0.0
    return total


# Process titles of PostgreSQL's own processes ("postgres: checkpointer", ...); every other child of the
# postmaster is a backend serving a connection.
_BACKGROUND = (
    "checkpointer",
    "background writer",
    "walwriter",
    "autovacuum",
    "logical replication",
    "io worker",
    "walsummarizer",
    "archiver",
    "startup",
)


def db_cpu(postmaster: int) -> tuple[float, float]:
    """CPU seconds of the database's backends (the connections' work) and, apart, of its own processes
    (the postmaster, autovacuum, checkpointer, writers, and the processes it has reaped): autovacuum's
    visit after a write-heavy cell is not a recall's work."""
    backends = background = 0.0
    try:
        root = psutil.Process(postmaster)
        for p in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                t = p.cpu_times()
                title = " ".join(p.cmdline()).removeprefix("postgres: ")
                own = p.pid == postmaster or title.startswith(_BACKGROUND)
                if own:
                    background += t.user + t.system
                if p.pid == postmaster:  # processes it has reaped: autovacuum workers, mostly
                    background += t.children_user + t.children_system
                else:
                    backends += t.user + t.system
    except psutil.NoSuchProcess:
        pass
    return backends, background


def postmaster_pid(owner_url: str) -> int:
    """This run's postmaster (its backends are its children): the one serving the URL's socket directory."""
    found = re.search(r"host=([^&]+)", owner_url)
    if found is None:
        raise RuntimeError("BENCH_DATABASE_URL: CPU per request needs the embedded server (a local process)")
    socket_dir = urllib.parse.unquote(found.group(1))
    for p in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if p.info["name"] == "postgres" and f"-k {socket_dir}" in cmd:
            return int(p.pid)
    raise RuntimeError(f"no postmaster serves {socket_dir}")


def wrk(script: str, key: str, port: int, clients: int, seconds: float) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(script)
    threads = max(1, min(2, clients))
    cmd = [
        "wrk",
        f"-t{threads}",
        f"-c{clients}",
        f"-d{round(seconds)}s",
        "--timeout",
        "10s",
        "--latency",
        "-s",
        fh.name,
    ]
    cmd += ["-H", f"Authorization: Bearer {key}", "-H", "Content-Type: application/json"]
    out = subprocess.run(
        [*cmd, f"http://127.0.0.1:{port}"], capture_output=True, text=True, check=True
    ).stdout
    os.unlink(fh.name)

    def number(pattern: str) -> float:
        m = re.search(pattern, out)
        return float(m.group(1)) if m else 0.0

    def ms(label: str) -> float:
        m = re.search(rf"{label}%\s+([\d.]+)(us|ms|s)", out)
        if not m:
            return 0.0
        return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]

    return {
        "requests": int(number(r"(\d+) requests in")),
        "rps": number(r"Requests/sec:\s+([\d.]+)"),
        "p50_ms": ms(" 50"),
        "p99_ms": ms(" 99"),
        "non_2xx": int(number(r"Non-2xx or 3xx responses: (\d+)")),
        "socket_errors": out.count("Socket errors"),
    }


@contextmanager
def server(
    owner_url: str, workers: int, port: int, data_dir: Path, settings: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "PROMETHEUS_"))}
    env.update(DATABASE_URL=owner_url, ENGRAM_EMBEDDER="hash", ENGRAM_DATA_DIR=str(data_dir))
    env["ENGRAM_TENANT_REQUESTS_PER_MINUTE"] = "0"  # one tenant sends every request: no bucket
    env.update(settings or {})
    cmd = [sys.executable, "-m", "app", "serve", "--port", str(port), "--workers", str(workers)]
    process = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        else:
            raise RuntimeError("the server never became ready")
        time.sleep(2)  # every worker has finished its startup
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def seed(port: int, key: str, memories: int) -> None:
    items = [
        {
            "user_id": "bench",
            "content": f"Note {i} on {TOPICS[i % len(TOPICS)]}: decision number {i} was recorded",
        }
        for i in range(memories)
    ]
    for start in range(0, len(items), 500):
        r = httpx.post(
            f"http://127.0.0.1:{port}/v1/memories/batch",
            json={"items": items[start : start + 500]},
            headers={"Authorization": f"Bearer {key}"},
            timeout=120,
        )
        r.raise_for_status()


def profile(pid: int, seconds: float, out: Path) -> list[tuple[str, float]]:
    """py-spy's inclusive share per function over `seconds` of the process `pid`."""
    raw = out / "profile.txt"
    spy = Path(sys.executable).with_name("py-spy")
    subprocess.run(
        [
            str(spy),
            "record",
            "-p",
            str(pid),
            "-d",
            str(int(seconds)),
            "-r",
            "200",
            "-f",
            "raw",
            "-o",
            str(raw),
        ],
        check=True,
        capture_output=True,
    )
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        if stack.rsplit(";", 1)[-1].startswith(("EpollSelector.select", "_worker ")):
            continue  # waiting, not working: shares are of the busy samples
        total += n
        for frame in {
            f.split(" (")[0] + " (" + f.split(" (")[-1].split(":")[0] + ")" for f in stack.split(";")
        }:
            inclusive[frame] += n
    return [(f, round(100 * n / total, 1)) for f, n in inclusive.most_common(40)]


def cell(script: str, key: str, port: int, clients: int, seconds: float, pids: list[int]) -> dict[str, Any]:
    server, db = pids
    before, db_before = tree_cpu(server), db_cpu(db)
    result = wrk(script, key, port, clients, seconds)
    after, db_after = tree_cpu(server), db_cpu(db)
    served = max(1, result["requests"])
    result["server_cpu_ms"] = round(1000 * (after - before) / served, 3)
    result["db_cpu_ms"] = round(1000 * (db_after[0] - db_before[0]) / served, 3)
    result["db_background_cpu_ms"] = round(1000 * (db_after[1] - db_before[1]) / served, 3)
    # This machine is shared: the load average says how much else wanted the two cores meanwhile.
    result["load_1m"] = round(os.getloadavg()[0], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--clients", default="1,16,64")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--kinds", default="recall,remember")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="ENGRAM_NAME=VALUE",
        help="a setting for the served app (repeatable), to compare settings in one command",
    )
    args = parser.parse_args()
    settings = dict(item.split("=", 1) for item in args.set)
    if any(not name.startswith("ENGRAM_") for name in settings):
        parser.error("--set takes ENGRAM_NAME=VALUE")
    if shutil.which("wrk") is None:
        parser.error("needs Debian's wrk on PATH (apt-get install wrk): the load generator must be native")
    if args.profile and not Path(sys.executable).with_name("py-spy").exists():
        parser.error("--profile needs py-spy in this virtualenv (the bench extra)")
    recall_lua = RECALL_LUA.replace("{QUERIES}", json.dumps(QUERIES).replace("[", "{").replace("]", "}"))
    out = Path(tempfile.mkdtemp(prefix="engram-workers-"))
    rows: list[dict[str, Any]] = []
    top: list[tuple[str, float]] = []
    with bench_database() as (owner_url, _app_url):
        key = asyncio.run(_tenant(owner_url))
        db = postmaster_pid(owner_url)
        for i, workers in enumerate(int(w) for w in args.workers.split(",")):
            port = 18600 + i
            with server(owner_url, workers, port, out / f"data-{workers}", settings) as process:
                if i == 0:
                    seed(port, key, args.memories)
                for clients in (int(c) for c in args.clients.split(",")):
                    wrk(recall_lua, key, port, clients, 2)  # warm-up
                    for kind in args.kinds.split(","):
                        script = {"recall": recall_lua, "remember": REMEMBER_LUA, "health": HEALTH_LUA}[kind]
                        r = cell(script, key, port, clients, args.seconds, [process.pid, db])
                        rows.append({"workers": workers, "clients": clients, "kind": kind, **r})
                        if kind == "remember":
                            asyncio.run(_analyze(owner_url))
                        print(json.dumps(rows[-1]), flush=True)
                if args.profile and workers == 1:
                    top = asyncio.run(
                        _profile_under_load(recall_lua, key, port, process.pid, args.seconds, out)
                    )
    payload = {"machine": machine(), "args": vars(args), "rows": rows, "profile_top": top}
    path = write_results("workers", payload, render(rows, top))
    print(f"results in {path}")


async def _tenant(owner_url: str) -> str:
    engine = create_engine(owner_url, pool_size=1, max_overflow=0)
    try:
        async with async_sessionmaker(engine)() as session, session.begin():
            created = await admin.create_tenant(session, f"bench-{int(time.time())}")
        return created.plaintext
    finally:
        await engine.dispose()


async def _analyze(owner_url: str) -> None:
    """Statistics for the rows a remember cell wrote (what autovacuum does within its naptime)."""
    engine = create_engine(owner_url, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as conn:
            await (await conn.execution_options(isolation_level="AUTOCOMMIT")).execute(
                text("ANALYZE memories, memory_events, memory_access")
            )
    finally:
        await engine.dispose()


async def _profile_under_load(
    script: str, key: str, port: int, pid: int, seconds: float, out: Path
) -> list[tuple[str, float]]:
    load = asyncio.create_task(asyncio.to_thread(wrk, script, key, port, 16, seconds + 2))
    await asyncio.sleep(1)
    top = await asyncio.to_thread(profile, pid, seconds, out)
    await load
    return top


def render(rows: list[dict[str, Any]], top: list[tuple[str, float]]) -> str:
    lines = [
        "| workers | clients | kind | req/s | p50 / p99 ms | server CPU ms/req | db CPU ms/req (background) |"
        " non-2xx | load 1m |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['workers']} | {r['clients']} | {r['kind']} | {r['rps']:.1f} | {r['p50_ms']:.1f} / {r['p99_ms']:.1f}"
        f" | {r['server_cpu_ms']:.2f} | {r['db_cpu_ms']:.2f} ({r.get('db_background_cpu_ms', 0):.2f})"
        f" | {r['non_2xx']} | {r['load_1m']} |"
        for r in rows
    ]
    if top:
        lines += ["", "| function (file) | inclusive % of samples |", "|---|---|"]
        lines += [f"| `{f}` | {p} |" for f, p in top]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
