#!/usr/bin/env bash
# Compose smoke test: build and start the stack, run the README's "Try it" against it, check the
# container runs as non-root, then remove the stack and its volumes. Needs a Docker engine.
#   ENGRAM_DB_IMAGE   the database image (default pgvector/pgvector:pg17; deploy/standin/ offline)
#   SMOKE_PORT        host port (default 18000)
set -euo pipefail
cd "$(dirname "$0")/.."
if docker compose version >/dev/null 2>&1; then compose=(docker compose); else compose=(docker-compose); fi
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-engram-smoke}
export ENGRAM_PORT=${SMOKE_PORT:-18000}
export POSTGRES_PASSWORD=smoke-owner ENGRAM_APP_DB_PASSWORD=smoke-app ENGRAM_WORKERS=${ENGRAM_WORKERS:-2}
base="http://127.0.0.1:$ENGRAM_PORT"
cleanup() { "${compose[@]}" logs --no-color > "${SMOKE_LOGS:-/tmp/engram-smoke.log}" 2>&1 || true
            "${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true; }
trap cleanup EXIT
fail() { echo "smoke: FAIL: $*" >&2; exit 1; }

"${compose[@]}" up -d ${SMOKE_BUILD:+--build}
for _ in $(seq 1 90); do
    curl -fsS "$base/ready" >/dev/null 2>&1 && break
    sleep 2
done
curl -fsS "$base/ready" || fail "the service never became ready"
echo

uid=$("${compose[@]}" exec -T engram id -u)
[ "$uid" = 10001 ] || fail "the service runs as uid $uid, not 10001"

KEY=$("${compose[@]}" run --rm migrate engram tenant create smoke | tail -n 1 | tr -d '[:space:]')
[[ $KEY == egm_* ]] || fail "no API key from 'engram tenant create'"
H="Authorization: Bearer $KEY"; J="Content-Type: application/json"
first=$(curl -fsS -X POST "$base/v1/memories" -H "$H" -H "$J" -d '{"user_id": "alice",
  "content": "Use React and Vite for the frontend", "type": "decision", "subject": "frontend framework"}')
second=$(curl -fsS -X POST "$base/v1/memories" -H "$H" -H "$J" -d '{"user_id": "alice",
  "content": "We are switching to Next.js for the frontend", "type": "decision", "subject": "frontend framework"}')
react=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["memory"]["id"])' "$first")
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["action"]=="superseded" and r["superseded"]==[sys.argv[2]], r' \
    "$second" "$react" || fail "the second write did not supersede the first"
recall=$(curl -fsS -X POST "$base/v1/recall" -H "$H" -H "$J" -d '{"user_id": "alice",
  "query": "which frontend framework do we use?", "token_budget": 256}')
python3 -c 'import json,sys; c=json.loads(sys.argv[1])["context"]; assert "Next.js" in c and "React" not in c, c' \
    "$recall" || fail "recall did not return the current decision only"
history=$(curl -fsS "$base/v1/memories/$react/history" -H "$H")
python3 -c 'import json,sys; h=json.loads(sys.argv[1]); assert [v["status"] for v in h["versions"]]==["active","superseded"], h' \
    "$history" || fail "history does not show the chain"
curl -fsS "$base/metrics" | grep -q '^engram_http_requests_total{method="POST",route="/v1/recall",status="200"}' \
    || fail "/metrics does not count the recall"
echo "smoke: OK (uid $uid; remember, supersede, recall, history, metrics)"
