#!/usr/bin/env bash
# `make demo`: Sovaria's offline story, end to end, with a real PostgreSQL behind a PostgREST-style
# server (Tests/Server). Writes while the server is down, shows them pending, starts the server,
# syncs, and shows a write the server refused (row-level security) kept in the rejected list; then
# a second device renames a note offline that the first one deletes: the rename is not lost.
set -euo pipefail
cd "$(dirname "$0")/.."
notes=$1
work=$(mktemp -d /tmp/sovaria-demo.XXXXXX)
chmod 755 "$work"  # the PostgreSQL server runs as the postgres user
cluster=$work/pg
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    Tests/Server/pgcluster stop "$cluster" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

conninfo=$(Tests/Server/pgcluster start "$cluster")
psql -X -q -v ON_ERROR_STOP=1 "$conninfo" -f Tests/Server/schema.sql >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
app() { echo "\$ sovaria-notes $*"; "$notes" --store "$work/app" --server "http://127.0.0.1:$port" "$@"; echo; }
# A second device; `laptop-offline` points it at a port nothing listens on.
laptop() { echo "\$ (laptop) sovaria-notes $*"; "$notes" --store "$work/laptop" --server "http://127.0.0.1:$port" "$@"; echo; }
laptop-offline() {
    echo "\$ (laptop, offline) sovaria-notes $*"
    "$notes" --store "$work/laptop" --server "http://127.0.0.1:9" "$@"
    echo
}

echo "== The server is down: writes are queued on the device =="
app add n1 "Buy milk"
app add n2 "Call the plumber"
app add n3 "Bob's note, written by Alice" --owner bob
app done n1
app pending
app list

echo "== The server is back =="
/usr/bin/python3 Tests/Server/restserver.py --conninfo "$conninfo" --port "$port" >/dev/null &
server_pid=$!
until curl -s "http://127.0.0.1:$port/_test/health" >/dev/null 2>&1; do sleep 0.1; done
app sync
app rejected
app list
echo "== In PostgreSQL =="
psql -X -q "$conninfo" -c "SELECT id, owner, title, done FROM notes ORDER BY id"

echo "== Two devices: the laptop renames n2 offline while this device deletes it =="
laptop list
laptop-offline rename n2 "Call the plumber at 9"
app delete n2
laptop sync
laptop rejected
