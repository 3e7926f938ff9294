#!/usr/bin/env bash
# `make demo`: Sovaria's offline story, end to end, with a real PostgreSQL behind a PostgREST-style
# server (Tests/Server). Writes while the server is down, shows them pending, starts the server,
# syncs, and shows a write the server refused (row-level security) kept in the rejected list. Then
# two devices: a note renamed offline on the laptop is deleted on the phone (the rename matches no
# row and is kept as rejected, not lost); and a task, whose version the server increments on every
# update, is renamed on both: the laptop's edit is a conflict, shown with the server's row and
# resolved with a merged title that the server takes. Last, the phone's live list follows the
# server's change feed, and the laptop's edit appears in it without the list being fetched again.
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
PGOPTIONS="-c client_min_messages=warning" psql -X -q -v ON_ERROR_STOP=1 "$conninfo" -f Tests/Server/schema.sql >/dev/null
# A command line as one types it: arguments with spaces or quotes in double quotes.
shown() {
    local line="" argument
    for argument in "$@"; do
        case "$argument" in
        *[[:space:]\'\"]*) line+=" \"${argument//\"/\\\"}\"" ;;
        *) line+=" $argument" ;;
        esac
    done
    echo "${line# }"
}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
app() { echo "\$ (phone) sovaria-notes $(shown "$@")"; "$notes" --store "$work/app" --server "http://127.0.0.1:$port" "$@"; echo; }
# A second device; `laptop-offline` points it at a port nothing listens on.
laptop() { echo "\$ (laptop) sovaria-notes $(shown "$@")"; "$notes" --store "$work/laptop" --server "http://127.0.0.1:$port" "$@"; echo; }
laptop-offline() {
    echo "\$ (laptop, offline) sovaria-notes $(shown "$@")"
    "$notes" --store "$work/laptop" --server "http://127.0.0.1:9" "$@"
    echo
}

say() { echo; echo "== $* =="; }
note() { echo "   # $*"; }

say "The server is down: writes are queued on the phone"
app add n1 "Buy milk"
app add n2 "Call the plumber"
app add n3 "Bob's note, written by Alice" --owner bob
app done n1
app pending
app list

say "The server is back: the phone syncs"
/usr/bin/python3 Tests/Server/restserver.py --conninfo "$conninfo" --port "$port" --db-pre-request sovaria_pre_request >/dev/null &
server_pid=$!
until curl -s "http://127.0.0.1:$port/_test/health" >/dev/null 2>&1; do sleep 0.1; done
app sync
app rejected
app list
echo "== In PostgreSQL =="
psql -X -q "$conninfo" -c "SELECT id, owner, title, done FROM notes ORDER BY id"

say "An edit of a deleted row: the laptop renames note n2 offline while the phone deletes it"
laptop list
laptop-offline rename n2 "Call the plumber at 9"
app delete n2
note "Back online, the laptop's rename matches no row: it is kept as rejected, not counted as synced"
laptop sync
laptop rejected

say "A conflict: both devices rename task t1, the laptop offline (tasks have a version column)"
app task-add t1 "Pack the tent"
note "The laptop reads the task: version 1. Its next edit of t1 will apply only to version 1"
laptop tasks
laptop-offline task-rename t1 "Pack the big tent"
laptop-offline tasks
note "Meanwhile the phone renames it too: the server's trigger makes it version 2"
app task-rename t1 "Pack the tent and the stakes"
note "Back online, the laptop's rename (for version 1) finds version 2: a conflict, not an overwrite"
laptop sync
laptop conflicts
laptop tasks
note "The laptop's user merges both titles; the merge is sent for version 2, the row's version now"
laptop resolve t1 "Pack the big tent and the stakes"
laptop tasks
app tasks
echo "== In PostgreSQL =="
psql -X -q "$conninfo" -c "SELECT id, title, version FROM tasks ORDER BY id"

say "Changes from other devices: the phone's live list follows the server's change feed"
echo "\$ (phone) sovaria-notes watch --until \"Buy oat milk\" &"
"$notes" --store "$work/app" --server "http://127.0.0.1:$port" watch --until "Buy oat milk" >"$work/watch.out" 2>&1 &
watch_pid=$!
# Until the phone shows its list (a demo may wait; the tests inject their clocks).
for _ in $(seq 100); do
    grep -q "live list" "$work/watch.out" || ! kill -0 "$watch_pid" 2>/dev/null && break
    sleep 0.1
done
laptop rename n1 "Buy oat milk"
note "The phone's live list, as it printed it: the rename came through the feed, no list was fetched again"
for _ in $(seq 300); do kill -0 "$watch_pid" 2>/dev/null || break; sleep 0.1; done
kill "$watch_pid" 2>/dev/null || true
wait "$watch_pid" || true
sed 's/^/   /' "$work/watch.out"
