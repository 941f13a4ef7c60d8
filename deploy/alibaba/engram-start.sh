#!/usr/bin/env bash
# Start Engram with its secrets from KMS Secrets Manager, read with the ECS instance's RAM role, so no
# secret sits on the disk. Secrets (names set in /etc/engram/engram.env):
#   ENGRAM_KMS_DB_SECRET         JSON {"owner_password": ..., "app_password": ...}
#   ENGRAM_KMS_DASHSCOPE_SECRET  the DashScope API key (optional: without it the offline model runs)
# Used by engram.service (no arguments: serve) and by hand for administration (arguments: a command).
set -euo pipefail
secret() {  # the SecretData of a KMS secret
    aliyun kms GetSecretValue --SecretName "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["SecretData"])'
}
urlencode() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

db=$(secret "$ENGRAM_KMS_DB_SECRET")
owner_password=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["owner_password"])' "$db")
ENGRAM_APP_DB_PASSWORD=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["app_password"])' "$db")
export ENGRAM_APP_DB_PASSWORD
# DATABASE_URL_TEMPLATE holds {password} where the owner's password goes (percent-encoded here).
DATABASE_URL=${DATABASE_URL_TEMPLATE/\{password\}/$(urlencode "$owner_password")}
export DATABASE_URL
if [ -n "${ENGRAM_KMS_DASHSCOPE_SECRET:-}" ]; then
    DASHSCOPE_API_KEY=$(secret "$ENGRAM_KMS_DASHSCOPE_SECRET")
    export DASHSCOPE_API_KEY
fi
# No arguments: serve (behind nginx on this host). Otherwise an engram command with the same secrets:
#   engram-start.sh migrate | engram-start.sh tenant create acme | engram-start.sh maintenance
if [ "$#" -eq 0 ]; then
    set -- serve --host "${ENGRAM_HOST:-127.0.0.1}" --port "${ENGRAM_PORT:-8000}"
fi
exec /opt/engram/venv/bin/engram "$@"
