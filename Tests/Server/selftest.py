#!/usr/bin/python3
"""Self-test of restserver.py against a real, throwaway PostgreSQL (test equipment).

    python3 selftest.py [--verbose]

Starts a cluster with ./pgcluster in a temporary folder, starts restserver.py --setup on it,
checks every behaviour the README promises over HTTP with urllib, and stops both. Prints one
line per check; exits 1 if any check failed.
"""
from __future__ import annotations

import base64
import concurrent.futures
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

try:
    import psycopg
except ImportError:  # a non-Debian python3 first in PATH (pyenv): use Debian's python3-psycopg
    sys.path.append("/usr/lib/python3/dist-packages")
    import psycopg

HERE = Path(__file__).resolve().parent
ALICE, BOB = "token-alice", "token-bob"
failed: list[str] = []


def check(name: str, condition: bool, detail: Any = "") -> None:
    print(f"{'ok  ' if condition else 'FAIL'} {name}" + ("" if condition else f"  -- {detail}"),
          flush=True)
    if not condition:
        failed.append(name)


class Response:
    def __init__(self, status: int | None, headers: Any, body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def header(self, name: str) -> str | None:
        return self.headers.get(name) if self.headers is not None else None

    def __repr__(self) -> str:
        return f"<{self.status} {self.body[:300]!r}>"


class Client:
    def __init__(self, base: str) -> None:
        self.base = base

    def call(self, method: str, path: str, body: Any = None, token: str | None = None,
             headers: dict[str, str] | None = None, raw: bytes | None = None) -> Response:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return Response(answer.status, answer.headers, answer.read())
        except urllib.error.HTTPError as error:
            return Response(error.code, error.headers, error.read())
        except (urllib.error.URLError, ConnectionError, OSError):  # dropped connection
            return Response(None, None, b"")


def run_checks(api: Client, db: str, cluster: Path) -> None:
    def count(query: str, *params: Any) -> int:
        with psycopg.connect(db, autocommit=True) as conn:
            return conn.execute(query, params).fetchone()[0]

    def ids(response: Response) -> list[str]:
        return [row["id"] for row in response.json() or []]

    rep = {"Prefer": "return=representation"}
    upsert = {"Prefer": "return=representation, resolution=merge-duplicates"}

    check("health answers 200", api.call("GET", "/_test/health").status == 200)
    check("reset answers 200", api.call("POST", "/_test/reset").status == 200)

    # --- auth
    r = api.call("GET", "/rest/v1/notes")
    check("no token: anon's 42501 is 401 with WWW-Authenticate: Bearer",
          r.status == 401 and r.json()["code"] == "42501"
          and r.header("WWW-Authenticate") == "Bearer", r)
    r = api.call("GET", "/rest/v1/notes", token="token-mallory")
    check("unknown token: 401 PGRST301, WWW-Authenticate invalid_token",
          r.status == 401 and r.json()["code"] == "PGRST301"
          and 'error="invalid_token"' in (r.header("WWW-Authenticate") or ""), r)

    def jwt(claims: dict[str, Any], signature: str = "test-signature") -> str:
        def part(value: dict[str, Any]) -> str:
            return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
        return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{signature}"

    r = api.call("GET", "/rest/v1/notes", token=jwt({"sub": "bob", "role": "authenticated"}))
    check("a JWT whose sub is bob reads as bob", r.status == 200, r)
    r = api.call("GET", "/rest/v1/notes", token=jwt({"sub": "bob"}, signature="forged"))
    check("a JWT with another signature: 401 PGRST301", r.status == 401 and r.json()["code"] == "PGRST301", r)
    r = api.call("GET", "/rest/v1/notes", token=jwt({"sub": "mallory"}))
    check("a JWT of no user: 401 PGRST301", r.status == 401 and r.json()["code"] == "PGRST301", r)

    # --- inserts
    r = api.call("POST", "/rest/v1/lists", {"id": "l1", "name": "Home"}, ALICE, rep)
    check("POST return=representation: 201 and the rows, owner defaulted to the role",
          r.status == 201 and r.json() == [{"id": "l1", "owner": "alice", "name": "Home"}]
          and r.header("Preference-Applied") == "return=representation", r)
    r = api.call("POST", "/rest/v1/notes", {"id": "n1", "title": "a"}, ALICE)
    check("POST without Prefer: 201, empty body", r.status == 201 and r.body == b"", r)
    r = api.call("POST", "/rest/v1/notes", [{"id": "n2", "title": "b", "body": "x"},
                                            {"id": "n3", "title": "c", "list_id": "l1"}], ALICE)
    check("POST of an array inserts every row", r.status == 201 and count(
        "SELECT count(*) FROM notes WHERE owner = 'alice'") == 3, r)

    # --- filters
    cases = [("id=eq.n2", ["n2"]), ("id=neq.n2&order=id", ["n1", "n3"]),
             ("title=gt.a&order=id", ["n2", "n3"]), ("title=lt.b", ["n1"]),
             ("title=gte.b&order=id", ["n2", "n3"]), ("title=lte.b&order=id", ["n1", "n2"]),
             ("id=in.(n1,n3)&order=id", ["n1", "n3"]), ("list_id=is.null&order=id", ["n1", "n2"]),
             ("body=not.is.null", ["n2"]), ("done=eq.false&order=title.desc", ["n3", "n2", "n1"]),
             ("order=title.desc&limit=2", ["n3", "n2"]),
             ("order=title.asc&limit=1&offset=1", ["n2"]),
             ("id=in.()", [])]
    for query, expected in cases:
        r = api.call("GET", f"/rest/v1/notes?{query}", token=ALICE)
        check(f"GET ?{query} -> {expected}", r.status == 200 and ids(r) == expected, r)
    r = api.call("GET", "/rest/v1/notes?select=id,title&id=eq.n1", token=ALICE)
    check("select=id,title returns only those columns", r.json() == [{"id": "n1", "title": "a"}], r)

    # --- row-level security between alice and bob
    r = api.call("GET", "/rest/v1/notes", token=BOB)
    check("bob sees none of alice's rows", r.status == 200 and r.json() == [], r)
    r = api.call("PATCH", "/rest/v1/notes?id=eq.n1", {"title": "bob was here"}, BOB)
    check("bob's PATCH of alice's row matches 0 rows: 204, row unchanged",
          r.status == 204 and count("SELECT count(*) FROM notes WHERE title = 'a'") == 1, r)
    r = api.call("DELETE", "/rest/v1/notes?id=eq.n1", token=BOB, headers=rep)
    check("bob's DELETE of alice's row: 200 [] with representation, row kept",
          r.status == 200 and r.json() == []
          and count("SELECT count(*) FROM notes WHERE id = 'n1'") == 1, r)
    r = api.call("POST", "/rest/v1/notes", {"id": "b1", "title": "t", "owner": "alice"}, BOB)
    check("bob inserting a row owned by alice: 403 42501 (INSERT WITH CHECK)",
          r.status == 403 and r.json()["code"] == "42501"
          and "row-level security" in r.json()["message"], r)
    r = api.call("POST", "/rest/v1/notes", {"id": "n1", "title": "stolen"}, BOB, upsert)
    check("bob upserting alice's row: 403 42501 (UPDATE USING on the existing row)",
          r.status == 403 and r.json()["code"] == "42501", r)
    r = api.call("PATCH", "/rest/v1/notes?id=eq.n1", {"owner": "bob"}, ALICE)
    check("alice giving her row to bob: 403 42501 (UPDATE WITH CHECK)",
          r.status == 403 and r.json()["code"] == "42501", r)
    api.call("POST", "/rest/v1/notes", {"id": "b2", "title": "bob's"}, BOB)
    r = api.call("DELETE", "/rest/v1/notes", token=BOB)
    check("DELETE without filters is allowed (PostgREST's default) and RLS limits it",
          r.status == 204 and count("SELECT count(*) FROM notes WHERE owner = 'bob'") == 0
          and count("SELECT count(*) FROM notes WHERE owner = 'alice'") == 3, r)

    # --- upsert
    r = api.call("POST", "/rest/v1/notes", {"id": "n1", "title": "a2"}, ALICE, upsert)
    check("upsert merge-duplicates updates the existing row", r.status == 201
          and r.json()[0]["title"] == "a2" and count("SELECT count(*) FROM notes") == 3, r)
    r = api.call("POST", "/rest/v1/notes",
                 [{"id": "n1", "title": "zz"}, {"id": "n4", "title": "d"}], ALICE,
                 {"Prefer": "return=representation, resolution=ignore-duplicates"})
    check("upsert ignore-duplicates keeps the existing row, inserts the new one",
          r.status == 201 and ids(r) == ["n4"]
          and count("SELECT count(*) FROM notes WHERE title = 'a2'") == 1, r)

    # --- singular answers, profiles, pages (PostgREST's SingularSpec, MultipleSchemaSpec,
    # RangeSpec; run_spec_checks holds the reads to PostgREST's own cases)
    singular = {"Accept": "application/vnd.pgrst.object+json"}
    mine = count("SELECT count(*) FROM notes WHERE owner = 'alice'")
    r = api.call("PATCH", "/rest/v1/notes", {"body": "everyone"}, ALICE, singular)
    check("singular PATCH of several rows: 406 PGRST116 and nothing written (SingularSpec)",
          r.status == 406 and r.json() == {"code": "PGRST116", "details": f"The result contains {mine} rows",
                                           "hint": None, "message": "Cannot coerce the result to a single JSON object"}
          and count("SELECT count(*) FROM notes WHERE body = 'everyone'") == 0, (mine, r))
    r = api.call("PATCH", "/rest/v1/notes?id=eq.n4&select=id,title", {"title": "d2"}, ALICE,
                 {**singular, "Prefer": "return=representation"})
    check("singular PATCH of one row with return=representation: the object",
          r.status == 200 and r.json() == {"id": "n4", "title": "d2"}
          and r.header("Content-Type") == "application/vnd.pgrst.object+json; charset=utf-8", r)
    r = api.call("GET", "/rest/v1/notes?id=eq.n4&select=id", token=ALICE, headers=singular)
    check("singular GET of one row: the object", r.status == 200 and r.json() == {"id": "n4"}, r)
    r = api.call("GET", "/rest/v1/notes?select=id,title&id=in.(n1,n4)&order=id", token=ALICE,
                 headers={"Accept": "text/csv"})
    check("Accept: text/csv: PostgREST's CSV (a header of the names, then the rows)",
          r.status == 200 and r.body == b"id,title\nn1,a2\nn4,d2" and r.header("Content-Type") == "text/csv; charset=utf-8",
          (r, r.header("Content-Type")))
    r = api.call("PATCH", "/rest/v1/notes?id=eq.n4", {"title": "d"}, ALICE, {"Accept": "text/csv"})
    check("a write with Accept: text/csv (CSV answers are for reads here): 406 PGRST107",
          r.status == 406 and r.json()["code"] == "PGRST107"
          and r.json()["message"] == "None of these media types are available: text/csv", r)
    r = api.call("GET", "/rest/v1/notes?select=id&id=eq.n4", token=ALICE, headers={"Accept-Profile": "public"})
    check("Accept-Profile: public reads public, and Content-Profile says so",
          r.status == 200 and r.json() == [{"id": "n4"}] and r.header("Content-Profile") == "public", r)
    r = api.call("GET", "/rest/v1/notes", token=ALICE)
    check("no profile with one schema served: no Content-Profile (PostgREST)",
          r.status == 200 and r.header("Content-Profile") is None, r.header("Content-Profile"))
    for method, header in (("GET", "Accept-Profile"), ("POST", "Content-Profile")):
        r = api.call(method, "/rest/v1/notes", {"id": "p1", "title": "t"} if method == "POST" else None,
                     ALICE, {header: "other"})
        check(f"{method} with {header}: other (not served): 406 PGRST106",
              r.status == 406 and r.json() == {"code": "PGRST106", "details": None, "message": "Invalid schema: other",
                                               "hint": "Only the following schemas are exposed: public"}, r)
    r = api.call("GET", "/rest/v1/notes?select=id&order=id", token=ALICE,
                 headers={"Range-Unit": "items", "Range": "1-2", "Prefer": "count=exact"})
    check("Range: 1-2 with count=exact: 206, the page and Content-Range: 1-2/total",
          r.status == 206 and ids(r) == ["n2", "n3"] and r.header("Content-Range") == f"1-2/{mine}",
          (r, r.header("Content-Range")))
    r = api.call("GET", "/rest/v1/notes?select=id&order=id&offset=1", token=ALICE,
                 headers={"Range": "0-1"})
    check("Range intersected with offset (PostgREST: rows 1..1)",
          r.status == 200 and ids(r) == ["n2"] and r.header("Content-Range") == "1-1/*",
          (r, r.header("Content-Range")))

    # --- PostgreSQL errors and PostgREST's statuses
    errors = [
        ("23505 unique -> 409", "POST", "/rest/v1/lists", {"id": "l2", "name": "Home"},
         409, "23505"),
        ("23503 foreign key (insert) -> 409", "POST", "/rest/v1/notes",
         {"id": "f1", "title": "t", "list_id": "nope"}, 409, "23503"),
        ("23503 foreign key (delete a referenced list) -> 409", "DELETE", "/rest/v1/lists?id=eq.l1",
         None, 409, "23503"),
        ("23514 check -> 400", "POST", "/rest/v1/notes", {"id": "c1", "title": ""}, 400, "23514"),
        ("23502 not null -> 400", "POST", "/rest/v1/notes", {"id": "c2", "title": None},
         400, "23502"),
        ("22P02 invalid text representation -> 400", "POST", "/rest/v1/notes",
         {"id": "c3", "title": "t", "done": "maybe"}, 400, "22P02"),
        ("22P02 in a filter -> 400", "GET", "/rest/v1/notes?done=eq.maybe", None, 400, "22P02"),
        ("42703 unknown filter column -> 400", "GET", "/rest/v1/notes?colour=eq.red", None,
         400, "42703"),
        ("unknown table -> 404 PGRST205", "GET", "/rest/v1/nope", None, 404, "PGRST205"),
        ("unknown payload column -> 400 PGRST204", "POST", "/rest/v1/notes",
         {"id": "c4", "title": "t", "colour": "red"}, 400, "PGRST204"),
        ("unparsable filter -> 400 PGRST100", "GET", "/rest/v1/notes?id=approx.1", None,
         400, "PGRST100"),
        ("PUT is not implemented here -> 405 PGRST117", "PUT", "/rest/v1/notes?id=eq.n1",
         {"id": "n1", "title": "t"}, 405, "PGRST117"),
    ]
    for name, method, path, body, status, code in errors:
        r = api.call(method, path, body, ALICE)
        shape = (isinstance(r.json(), dict)
                 and set(r.json()) == {"code", "details", "hint", "message"})
        check(name, r.status == status and shape and r.json()["code"] == code, r)
    r = api.call("POST", "/rest/v1/notes", token=ALICE, raw=b'{"id": "x", "title": ')
    check("malformed JSON -> 400 PGRST102", r.status == 400 and r.json()["code"] == "PGRST102", r)

    # --- ETag and 304
    r1 = api.call("GET", "/rest/v1/notes?order=id", token=ALICE)
    etag = r1.header("ETag") or ""
    r2 = api.call("GET", "/rest/v1/notes?order=id", token=ALICE, headers={"If-None-Match": etag})
    check("GET 200 carries a strong ETag", r1.status == 200 and etag.startswith('"'), r1)
    check("If-None-Match with that ETag -> 304, no body",
          r2.status == 304 and r2.body == b"" and r2.header("ETag") == etag, r2)
    api.call("PATCH", "/rest/v1/notes?id=eq.n2", {"done": True}, ALICE)
    r3 = api.call("GET", "/rest/v1/notes?order=id", token=ALICE, headers={"If-None-Match": etag})
    check("after a write the same If-None-Match -> 200 with a new ETag",
          r3.status == 200 and r3.header("ETag") not in (None, etag), r3)

    # --- Idempotency-Key
    key = {"Idempotency-Key": "k-insert"}
    r1 = api.call("POST", "/rest/v1/notes", {"id": "i1", "title": "once"}, ALICE, {**rep, **key})
    r2 = api.call("POST", "/rest/v1/notes", {"id": "i1", "title": "once"}, ALICE, {**rep, **key})
    check("a repeated POST with the same key replays 201 and the stored body",
          r1.status == 201 and r2.status == 201 and r2.body == r1.body
          and r2.header("Idempotent-Replayed") == "true"
          and r1.header("Idempotent-Replayed") is None, (r1, r2))
    check("one idempotency_keys row, one note",
          count("SELECT count(*) FROM idempotency_keys WHERE key = 'k-insert'") == 1
          and count("SELECT count(*) FROM notes WHERE id = 'i1'") == 1)
    patch = {"Idempotency-Key": "k-patch"}
    api.call("PATCH", "/rest/v1/notes?id=eq.i1", {"title": "first"}, ALICE, patch)
    api.call("PATCH", "/rest/v1/notes?id=eq.i1", {"title": "second"}, ALICE)
    r = api.call("PATCH", "/rest/v1/notes?id=eq.i1", {"title": "first"}, ALICE, patch)
    check("a replayed PATCH is not applied again (204 replayed, later write kept)",
          r.status == 204 and r.header("Idempotent-Replayed") == "true"
          and count("SELECT count(*) FROM notes WHERE id = 'i1' AND title = 'second'") == 1, r)
    r = api.call("POST", "/rest/v1/notes", {"id": "i9", "title": "other"}, ALICE, key)
    check("the same key with a different request -> 422", r.status == 422, r)
    r = api.call("POST", "/rest/v1/notes", {"id": "i1", "title": "once"}, BOB, key)
    check("the same key from another role -> 422, nothing replayed to bob", r.status == 422, r)
    bad = {"Idempotency-Key": "k-error"}
    api.call("POST", "/rest/v1/notes", {"id": "e1", "title": ""}, ALICE, bad)
    check("a refused write stores no key (the write and its key roll back together)",
          count("SELECT count(*) FROM idempotency_keys WHERE key = 'k-error'") == 0)

    # Concurrent duplicates: the first holds its transaction open (POST /_test/slow); the
    # second waits on the key's primary key, then replays.
    api.call("POST", "/_test/slow", {"seconds": 0.6, "count": 1})
    results: dict[str, Response] = {}

    def send(name: str) -> None:
        results[name] = api.call("POST", "/rest/v1/notes", {"id": "cc", "title": "race"}, ALICE,
                                 {**rep, "Idempotency-Key": "k-race"})

    first = threading.Thread(target=send, args=("first",))
    first.start()
    time.sleep(0.2)
    second = threading.Thread(target=send, args=("second",))
    second.start()
    first.join()
    second.join()
    check("concurrent duplicate key: both 201, the second replayed, one row",
          results["first"].status == 201 and results["second"].status == 201
          and results["second"].header("Idempotent-Replayed") == "true"
          and results["first"].body == results["second"].body
          and count("SELECT count(*) FROM notes WHERE id = 'cc'") == 1, results)
    burst: list[Response] = []
    threads = [threading.Thread(target=lambda: burst.append(api.call(
        "POST", "/rest/v1/notes", {"id": "burst", "title": "x"}, ALICE,
        {"Idempotency-Key": "k-burst"}))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    check("8 simultaneous requests with one key: all 201, exactly one applied",
          [r.status for r in burst] == [201] * 8
          and sum(r.header("Idempotent-Replayed") is None for r in burst) == 1
          and count("SELECT count(*) FROM notes WHERE id = 'burst'") == 1, burst)

    # --- injected failures
    api.call("POST", "/_test/fail", {"status": 503, "retry_after": 2, "count": 2})
    r1 = api.call("GET", "/rest/v1/notes", token=ALICE)
    r2 = api.call("POST", "/rest/v1/notes", {"id": "f503", "title": "t"}, ALICE)
    r3 = api.call("GET", "/rest/v1/notes", token=ALICE)
    check("/_test/fail: the next 2 requests answer 503 with Retry-After: 2",
          r1.status == 503 and r2.status == 503 and r1.header("Retry-After") == "2", (r1, r2))
    check("... without touching the database, and the third is served",
          count("SELECT count(*) FROM notes WHERE id = 'f503'") == 0 and r3.status == 200, r3)

    api.call("POST", "/_test/fail", {"after_commit": True})
    r = api.call("GET", "/rest/v1/notes", token=ALICE)
    check("after_commit leaves reads alone", r.status == 200, r)
    lost = {"Idempotency-Key": "k-lost"}
    r1 = api.call("POST", "/rest/v1/notes", {"id": "lost", "title": "t"}, ALICE, {**rep, **lost})
    check("after_commit: the connection drops without an answer", r1.status is None, r1)
    check("... but the write was committed",
          count("SELECT count(*) FROM notes WHERE id = 'lost'") == 1)
    r2 = api.call("POST", "/rest/v1/notes", {"id": "lost", "title": "t"}, ALICE, {**rep, **lost})
    check("... and the retry with the same key replays 201, still one row",
          r2.status == 201 and r2.header("Idempotent-Replayed") == "true" and ids(r2) == ["lost"]
          and count("SELECT count(*) FROM notes WHERE id = 'lost'") == 1, r2)

    # --- token expiry
    api.call("POST", "/_test/expire", {"token": ALICE})
    r = api.call("GET", "/rest/v1/notes", token=ALICE)
    check("an expired token: 401 PGRST303 'JWT expired', WWW-Authenticate invalid_token",
          r.status == 401 and r.json()["code"] == "PGRST303"
          and r.json()["message"] == "JWT expired"
          and (r.header("WWW-Authenticate") or "").startswith('Bearer error="invalid_token"'), r)
    check("... other tokens still work", api.call("GET", "/rest/v1/notes", token=BOB).status == 200)
    api.call("POST", "/_test/renew", {"token": ALICE})
    check("after /_test/renew the token works again",
          api.call("GET", "/rest/v1/notes", token=ALICE).status == 200)

    # --- request log
    log = api.call("GET", "/_test/requests").json()
    lost_entries = [e for e in log if e["idempotency_key"] == "k-lost"]
    check("/_test/requests logs method, path, key, status, replayed, dropped",
          len(lost_entries) == 2 and lost_entries[0]["dropped"] and lost_entries[0]["status"] == 201
          and lost_entries[1]["replayed"] and lost_entries[1]["method"] == "POST"
          and lost_entries[1]["path"] == "/rest/v1/notes", lost_entries)

    # --- PostgreSQL down and back
    subprocess.run([str(HERE / "pgcluster"), "stop", str(cluster)], check=True)
    r = api.call("GET", "/rest/v1/notes", token=ALICE)
    check("PostgreSQL stopped: 503 PGRST000", r.status == 503 and r.json()["code"] == "PGRST000", r)
    check("... health says database: false",
          api.call("GET", "/_test/health").json() == {"ok": True, "database": False})
    subprocess.run([str(HERE / "pgcluster"), "start", str(cluster)], check=True,
                   stdout=subprocess.DEVNULL)
    r = api.call("GET", "/rest/v1/notes?id=eq.n1", token=ALICE)
    check("PostgreSQL restarted: served again", r.status == 200 and ids(r) == ["n1"], r)

    # --- the change feed (Sources/SovariaPostgREST/ChangeFeed.sql)
    def feed(after: int, token: str = ALICE, headers: dict[str, str] | None = None) -> Response:
        return api.call("GET", f"/rest/v1/sovaria_feed?table=eq.notes&position=gt.{after}&order=position",
                        token=token, headers=headers)

    def naive(after: int) -> Response:  # the log read by position alone, as every log-based feed first did
        return api.call("GET", f"/rest/v1/sovaria_changes?table=eq.notes&position=gt.{after}&order=position",
                        token=ALICE)

    api.call("POST", "/_test/reset")
    with psycopg.connect(db) as first, psycopg.connect(db) as second:
        first.execute("SET ROLE alice")
        second.execute("SET ROLE alice")
        first.execute("INSERT INTO lists (id, name) VALUES ('l-feed', 'x')")  # takes its id first
        first.execute("INSERT INTO notes (id, title) VALUES ('f1', 'first')")
        second.execute("INSERT INTO notes (id, title) VALUES ('f2', 'second')")
        second.commit()
        seen_naive = naive(0).json()
        seen_feed = feed(0).json()
        first.commit()
    check("out of order: the feed holds back a commit while an older transaction runs",
          seen_feed == [], seen_feed)
    checkpoint = max(row["position"] for row in seen_naive) if seen_naive else 0
    check("... a reader of positions alone sees the later one and skips the earlier for good",
          [row["key"] for row in seen_naive] == ["f2"] and naive(checkpoint).json() == [], seen_naive)
    rows = feed(0).json()
    check("... the feed serves both once both committed, the earlier first",
          [(row["key"], row["op"]) for row in rows] == [("f1", "upsert"), ("f2", "upsert")]
          and rows[0]["row"]["title"] == "first", rows)
    last = rows[-1]["position"]
    with psycopg.connect(db) as first, psycopg.connect(db) as second:
        first.execute("SET ROLE alice")
        second.execute("SET ROLE alice")
        first.execute("INSERT INTO lists (id, name) VALUES ('l-same', 'same row')")  # the lower position
        second.execute("UPDATE notes SET title = 'second, renamed' WHERE id = 'f2'")
        second.commit()
        first.execute("UPDATE notes SET title = 'renamed last' WHERE id = 'f2'")  # after, on the row
        first.commit()
    same = feed(last).json()
    titles = [row["row"]["title"] for row in same if row["key"] == "f2"]
    check("one row changed by two transactions out of order: each change carries the newest state "
          "(both served: the one made last is at the lower position)",
          len(titles) == 2 and titles[-1] == "renamed last"
          and same[0]["position"] < same[-1]["position"], same)
    last = same[-1]["position"]
    for title in ["w1", "w2", "w3", "w4", "w5"]:
        api.call("PATCH", "/rest/v1/notes?id=eq.f2", {"title": title}, token=ALICE)
    backlog = feed(last).json()
    r = api.call("GET", f"/rest/v1/sovaria_feed?table=eq.notes&position=gt.{last}&order=position&limit=1",
                 token=ALICE, headers={"Prefer": "count=exact"})
    check("a row written five times while a reader was away is served once, with its last state, and counted once",
          [(row["key"], row["row"]["title"]) for row in backlog] == [("f2", "w5")]
          and r.header("Content-Range") == "0-0/1", (backlog, r.header("Content-Range")))
    last = backlog[-1]["position"]
    with psycopg.connect(db) as running, psycopg.connect(db, autocommit=True) as writer:
        writer.execute("SET ROLE alice")
        writer.execute("UPDATE notes SET title = 'before the open one' WHERE id = 'f2'")
        running.execute("INSERT INTO lists (id, name) VALUES ('l-hold', 'x')")  # open, holding the horizon
        writer.execute("UPDATE notes SET title = 'held back' WHERE id = 'f2'")
        held = feed(last).json()
        check("a change whose later change is held back (above the horizon) is still served, lending it "
              "the newest state",
              [(row["key"], row["row"]["title"]) for row in held] == [("f2", "held back")], held)
        running.rollback()
    after = feed(held[-1]["position"] if held else last).json()
    check("... and the held change is served at its turn once the horizon passes it",
          [(row["key"], row["row"]["title"]) for row in after] == [("f2", "held back")], after)
    last = after[-1]["position"] if after else last
    with psycopg.connect(db, autocommit=True) as admin:
        admin.execute("UPDATE notes SET owner = 'bob' WHERE id = 'f1'")
    check("a row given to bob leaves alice's feed as a delete",
          [(row["key"], row["op"]) for row in feed(last).json()] == [("f1", "delete")], feed(last))
    check("... and reaches bob's as an upsert, with nothing of alice's",
          [(row["key"], row["op"]) for row in feed(0, BOB).json()] == [("f1", "upsert")], feed(0, BOB))
    r = feed(0, token="")
    check("no token: the feed is refused (401)", r.status == 401, r)
    served = max(row["position"] for row in feed(0).json())
    r = api.call("GET", "/rest/v1/notes?select=id", token=ALICE)
    check("db-pre-request sovaria_pre_request: an answer says the position it is current to",
          (r.header("Sovaria-Position") or "").isdigit() and int(r.header("Sovaria-Position")) >= served,
          (r.header("Sovaria-Position"), served))
    with psycopg.connect(db) as running:
        running.execute("INSERT INTO lists (id, name) VALUES ('l-open', 'x')")  # a transaction left open
        held = int(api.call("GET", "/rest/v1/notes?select=id", token=ALICE).header("Sovaria-Position") or 0)
        api.call("POST", "/rest/v1/lists", {"id": "l-after", "name": "after the open one"}, token=ALICE)
        logged = api.call("GET", "/rest/v1/sovaria_changes?table=eq.lists&order=position", token=ALICE).json()
        check("... below a transaction still running, and held there while it runs",
              int(api.call("GET", "/rest/v1/notes?select=id", token=ALICE).header("Sovaria-Position") or -1)
              == held and held < max(row["position"] for row in logged), (held, logged))
        running.rollback()
    wrote = api.call("POST", "/rest/v1/notes", {"id": "f6", "title": "where am I"}, token=ALICE)
    logged = [row["position"] for row in feed(0).json() if row["key"] == "f6"]
    check("a write's answer says the position of its change (Sovaria-Write-Position, from the trigger)",
          wrote.status == 201 and logged == [int(wrote.header("Sovaria-Write-Position") or -1)]
          and wrote.header("Sovaria-Position") is not None, (wrote.header("Sovaria-Write-Position"), logged))
    r = api.call("GET", "/rest/v1/sovaria_feed?select=p:position,k:key,o:op,r:row&table=eq.notes&limit=1",
                 token=ALICE)
    check("select renames columns as PostgREST does (alias:column)",
          r.status == 200 and sorted(r.json()[0]) == ["k", "o", "p", "r"], r)
    total = len(feed(0).json())
    r = api.call("GET", "/rest/v1/sovaria_feed?table=eq.notes&position=gt.0&order=position&limit=1",
                 token=ALICE, headers={"Prefer": "count=exact"})
    check("Prefer: count=exact: 206 and the total in Content-Range, as PostgREST answers",
          total >= 3 and r.status == 206 and r.header("Content-Range") == f"0-0/{total}"
          and len(r.json()) == 1, (total, r, r.header("Content-Range")))
    r = api.call("GET", "/rest/v1/sovaria_feed?table=eq.notes&position=gt.0&order=position",
                 token=ALICE, headers={"Prefer": "count=exact"})
    check("... 200 when the answer holds them all",
          r.status == 200 and r.header("Content-Range") == f"0-{total - 1}/{total}",
          (r, r.header("Content-Range")))
    api.call("POST", "/rest/v1/notes", {"id": "f7", "title": "compacted"}, token=ALICE)
    with psycopg.connect(db) as first, psycopg.connect(db) as second:  # the out-of-order pair again
        first.execute("SET ROLE alice")
        second.execute("SET ROLE alice")
        first.execute("INSERT INTO lists (id, name) VALUES ('l-compact', 'compact')")
        second.execute("UPDATE notes SET title = 'second' WHERE id = 'f7'")
        second.commit()
        first.execute("UPDATE notes SET title = 'last' WHERE id = 'f7'")
        first.commit()
    with psycopg.connect(db, autocommit=True) as admin:
        logged = admin.execute("SELECT count(*) FROM sovaria_changes").fetchone()[0]
        before = {who: feed(0, token).json() for who, token in [("alice", ALICE), ("bob", BOB)]}
        first_batch = admin.execute("SELECT sovaria_compact_changes(2)").fetchone()[0]
        compacted = first_batch + admin.execute("SELECT sovaria_compact_changes()").fetchone()[0]
        left = admin.execute("SELECT count(*) FROM sovaria_changes").fetchone()[0]
    after = {who: feed(0, token).json() for who, token in [("alice", ALICE), ("bob", BOB)]}
    check("sovaria_compact_changes deletes the changes the feed steps over, at most the batch it is given, "
          "and no reader's feed changes (alice's delete of the row given to bob stays)",
          first_batch == 2 and compacted >= 5 and left == logged - compacted and after == before
          and ("f1", "delete") in [(row["key"], row["op"]) for row in after["alice"]]
          and [row["key"] for row in after["alice"]].count("f7") == 2, (compacted, before, after))

    started = time.monotonic()
    r = feed(10**18, headers={"Prefer": "wait=1"})
    check("long poll: an empty answer is held for the wait, and says it was",
          r.status == 200 and r.json() == [] and r.header("Preference-Applied") == "wait=1"
          and time.monotonic() - started >= 0.9, (r, r.header("Preference-Applied")))
    r = feed(10**18)
    check("... and without Prefer: wait, answered at once without the header",
          r.status == 200 and r.header("Preference-Applied") is None, r)
    latest = max(row["position"] for row in feed(0).json())
    waiter: dict[str, Response] = {}
    thread = threading.Thread(target=lambda: waiter.setdefault(
        "r", feed(latest, headers={"Prefer": "wait=30"})))
    thread.start()
    api.call("POST", "/rest/v1/notes", {"id": "f3", "title": "woken"}, token=ALICE)
    thread.join(35)
    r = waiter.get("r")
    check("... and a commit wakes it with the change",
          r is not None and [row["key"] for row in r.json()] == ["f3"], r)

    # A commit held back behind an older transaction that ends without writing a published
    # table, so nothing notifies when it ends: the waiting read still gets the change. (Should
    # the waiter read only after the older transaction ended, it gets the change at once: this
    # check can pass without the held-back path on a very slow machine, never fail by timing.)
    # The write waits until the waiter waits (`GET /_test/waiting`): a waiter that read after the
    # write's commit, before the older transaction ended, would otherwise find nothing to wake it.
    latest = max(row["position"] for row in feed(0).json())
    with psycopg.connect(db) as older:
        older.execute("SELECT pg_current_xact_id()")  # takes an id older than the write below
        thread = threading.Thread(target=lambda: waiter.__setitem__(
            "held", feed(latest, headers={"Prefer": "wait=30"})))
        thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not api.call("GET", "/_test/waiting").json()["waiting"]:
            time.sleep(0.02)
        api.call("POST", "/rest/v1/notes", {"id": "f5", "title": "held back"}, token=ALICE)
        time.sleep(0.5)  # the waiter is woken by the commit and finds it held back
        older.rollback()
    thread.join(35)
    r = waiter.get("held")
    check("... and a change held back behind an older transaction arrives when that one ends",
          r is not None and [row["key"] for row in r.json()] == ["f5"], r)

    # Long polls share the server's one LISTEN: a waiting client holds no session of its own.
    latest = max(row["position"] for row in feed(0).json())
    polls = [threading.Thread(target=lambda n=n: waiter.__setitem__(f"poll{n}", feed(
        latest, headers={"Prefer": "wait=30"}))) for n in range(3)]
    for poll in polls:
        poll.start()
    deadline = time.monotonic() + 30
    waiting = 0
    while time.monotonic() < deadline and waiting < 3:
        waiting = api.call("GET", "/_test/waiting").json()["waiting"]
        time.sleep(0.02)
    with psycopg.connect(db, autocommit=True) as watch:
        listening = watch.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'authenticator'"
            " AND query ILIKE 'LISTEN %%sovaria_changes%%'").fetchone()[0]
    api.call("POST", "/rest/v1/notes", {"id": "f3-woken-thrice", "title": "wakes three"}, token=ALICE)
    for poll in polls:
        poll.join(35)
    woken = [waiter.get(f"poll{n}") for n in range(3)]
    check("three long polls waiting share one LISTEN session, and one commit wakes them all",
          listening == 1 and waiting == 3 and all(r is not None and [row["key"] for row in r.json() or []] == ["f3-woken-thrice"] for r in woken),
          (listening, waiting, woken))

    with psycopg.connect(db, autocommit=True) as admin:
        admin.execute("TRUNCATE lists CASCADE")
    rows = api.call("GET", "/rest/v1/sovaria_feed?table=eq.lists&order=position", token=ALICE).json()
    check("a TRUNCATE of a published table leaves a 'trimmed' row",
          [row["op"] for row in rows or []][-1:] == ["trimmed"], rows)
    check("API users cannot run the feed's functions but the read-only position (no EXECUTE for PUBLIC)",
          count("SELECT count(*) FROM information_schema.routine_privileges WHERE routine_name LIKE 'sovaria%%'"
                " AND routine_name NOT IN ('sovaria_position', 'sovaria_pre_request')"
                " AND grantee IN ('PUBLIC', 'authenticated', 'alice', 'anon')") == 0)

    with psycopg.connect(db, autocommit=True) as admin:
        admin.execute("UPDATE sovaria_changes SET changed_at = changed_at - interval '2 days'")
        trimmed = admin.execute("SELECT sovaria_trim_changes('1 day')").fetchone()[0]
    rows = feed(0).json()
    check("trimming leaves a 'trimmed' row a reader from before it meets first",
          trimmed >= 4 and [row["op"] for row in rows] == ["trimmed"], (trimmed, rows))
    check("... and none for a reader past it", feed(rows[0]["position"]).json() == [])
    with psycopg.connect(db, autocommit=True) as admin:
        admin.execute("INSERT INTO notes (id, owner, title) VALUES ('f4', 'alice', 'after')")
        admin.execute("UPDATE sovaria_changes SET changed_at = changed_at - interval '2 days'")
        admin.execute("SELECT sovaria_trim_changes('1 day')")
    rows = feed(0).json()
    check("... a second trim keeps one 'trimmed' row per table, at the highest position it took",
          [row["op"] for row in rows] == ["trimmed"] and rows[0]["position"] > latest, rows)

    # --- reset
    api.call("POST", "/_test/reset")
    check("/_test/reset empties the tables, the keys and the log",
          count("SELECT (SELECT count(*) FROM notes) + (SELECT count(*) FROM lists)"
                " + (SELECT count(*) FROM idempotency_keys) + (SELECT count(*) FROM sovaria_changes)") == 0
          and api.call("GET", "/_test/requests").json() == [])


FEED_SQL = HERE.parent.parent / "Sources" / "SovariaPostgREST" / "ChangeFeed.sql"


def apply_feed_sql(conninfo: str) -> subprocess.CompletedProcess[str]:
    """ChangeFeed.sql applied to the database of `conninfo` by psql, stopping at the first error."""
    return subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", conninfo, "-f", str(FEED_SQL)],
                          capture_output=True, text=True)


def run_feed_sql_checks(db: str) -> None:
    """ChangeFeed.sql itself, through SQL (tables made here are not in the server's schema
    cache): who sees a change, the names it gives tables and triggers, the privileges it leaves."""
    def admin() -> psycopg.Connection:
        return psycopg.connect(db, autocommit=True)

    def feed_as(role: str, table: str) -> list[tuple[str, str, Any]]:
        """(key, op, row) of `table`'s changes as `role` reads the view, as the client asks it."""
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(f"SET ROLE {role}")
            return [tuple(row) for row in conn.execute(
                'SELECT key, op, row FROM sovaria_feed WHERE "table" = %s ORDER BY position', [table])]

    def publish(conn: psycopg.Connection, call: str) -> str | None:
        """Runs `SELECT sovaria_publish(…)`; the error's message, or None."""
        try:
            conn.execute(f"SELECT sovaria_publish({call})")
            return None
        except psycopg.Error as error:
            return str(error)

    def refusal(conn: psycopg.Connection, call: str) -> str | None:
        """Runs `SELECT sovaria_publish(…)`; the error's SQLSTATE, or None."""
        try:
            conn.execute(f"SELECT sovaria_publish({call})")
            return None
        except psycopg.Error as error:
            return error.sqlstate

    # A NULL owner: the table's policy shows the row to nobody, and so must the feed.
    with admin() as conn:
        conn.execute("CREATE TABLE memos (id text PRIMARY KEY, owner text, title text)")
        conn.execute("ALTER TABLE memos ENABLE ROW LEVEL SECURITY")
        conn.execute("CREATE POLICY memos_select ON memos FOR SELECT USING (owner = current_user)")
        conn.execute("GRANT SELECT ON memos TO authenticated")
        conn.execute("SELECT sovaria_publish('public.memos', key_column => 'id', visibility_column => 'owner')")
        conn.execute("INSERT INTO memos VALUES ('b1', 'bob', 'bob''s'), ('n1', NULL, 'unowned secret')")
        with psycopg.connect(db, autocommit=True) as alice:
            alice.execute("SET ROLE alice")
            rows = alice.execute("SELECT count(*) FROM memos").fetchone()[0]
    seen = feed_as("alice", "memos")
    check("a row whose owner is NULL: hidden by the table's policy, and from every reader's feed",
          rows == 0 and seen == [], (rows, seen))
    check("... the owner's rows still reach the owner alone",
          [key for key, _, _ in feed_as("bob", "memos")] == ["b1"], feed_as("bob", "memos"))
    with admin() as conn:
        conn.execute("UPDATE memos SET owner = 'alice' WHERE id = 'n1'")
        given = feed_as("alice", "memos")
        conn.execute("UPDATE memos SET owner = NULL WHERE id = 'n1'")
        taken = feed_as("alice", "memos")
    check("... a row given to alice then to nobody: it reaches her feed, then leaves it as a delete",
          [(key, op) for key, op, _ in given] == [("n1", "upsert")]
          and [(key, op) for key, op, _ in taken][-1:] == [("n1", "delete")], (given, taken))
    with admin() as conn:
        conn.execute("CREATE TABLE bulletins (id text PRIMARY KEY, body text)")
        conn.execute("GRANT SELECT ON bulletins TO authenticated")
        conn.execute("SELECT sovaria_publish('public.bulletins', key_column => 'id')")
        conn.execute("INSERT INTO bulletins VALUES ('p1', 'for all')")
        conn.execute("TRUNCATE bulletins")
    check("... a table published without a visibility column is every reader's, its TRUNCATE too",
          [(key, op) for key, op, _ in feed_as("alice", "bulletins")] == [("p1", "upsert"), ("", "trimmed")]
          and feed_as("bob", "bulletins") == feed_as("alice", "bulletins"), feed_as("alice", "bulletins"))
    with admin() as conn:
        refused = publish(conn, "'public.memos', key_column => 'id', visibility_column => 'ownr'")
    check("publishing a visibility column the table lacks is refused (its rows would all be NULL-owned)",
          refused is not None and "ownr" in refused, refused)
    # A key two rows may share (review after issue 62): each change carries its key's newest state,
    # which could be the other row's, so the feed would put one row in the other's place.
    with admin() as conn:
        conn.execute("CREATE TABLE entries (org text, id text, owner text, PRIMARY KEY (org, id))")
        conn.execute("CREATE TABLE ledger (org text, id text, owner text, PRIMARY KEY (org, id))")
        conn.execute("CREATE UNIQUE INDEX ledger_id ON ledger (id)")
        conn.execute("CREATE TABLE drafts (id text, owner text)")
        conn.execute("CREATE UNIQUE INDEX drafts_live_id ON drafts (id) WHERE owner IS NOT NULL")
        shared_key = publish(conn, "'public.entries', key_column => 'id', visibility_column => 'owner'")
        partial = publish(conn, "'public.drafts', key_column => 'id', visibility_column => 'owner'")
        unique_key = publish(conn, "'public.ledger', key_column => 'id', visibility_column => 'owner'")
        conn.execute("CREATE VIEW ledger_view AS SELECT * FROM ledger")
        of_view = refusal(conn, "'public.ledger_view', key_column => 'id', visibility_column => 'owner'")
        left_alone = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid IN"
                                  " ('public.entries'::regclass, 'public.drafts'::regclass)"
                                  " AND NOT tgisinternal").fetchone()[0]
    check("publishing a key column that no unique index holds alone (one column of a primary key, a"
          " partial unique index) is refused, nothing changed; a column made UNIQUE is published",
          shared_key is not None and "unique index" in shared_key and partial is not None
          and "unique index" in partial and unique_key is None and left_alone == 0,
          (shared_key, partial, unique_key, left_alone))
    check("publishing a view is refused as not a table (wrong_object_type 42809)", of_view == "42809", of_view)

    # Teams (issue 62): a table published through a membership table.
    with admin() as conn:
        conn.execute("CREATE TABLE crew (crew_id text, who text, PRIMARY KEY (crew_id, who))")
        conn.execute("CREATE TABLE plans (id text PRIMARY KEY, crew text, title text)")
        conn.execute("CREATE TABLE chores (id text PRIMARY KEY, crew text)")
        conn.execute("INSERT INTO crew VALUES ('c1', 'alice')")
        no_team_column = publish(conn, "'public.plans', 'id', membership => 'public.crew',"
                                       " membership_user_column => 'who', membership_team_column => 'crew_id'")
        no_user_column = publish(conn, "'public.plans', 'id', 'crew', membership => 'public.crew',"
                                       " membership_user_column => 'user', membership_team_column => 'crew_id'")
        published = publish(conn, "'public.plans', 'id', 'crew', membership => 'public.crew',"
                                  " membership_user_column => 'who', membership_team_column => 'crew_id'")
        other_columns = publish(conn, "'public.chores', 'id', 'crew', membership => 'public.crew',"
                                      " membership_user_column => 'crew_id', membership_team_column => 'who'")
    check("publishing through a membership table without a team column, or naming a column it lacks, is refused;"
          " a second table through it with other columns too",
          no_team_column is not None and "visibility_column" in no_team_column
          and no_user_column is not None and '"user"' in no_user_column
          and published is None and other_columns is not None and "other columns" in other_columns,
          (no_team_column, no_user_column, published, other_columns))
    # Cheap writes (issue 62, item 1): the row trigger logs with static SQL (no EXECUTE per row:
    # its INSERT is planned once). The log's two indexes are checked below, after an upgrade.
    with admin() as conn:
        row_trigger = conn.execute("SELECT prosrc FROM pg_proc WHERE proname = 'sovaria_record_row'").fetchone()[0]
    check("the row trigger logs with static SQL (no EXECUTE)", "EXECUTE" not in row_trigger.upper()
          and "INSERT INTO" in row_trigger.upper(), row_trigger[:300])

    def chores_state(conn: psycopg.Connection) -> tuple[Any, ...]:
        """The triggers on `chores`, and whether `sovaria_published()` lists it."""
        return (conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.chores'::regclass"
                             " AND NOT tgisinternal").fetchone()[0],
                conn.execute("SELECT count(*) FROM sovaria_published() WHERE tab = 'public.chores'::regclass")
                .fetchone()[0])

    with admin() as conn:
        before = chores_state(conn)
        missing_table = refusal(conn, "'public.chores', 'id', 'crew', membership => 'public.nobody',"
                                      " membership_user_column => 'who', membership_team_column => 'crew_id'")
        missing_column = refusal(conn, "'public.chores', 'id', 'crew', membership => 'public.crew',"
                                       " membership_user_column => 'whom', membership_team_column => 'crew_id'")
        after = chores_state(conn)
    check("a membership rule naming a missing table or column is a typed SQL error (undefined_table 42P01,"
          " undefined_column 42703), and the table is left as it was: no trigger, not published",
          missing_table == "42P01" and missing_column == "42703" and before == after == (0, 0),
          (missing_table, missing_column, before, after))
    # A team column whose text is not its JSON text (review after issue 62): the triggers name a
    # `char(4)` team 'c1' as 'c1  ' (`->>`), and publishing named the members it found as 'c1'
    # (`::text`), so a member since before publishing never saw her team's changes, and
    # publishing again ended her period. And an array of teams (a row shared with several) is
    # refused: its changes would name the array, which no member is in.
    with admin() as conn:
        conn.execute("CREATE TABLE squads (squad char(4), who text, PRIMARY KEY (squad, who))")
        conn.execute("CREATE TABLE drills (id text PRIMARY KEY, squad char(4))")
        conn.execute("CREATE TABLE tagged (id text PRIMARY KEY, squads text[])")
        conn.execute("INSERT INTO squads VALUES ('s1', 'alice')")
        padded = publish(conn, "'public.drills', 'id', 'squad', membership => 'public.squads',"
                               " membership_user_column => 'who', membership_team_column => 'squad'")
        conn.execute("INSERT INTO drills VALUES ('d1', 's1')")
        again = publish(conn, "'public.drills', 'id', 'squad', membership => 'public.squads',"
                              " membership_user_column => 'who', membership_team_column => 'squad'")
        squad_periods = [tuple(row) for row in conn.execute(
            "SELECT team, joined, left_at FROM sovaria_memberships WHERE membership = 'public.squads'")]
        tagged_before = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.tagged'::regclass"
                                     " AND NOT tgisinternal").fetchone()[0]
        of_arrays = refusal(conn, "'public.tagged', 'id', 'squads', membership => 'public.squads',"
                                  " membership_user_column => 'who', membership_team_column => 'squad'")
        tagged_after = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.tagged'::regclass"
                                    " AND NOT tgisinternal").fetchone()[0]
    check("a member of a char(4) team since before publishing sees its change, and publishing again"
          " keeps her period",
          padded is None and again is None and feed_as("alice", "drills") == [("d1", "upsert", {"id": "d1", "squad": "s1  "})]
          and squad_periods == [("s1  ", 0, None)], (padded, again, feed_as("alice", "drills"), squad_periods))
    check("a team column that is an array (a row shared with several teams) is refused"
          " (feature_not_supported 0A000), the table left without a trigger",
          of_arrays == "0A000" and tagged_before == tagged_after == 0, (of_arrays, tagged_before, tagged_after))
    with admin() as conn:
        conn.execute("INSERT INTO plans VALUES ('p1', 'c1', 'for c1')")
        conn.execute("UPDATE crew SET crew_id = 'c2' WHERE who = 'alice'")  # alice moves to c2
        conn.execute("INSERT INTO plans VALUES ('p2', 'c1', 'after she left c1'), ('p3', 'c2', 'for c2')")
        periods_alice = [tuple(row) for row in conn.execute(
            "SELECT team, joined = 0, left_at IS NULL FROM sovaria_memberships WHERE membership = 'public.crew'"
            " ORDER BY joined")]
    moved = [(key, op) for key, op, _ in feed_as("alice", "plans")]
    check("a member since before publishing sees her team's change; a move to another team leaves (a marker),"
          " joins (a marker), and shows the new team's changes alone",
          moved == [("p1", "upsert"), ("", "trimmed"), ("", "trimmed"), ("p3", "upsert")]
          and periods_alice == [("c1", True, False), ("c2", False, True)], (moved, periods_alice))
    check("... another user sees none of it", feed_as("bob", "plans") == [], feed_as("bob", "plans"))
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("SET ROLE bob")
        bobs_periods = conn.execute("SELECT count(*) FROM sovaria_memberships").fetchone()[0]
    check("... and reads no one's membership periods but his own", bobs_periods == 0, bobs_periods)
    # Joining while older transactions run (an outside review after issue 62): s1 (the oldest)
    # moves a row to team B after s2 (younger) wrote it in team A, and alice then joins A. A
    # period begun below the transactions running at her join (tried, and reverted) served her
    # s2's change, whose newest state she could see was the team-A one: B's row. It begins at the
    # join's own position, so she gets only her marker.
    with admin() as conn:
        conn.execute("CREATE TABLE moved_crew (team text, who text, PRIMARY KEY (team, who))")
        conn.execute("CREATE TABLE moved_docs (id text PRIMARY KEY, team text, body text)")
        conn.execute("SELECT sovaria_publish('public.moved_docs', 'id', 'team', membership => 'public.moved_crew',"
                     " membership_user_column => 'who', membership_team_column => 'team')")
        conn.execute("INSERT INTO moved_docs VALUES ('m1', 'A', 'first')")
        with psycopg.connect(db) as s1, psycopg.connect(db) as s3:
            s1.execute("SELECT pg_current_xact_id()")
            s3.execute("SELECT pg_current_xact_id()")  # holds the feed back until the end
            conn.execute("UPDATE moved_docs SET body = 'written in A' WHERE id = 'm1'")  # s2
            s1.execute("UPDATE moved_docs SET team = 'B' WHERE id = 'm1'")
            s1.commit()
            conn.execute("INSERT INTO moved_crew VALUES ('A', 'alice')")
            s3.commit()
    moved_seen = [(key, op, row) for key, op, row in feed_as("alice", "moved_docs")]
    check("a member who joins a team while an older transaction moves a row out of it never reads that row",
          moved_seen == [("", "trimmed", None)], moved_seen)
    # Leaving (review of issue 62): a change a transaction makes before it removes the member, and
    # one a transaction that took its id before the removal makes after it, commit once the user
    # is no longer in the team: neither reaches them.
    with admin() as conn:
        conn.execute("INSERT INTO crew VALUES ('c5', 'carol')")
        with conn.transaction():
            conn.execute("INSERT INTO plans VALUES ('s1', 'c5', 'written as carol leaves')")
            conn.execute("DELETE FROM crew WHERE who = 'carol' AND crew_id = 'c5'")
        conn.execute("INSERT INTO crew VALUES ('c5', 'carol')")
        with admin() as early:
            early.autocommit = False
            early.execute("SELECT pg_current_xact_id()")  # takes its id before the removal
            conn.execute("DELETE FROM crew WHERE who = 'carol' AND crew_id = 'c5'")
            early.execute("INSERT INTO plans VALUES ('s2', 'c5', 'written after carol left')")
            early.commit()
    carols = [(key, op) for key, op, _ in feed_as("carol", "plans")]
    check("a change made in the transaction that removes a member, or by an older one after it, never"
          " reaches that member; the markers of each join and leave do",
          not {"s1", "s2"} & {key for key, _ in carols} and carols.count(("", "trimmed")) == 4, carols)
    # Publishing again reconciles the periods with the membership table: a member removed while the
    # table was published without it leaves, one added meanwhile joins from then on.
    with admin() as conn:
        conn.execute("INSERT INTO crew VALUES ('c6', 'carol')")
        conn.execute("SELECT sovaria_publish('public.plans', 'id', 'crew')")  # the membership's trigger goes
        conn.execute("DELETE FROM crew WHERE who = 'carol' AND crew_id = 'c6'")
        conn.execute("INSERT INTO crew VALUES ('c6', 'bob')")
        conn.execute("INSERT INTO plans VALUES ('g0', 'c6', 'while no trigger followed the members')")
        again = publish(conn, "'public.plans', 'id', 'crew', membership => 'public.crew',"
                              " membership_user_column => 'who', membership_team_column => 'crew_id'")
        conn.execute("INSERT INTO plans VALUES ('g1', 'c6', 'after publishing again')")
    carols_now = [(key, op) for key, op, _ in feed_as("carol", "plans")]
    bobs_now = [(key, op) for key, op, _ in feed_as("bob", "plans")]
    check("publishing through the membership table again ends the period of a member removed meanwhile"
          " (a marker for them) and begins one for a member added meanwhile, from then on",
          again is None and "g1" not in {key for key, _ in carols_now} and carols_now[-1:] == [("", "trimmed")]
          and [key for key, _ in bobs_now if key] == ["g1"], (again, carols_now, bobs_now))
    before_truncate = feed_as("bob", "plans")
    with admin() as conn:
        conn.execute("TRUNCATE crew")
        open_periods = conn.execute(
            "SELECT count(*) FROM sovaria_memberships WHERE membership = 'public.crew' AND left_at IS NULL").fetchone()[0]
    after_truncate = feed_as("bob", "plans")
    check("a TRUNCATE of the membership table ends every period and is a must-refetch for every reader",
          open_periods == 0 and after_truncate == before_truncate + [("", "trimmed", None)],
          (open_periods, after_truncate))
    with admin() as conn:
        applied = apply_feed_sql(db)
        conn.execute("INSERT INTO crew VALUES ('c3', 'bob')")  # bob joins: his marker after the TRUNCATE's
        after_reapply = [(key, op) for key, op, _ in feed_as("bob", "plans")]
        conn.execute("SELECT sovaria_publish('public.plans', 'id', 'crew')")  # now the owner's column
        triggers = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'crew'::regclass").fetchone()[0]
    check("ChangeFeed.sql applied again keeps a membership table's trigger; publishing the table without it"
          " drops the trigger",
          applied.returncode == 0 and after_reapply == [(key, op) for key, op, _ in after_truncate] + [("", "trimmed")]
          and triggers == 0,
          (applied.stderr[-300:], after_reapply, triggers))

    # Names: a table name of 63 bytes (PostgreSQL's longest), published twice.
    long_name = "t" * 63
    with admin() as conn:
        conn.execute(f"CREATE TABLE {long_name} (id text PRIMARY KEY)")
        conn.execute(f"GRANT SELECT ON {long_name} TO authenticated")
        first = publish(conn, f"'public.{long_name}', key_column => 'id'")
        again = publish(conn, f"'public.{long_name}', key_column => 'id'")
        if first is None:
            conn.execute(f"INSERT INTO {long_name} VALUES ('x')")
            conn.execute(f"TRUNCATE {long_name}")
    check("a table name of 63 bytes is published (its triggers' names do not collide), twice",
          first is None and again is None
          and [(key, op) for key, op, _ in feed_as("alice", long_name)] == [("x", "upsert"), ("", "trimmed")],
          (first, again, feed_as("alice", long_name) if first is None else None))

    # Schemas: a.notes and b.notes are two tables, and neither is public.notes.
    with admin() as conn:
        for schema in ("sa", "sb"):
            conn.execute(f"CREATE SCHEMA {schema}")
            conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO authenticated")
            conn.execute(f"CREATE TABLE {schema}.notes (id text PRIMARY KEY, owner text, title text)")
            conn.execute(f"GRANT SELECT ON {schema}.notes TO authenticated")
            conn.execute(f"SELECT sovaria_publish('{schema}.notes', 'id', 'owner')")
            conn.execute(f"INSERT INTO {schema}.notes VALUES ('{schema}1', 'alice', 'in {schema}')")
        public_notes = [key for key, _, _ in feed_as("alice", "notes")]
    check("two schemas' tables of one name are two feeds, named schema.table; public's is the bare name",
          [key for key, _, _ in feed_as("alice", "sa.notes")] == ["sa1"]
          and [key for key, _, _ in feed_as("alice", "sb.notes")] == ["sb1"]
          and not {"sa1", "sb1"} & set(public_notes), (feed_as("alice", "sa.notes"), public_notes))
    with admin() as conn:
        conn.execute("CREATE SCHEMA api")
        conn.execute("CREATE TABLE api.orders (id text PRIMARY KEY, owner text)")
        conn.execute("CREATE TABLE sa.orders (id text PRIMARY KEY, owner text)")
        named = publish(conn, "'api.orders', 'id', 'owner', feed_name => 'orders'")
        clash = publish(conn, "'sa.orders', 'id', 'owner', feed_name => 'orders'")
        if named is None:
            conn.execute("INSERT INTO api.orders VALUES ('o1', 'alice')")
    check("feed_name names a table of another default schema; a second table under that name is refused",
          named is None and clash is not None and "already published" in clash
          and [key for key, _, _ in feed_as("alice", "orders")] == ["o1"], (named, clash))

    # Writes (issue 62): one header per statement naming its last change, nothing for a statement
    # that changed nothing, one NOTIFY per transaction and table, and none unless asked for.
    with admin() as conn:
        for table, notify in (("loud", "true"), ("quiet", "false")):
            conn.execute(f"CREATE TABLE {table} (id text PRIMARY KEY, owner text, title text)")
            conn.execute(f"SELECT sovaria_publish('public.{table}', 'id', 'owner', notify => {notify})")
        published = {row[0]: row[1] for row in conn.execute(
            "SELECT feed_name, notifies FROM sovaria_published() WHERE feed_name IN ('loud', 'quiet')")}
    check("sovaria_published says which tables notify (notify => true), and none does by default",
          published == {"loud": True, "quiet": False}, published)
    with admin() as conn, conn.transaction():
        conn.execute("UPDATE quiet SET title = 'none' WHERE false")
        untouched = conn.execute("SELECT current_setting('response.headers', true),"
                                 " pg_current_xact_id_if_assigned()").fetchone()
        conn.execute("INSERT INTO quiet VALUES ('q1', 'alice', 'a'), ('q2', 'alice', 'b'), ('q3', 'alice', 'c')")
        header = conn.execute("SELECT current_setting('response.headers', true)").fetchone()[0]
        logged = conn.execute("SELECT max(position) FROM sovaria_changes WHERE \"table\" = 'quiet'"
                              " AND position / 4194304 = pg_current_xact_id()::text::bigint").fetchone()[0]
        conn.execute("UPDATE quiet SET id = 'q4' WHERE id = 'q3'")
        moved = conn.execute("SELECT current_setting('response.headers', true)").fetchone()[0]
    check("a statement that changes nothing sets no header and takes no transaction id",
          untouched[0] in (None, "") and untouched[1] is None, untouched)
    check("... a statement of three rows sets one Sovaria-Write-Position, its last change's",
          json.loads(header or "[]") == [{"Sovaria-Write-Position": str(logged)}], (header, logged))
    check("... the next statement's replaces it",
          json.loads(moved or "[]") == [{"Sovaria-Write-Position": str(logged + 2)}], (moved, logged))
    check("... a row moved to another key leaves its old key (a delete) before it reaches the new one",
          [(key, op) for key, op, _ in feed_as("alice", "quiet")][-2:] == [("q3", "delete"), ("q4", "upsert")],
          feed_as("alice", "quiet"))
    heard: list[str] = []
    with psycopg.connect(db, autocommit=True) as listener, admin() as conn:
        listener.execute("LISTEN sovaria_changes")
        listener.add_notify_handler(lambda notice: heard.append(notice.payload))
        with conn.transaction():
            conn.execute("INSERT INTO loud VALUES ('l1', 'alice', 'a')")
            conn.execute("UPDATE loud SET title = 'b' WHERE id = 'l1'")
            conn.execute("INSERT INTO loud VALUES ('l2', 'alice', 'a'), ('l3', 'alice', 'a')")
            conn.execute("DELETE FROM loud WHERE id = 'l2'")
            conn.execute("INSERT INTO quiet VALUES ('q5', 'alice', 'a')")
        # A second transaction as a marker: notifications come in commit order, so every one of
        # the first transaction's has come once this one's has.
        conn.execute("INSERT INTO loud VALUES ('l4', 'alice', 'marker')")
        deadline = time.monotonic() + 30
        while heard.count("loud") < 2 and time.monotonic() < deadline:
            select.select([listener.fileno()], [], [], 1)
            listener.execute("SELECT 1")
    check("a transaction of four statements on a table published with notify => true notifies once;"
          " one published without it, never", heard == ["loud", "loud"], heard)
    truncated_heard: list[str] = []
    with psycopg.connect(db, autocommit=True) as listener, admin() as conn:
        conn.execute("CREATE TABLE shouts (id text PRIMARY KEY, owner text)")
        conn.execute("SELECT sovaria_publish('public.shouts', 'id', 'owner', notify => true)")
        listener.execute("LISTEN sovaria_changes")
        listener.add_notify_handler(lambda notice: truncated_heard.append(notice.payload))
        conn.execute("TRUNCATE shouts")
        conn.execute("INSERT INTO shouts VALUES ('s1', 'alice')")  # the marker, as above
        deadline = time.monotonic() + 30
        while truncated_heard.count("shouts") < 2 and time.monotonic() < deadline:
            select.select([listener.fileno()], [], [], 1)
            listener.execute("SELECT 1")
    check("a TRUNCATE of a table published with notify => true notifies too (review after issue 62)",
          truncated_heard == ["shouts", "shouts"], truncated_heard)

    # What publishing refuses, and what it takes (an outside review after issue 62): each refusal
    # is a typed error that leaves the table without a trigger.
    def triggers_on(conn: psycopg.Connection, table: str) -> int:
        return conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal",
                            [table]).fetchone()[0]

    with admin() as conn:
        conn.execute("CREATE TABLE slots (id int PRIMARY KEY DEFERRABLE INITIALLY DEFERRED, owner text)")
        conn.execute("CREATE TABLE slugs (pk serial PRIMARY KEY, slug text UNIQUE, owner text)")
        conn.execute("CREATE TABLE moments (at timestamptz PRIMARY KEY, owner text)")
        conn.execute("CREATE TABLE shared_notes (id text PRIMARY KEY, owners text[])")
        conn.execute("CREATE TABLE padded_notes (id text PRIMARY KEY, owner char(8))")
        conn.execute("CREATE TABLE padded_crew (team text, who char(8), PRIMARY KEY (team, who))")
        conn.execute("CREATE TABLE int_crew (team bigint, who text, PRIMARY KEY (team, who))")
        conn.execute("CREATE TABLE padded_docs (id text PRIMARY KEY, team char(4))")
        conn.execute("CREATE TABLE int_docs (id text PRIMARY KEY, team int)")
        # Domains over domains: what is under them counts (a review of the first version, which
        # looked one domain deep).
        conn.execute("CREATE DOMAIN moment1 AS timestamptz")
        conn.execute("CREATE DOMAIN moment2 AS moment1")
        conn.execute("CREATE DOMAIN label1 AS text")
        conn.execute("CREATE DOMAIN label2 AS label1")
        conn.execute("CREATE DOMAIN given_id AS text NOT NULL")
        conn.execute("CREATE TYPE shade AS ENUM ('red', 'blue')")
        conn.execute("CREATE TABLE moments2 (at moment2 PRIMARY KEY, owner text)")
        conn.execute("CREATE TABLE given (id given_id UNIQUE, owner text)")
        conn.execute("CREATE TABLE labelled_docs (id text PRIMARY KEY, team label2)")
        conn.execute("CREATE TABLE shaded_docs (id text PRIMARY KEY, team shade)")
        conn.execute("CREATE TABLE counted_docs (id text PRIMARY KEY, team numeric(10, 0))")
        conn.execute("CREATE TABLE text_crew (team text, who text, PRIMARY KEY (team, who))")
        # Settings-dependent text in an array or a range (a review after issue 62).
        conn.execute("CREATE TABLE float_keys (id float8[] PRIMARY KEY, owner text)")
        conn.execute("CREATE TABLE spans (at tstzrange PRIMARY KEY, owner text)")
        conn.execute("CREATE TABLE json_keys (k jsonb PRIMARY KEY, owner text)")
        refused = {
            "deferred key": refusal(conn, "'public.slots', 'id', 'owner'"),
            "nullable key": refusal(conn, "'public.slugs', 'slug', 'owner'"),
            "timestamptz key": refusal(conn, "'public.moments', 'at', 'owner'"),
            "array owner": refusal(conn, "'public.shared_notes', 'id', 'owners'"),
            "char(n) owner": refusal(conn, "'public.padded_notes', 'id', 'owner'"),
            "char(n) member": refusal(conn, "'public.int_docs', 'id', 'team', membership => 'public.padded_crew',"
                                            " membership_user_column => 'who', membership_team_column => 'team'"),
            "char(4) team, text members": refusal(
                conn, "'public.padded_docs', 'id', 'team', membership => 'public.crew',"
                      " membership_user_column => 'who', membership_team_column => 'crew_id'"),
            "timestamptz key under two domains": refusal(conn, "'public.moments2', 'at', 'owner'"),
            "float8[] key": refusal(conn, "'public.float_keys', 'id', 'owner'"),
            "tstzrange key": refusal(conn, "'public.spans', 'at', 'owner'"),
            "jsonb key": refusal(conn, "'public.json_keys', 'k', 'owner'"),
        }
        left_alone = {table: triggers_on(conn, table) for table in (
            "slots", "slugs", "moments", "shared_notes", "padded_notes", "int_docs", "padded_docs", "moments2",
            "float_keys", "spans", "json_keys")}
        taken = {
            "int team, bigint members": refusal(
                conn, "'public.int_docs', 'id', 'team', membership => 'public.int_crew',"
                      " membership_user_column => 'who', membership_team_column => 'team'"),
            "numeric(10,0) team, bigint members": refusal(
                conn, "'public.counted_docs', 'id', 'team', membership => 'public.int_crew',"
                      " membership_user_column => 'who', membership_team_column => 'team'"),
            "text under two domains, text members": refusal(
                conn, "'public.labelled_docs', 'id', 'team', membership => 'public.text_crew',"
                      " membership_user_column => 'who', membership_team_column => 'team'"),
            "enum team, text members": refusal(
                conn, "'public.shaded_docs', 'id', 'team', membership => 'public.text_crew',"
                      " membership_user_column => 'who', membership_team_column => 'team'"),
            "key of a NOT NULL domain": refusal(conn, "'public.given', 'id', 'owner'"),
        }
    expected = {"deferred key": "22023", "nullable key": "22023", "timestamptz key": "22023",
                "array owner": "0A000", "char(n) owner": "22023", "char(n) member": "22023",
                "char(4) team, text members": "42804", "timestamptz key under two domains": "22023",
                "float8[] key": "22023", "tstzrange key": "22023", "jsonb key": "22023"}
    check("publishing refuses a deferred or nullable key, a key whose text depends on settings (under domains"
          " too, in an array or a range), a jsonb key (whose string '1' and number 1 are one text), an array or"
          " char(n) owner, a char(n) member and a char(n) team beside"
          " another type, with typed errors, nothing changed",
          refused == expected and set(left_alone.values()) == {0}, (refused, left_alone))
    check("... and takes team columns whose texts agree (integers of two sizes, numeric(10,0) and bigint, text"
          " under two domains and text, an enum and text) and a key of a NOT NULL domain",
          set(taken.values()) == {None}, taken)

    # A writer's output settings never reach the row the feed serves to others: a writer's
    # extra_float_digits = -15 logged 123.456 as 100 (a review after issue 62).
    with admin() as conn:
        conn.execute("CREATE TABLE priced (id text PRIMARY KEY, owner text, price float8, blob bytea, span interval,"
                     " stay daterange)")
        conn.execute("SELECT sovaria_publish('public.priced', 'id', 'owner')")
        conn.execute("INSERT INTO priced VALUES ('p1', 'alice', 123.456, '\\x0102', '1 day 2 hours',"
                     " '[2024-02-01,2024-02-03)')")
        written_as = conn.execute("SELECT to_jsonb(p) FROM priced p").fetchone()[0]
        conn.execute("SET extra_float_digits = -15")
        conn.execute("SET bytea_output = escape")
        conn.execute("SET IntervalStyle = sql_standard")
        conn.execute("SET DateStyle = 'SQL, DMY'")
        conn.execute("UPDATE priced SET owner = owner WHERE id = 'p1'")
    priced = feed_as("alice", "priced")
    check("a writer's extra_float_digits, bytea_output, IntervalStyle and DateStyle never reach the row the feed"
          " serves",
          len(priced) == 1 and priced[0][2] == written_as and written_as["price"] == 123.456, (priced, written_as))

    # Columns renamed since publishing: a membership table's user column (every leave looked
    # like no change, and a member who left went on reading the team), a table's owner column
    # (its rows would be nobody's): the write is refused (a review after issue 62).
    with admin() as conn:
        conn.execute("CREATE TABLE renamed_crew (who text, team text, PRIMARY KEY (who, team))")
        conn.execute("CREATE TABLE renamed_docs (id text PRIMARY KEY, team text)")
        conn.execute("CREATE TABLE renamed_notes (id text PRIMARY KEY, owner text)")
        conn.execute("INSERT INTO renamed_crew VALUES ('bob', 't')")
        conn.execute("SELECT sovaria_publish('public.renamed_docs', 'id', 'team', membership => 'public.renamed_crew',"
                     " membership_user_column => 'who', membership_team_column => 'team')")
        conn.execute("SELECT sovaria_publish('public.renamed_notes', 'id', 'owner')")
        conn.execute("ALTER TABLE renamed_crew RENAME COLUMN who TO member_name")
        conn.execute("ALTER TABLE renamed_notes RENAME COLUMN owner TO owned_by")
        refused_writes = []
        for statement in ("DELETE FROM renamed_crew WHERE member_name = 'bob'",
                          "INSERT INTO renamed_notes VALUES ('n1', 'alice')"):
            try:
                conn.execute(statement)
                refused_writes.append(None)
            except psycopg.Error as error:
                refused_writes.append(error.sqlstate)
        bob_still = conn.execute("SELECT count(*) FROM renamed_crew").fetchone()[0]
        conn.execute("DROP TABLE renamed_docs, renamed_notes, renamed_crew")
    check("a write to a membership table or a published table whose published column was renamed since is refused"
          " (42703), so a member who leaves never goes on reading the team",
          refused_writes == ["42703", "42703"] and bob_still == 1, (refused_writes, bob_still))
    # Column privileges: the feed serves every column of a row, so a column hidden from a reader
    # by them would reach her (a review after issue 62).
    with admin() as conn:
        conn.execute("CREATE TABLE profiles (id text PRIMARY KEY, owner text, display_name text, fraud_score int)")
        conn.execute("GRANT SELECT (id, owner, display_name) ON profiles TO authenticated")
        conn.execute("CREATE TABLE open_profiles (id text PRIMARY KEY, owner text, fraud_score int)")
        conn.execute("GRANT SELECT ON open_profiles TO authenticated")
        conn.execute("GRANT UPDATE (owner) ON open_profiles TO authenticated")
        hidden = refusal(conn, "'public.profiles', 'id', 'owner'")
        whole = refusal(conn, "'public.open_profiles', 'id', 'owner'")
        conn.execute("REVOKE SELECT ON open_profiles FROM authenticated")
        conn.execute("GRANT SELECT (id, owner) ON open_profiles TO authenticated")
    hidden_apply = apply_feed_sql(db)
    with admin() as conn:
        conn.execute("DROP TABLE open_profiles")
    check("publishing a table some of whose columns a role may not read is refused (0A000); a table read whole"
          " (a column UPDATE grant beside) is published, and applying the file warns once its columns are hidden",
          hidden == "0A000" and whole is None
          and "may read the feed and only some of the columns of open_profiles" in hidden_apply.stderr,
          (hidden, whole, hidden_apply.stderr[-400:]))
    # A write naming one partition of a published table: it sets the write-position header as a
    # write through the table does (the partition had no statement trigger: a review after issue 62).
    with admin() as conn:
        conn.execute("CREATE TABLE parted (id int PRIMARY KEY, owner text) PARTITION BY RANGE (id)")
        conn.execute("CREATE TABLE parted_a PARTITION OF parted FOR VALUES FROM (0) TO (100)")
        conn.execute("SELECT sovaria_publish('public.parted', 'id', 'owner')")
        with conn.transaction():
            conn.execute("INSERT INTO parted_a VALUES (2, 'alice')")
            partition_header = conn.execute("SELECT current_setting('response.headers', true)").fetchone()[0]
    check("a write naming a partition of a published table sets the write-position header",
          partition_header is not None and "Sovaria-Write-Position" in partition_header, partition_header)
    # A trigger on the log runs as its owner with every logged row: applying the file refuses to
    # go on over one it did not make.
    with admin() as conn:
        conn.execute("CREATE FUNCTION nothing_trigger() RETURNS trigger LANGUAGE plpgsql AS"
                     " $$ BEGIN RETURN NULL; END $$")
        conn.execute("CREATE TRIGGER planted_on_log AFTER INSERT ON sovaria_changes FOR EACH ROW"
                     " EXECUTE FUNCTION nothing_trigger()")
    over_trigger = apply_feed_sql(db)
    with admin() as conn:
        conn.execute("DROP TRIGGER planted_on_log ON sovaria_changes")
    check("applying the file refuses to go on over a trigger on the log it did not make, naming it",
          over_trigger.returncode != 0 and "planted_on_log on sovaria_changes" in over_trigger.stderr,
          over_trigger.stderr[-300:])

    # A fourth review: ordinary schemas publishing refused, and holes in the newest checks.
    with admin() as conn:
        # A role that may not read the feed, given some columns: no matter (anon, step 5).
        conn.execute("CREATE ROLE column_reader")
        conn.execute("CREATE TABLE anon_profiles (id text PRIMARY KEY, owner text, email text)")
        conn.execute("GRANT SELECT ON anon_profiles TO authenticated")
        conn.execute("GRANT SELECT (id) ON anon_profiles TO column_reader")
        not_a_reader = refusal(conn, "'public.anon_profiles', 'id', 'owner'")
        # A type owned by a member of the table owner's role (migrations run by each developer).
        conn.execute("CREATE ROLE app_owner")
        conn.execute("CREATE ROLE teammate IN ROLE app_owner")
        conn.execute("GRANT CREATE ON SCHEMA public TO app_owner, teammate")
        conn.execute("SET ROLE teammate")
        conn.execute("CREATE TYPE team_mood AS ENUM ('ok')")
        conn.execute("SET ROLE app_owner")
        conn.execute("CREATE TABLE team_moods (id int PRIMARY KEY, owner text, m team_mood)")
        conn.execute("RESET ROLE")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM app_owner, teammate")
        teammates_type = refusal(conn, "'public.team_moods', 'id', 'owner'")
        # A table readers may not read: published, with a warning naming them (the first five:
        # a database with a role per user has many).
        conn.execute("CREATE TABLE staff_notes (id int PRIMARY KEY, body text)")
        for reader in range(6):
            conn.execute(f"CREATE ROLE many_reader_{reader} IN ROLE authenticated")
        unread_warnings: list[str] = []
        conn.add_notice_handler(lambda notice: unread_warnings.append(notice.message_primary or ""))
        unread = refusal(conn, "'public.staff_notes', 'id'")
        # Inheritance children: their writes fire their own triggers, which publishing does not give.
        conn.execute("CREATE TABLE kept_notes (id int PRIMARY KEY, owner text)")
        conn.execute("CREATE TABLE kept_notes_2024 () INHERITS (kept_notes)")
        inherited = refusal(conn, "'public.kept_notes', 'id', 'owner'")
        # Another table named sovaria_changes, in another schema, is no feed.
        conn.execute("CREATE SCHEMA audit_trail")
        conn.execute("CREATE TABLE audit_trail.sovaria_changes (id int)")
    named_alike = apply_feed_sql(db)
    with admin() as conn:
        conn.execute("DROP SCHEMA audit_trail CASCADE")
        conn.execute("DROP TABLE staff_notes, kept_notes_2024, kept_notes, anon_profiles, team_moods")
        conn.execute("DROP TYPE team_mood")
        conn.execute("DROP ROLE column_reader, teammate, app_owner, "
                     + ", ".join(f"many_reader_{reader}" for reader in range(6)))
    check("publishing takes a table a role that may not read the feed reads in part, and a type owned by a member"
          " of the table owner's role (a fourth review)", not_a_reader is None and teammates_type is None,
          (not_a_reader, teammates_type))
    check("... warns of the roles that may read the feed and not the table (five by name), at publish and when the"
          " file is applied, refuses a table with inheritance children (0A000), and the file applies beside another"
          " schema's table named sovaria_changes",
          unread is None and any("authenticated" in warning and "may read the feed and not staff_notes" in warning
                                 and " more may read" in warning and warning.split(" and ")[0].count(", ") == 4
                                 for warning in unread_warnings)
          and inherited == "0A000" and named_alike.returncode == 0
          and "may read the feed and not staff_notes, which is published" in named_alike.stderr,
          (unread, unread_warnings, inherited, named_alike.stderr[-300:]))
    # A partition detached from one published table and attached to another: applying the file
    # gives it the second table's statement triggers (it kept the first's: its TRUNCATE marked
    # the first table, and the second's readers kept its rows).
    with admin() as conn:
        conn.execute("CREATE TABLE moved_from (id int PRIMARY KEY, owner text) PARTITION BY RANGE (id)")
        conn.execute("CREATE TABLE moved_to (id int PRIMARY KEY, owner text) PARTITION BY RANGE (id)")
        conn.execute("CREATE TABLE moved_part PARTITION OF moved_from FOR VALUES FROM (0) TO (100)")
        conn.execute("SELECT sovaria_publish('public.moved_from', 'id', 'owner')")
        conn.execute("SELECT sovaria_publish('public.moved_to', 'id', 'owner')")
        conn.execute("ALTER TABLE moved_from DETACH PARTITION moved_part")
        conn.execute("ALTER TABLE moved_to ATTACH PARTITION moved_part FOR VALUES FROM (0) TO (100)")
    moved_apply = apply_feed_sql(db)
    with admin() as conn:
        conn.execute("TRUNCATE moved_part")
        marked = [row[0] for row in conn.execute(
            "SELECT \"table\" FROM sovaria_changes WHERE op = 'trimmed' AND \"table\" IN ('moved_from', 'moved_to')")]
    check("a partition moved from one published table to another: once the file is applied, its TRUNCATE marks"
          " the table it is in now", moved_apply.returncode == 0 and marked == ["moved_to"], (marked,))
    # A membership write, then a statement on a published table that logs nothing: no header
    # (the membership trigger's changes were never announced, so the next statement named them).
    with admin() as conn:
        conn.execute("CREATE TABLE quiet_crew (team text, who text, PRIMARY KEY (team, who))")
        conn.execute("CREATE TABLE quiet_docs (id text PRIMARY KEY, team text)")
        conn.execute("SELECT sovaria_publish('public.quiet_docs', 'id', 'team', membership => 'public.quiet_crew',"
                     " membership_user_column => 'who', membership_team_column => 'team')")
        with conn.transaction():
            conn.execute("INSERT INTO quiet_crew VALUES ('t', 'bob')")
            conn.execute("UPDATE quiet_docs SET team = team WHERE false")
            quiet_header = conn.execute("SELECT current_setting('response.headers', true)").fetchone()[0]
    check("a statement that logs nothing after a membership write sets no write-position header",
          not quiet_header or "Sovaria-Write-Position" not in quiet_header, quiet_header)

    # A fifth review: two setups the feed serves otherwise than the table's policy would, each
    # said by a warning at publish.
    with admin() as conn:
        conn.execute("CREATE TABLE org_docs (id text PRIMARY KEY, org text)")
        conn.execute("ALTER TABLE org_docs ENABLE ROW LEVEL SECURITY")
        conn.execute("CREATE TABLE asked_crew (team text, who text, accepted boolean, PRIMARY KEY (team, who))")
        conn.execute("GRANT SELECT, INSERT ON asked_crew TO authenticated")
        conn.execute("CREATE TABLE asked_docs (id text PRIMARY KEY, team text)")
        # Neither warning where it is meant (a sixth review): a table whose policy shows every row,
        # and a role that bypasses row-level security (Supabase's service_role) writing members.
        conn.execute("CREATE TABLE open_posts (id text PRIMARY KEY, body text)")
        conn.execute("ALTER TABLE open_posts ENABLE ROW LEVEL SECURITY")
        conn.execute("CREATE POLICY open_posts_read ON open_posts FOR SELECT USING (true)")
        conn.execute("CREATE ROLE bypassing_admin BYPASSRLS")
        conn.execute("GRANT SELECT ON sovaria_changes, sovaria_feed TO bypassing_admin")
        conn.execute("CREATE TABLE admin_crew (team text, who text, PRIMARY KEY (team, who))")
        conn.execute("GRANT SELECT, INSERT, UPDATE ON admin_crew TO bypassing_admin")
        conn.execute("CREATE TABLE admin_docs (id text PRIMARY KEY, team text)")
        fifth: list[str] = []
        conn.add_notice_handler(lambda notice: fifth.append(notice.message_primary or ""))
        conn.execute("SELECT sovaria_publish('public.open_posts', 'id')")
        conn.execute("SELECT sovaria_publish('public.admin_docs', 'id', 'team', membership => 'public.admin_crew',"
                     " membership_user_column => 'who', membership_team_column => 'team')")
        meant_warnings = [warning for warning in fifth if "open_posts has row-level security" in warning
                          or "bypassing_admin" in warning]
        conn.execute("SELECT sovaria_publish('public.org_docs', 'id')")
        conn.execute("SELECT sovaria_publish('public.asked_docs', 'id', 'team', membership => 'public.asked_crew',"
                     " membership_user_column => 'who', membership_team_column => 'team')")
    check("publishing warns of a table under row-level security published without a visibility column, and of a"
          " membership table a feed reader may write (a fifth review)",
          any("org_docs has row-level security and is published without a visibility column" in warning
              for warning in fifth)
          and any("authenticated" in warning and "may read the feed and write the membership table" in warning
                  for warning in fifth), fifth)
    check("... and neither of a table whose policy shows every row (USING (true)) nor of a role that bypasses"
          " row-level security writing the membership table (a sixth review)", meant_warnings == [], meant_warnings)

    # A change number set by hand below 0 would log a change under positions already served.
    with admin() as conn:
        try:
            with conn.transaction():
                conn.execute("SET LOCAL sovaria.change_number = '-41943040'")
                conn.execute("INSERT INTO quiet VALUES ('q-low', 'alice', 'below')")
            low = None
        except psycopg.Error as error:
            low = error.sqlstate
        logged_low = conn.execute("SELECT count(*) FROM sovaria_changes WHERE key = 'q-low'").fetchone()[0]
    check("a change number set by hand below 0 is refused (program_limit_exceeded 54000), nothing logged",
          low == "54000" and logged_low == 0, (low, logged_low))

    # Partitioned tables: the partitions' clones of the row trigger are not tables of their own
    # (the membership trigger logged a marker for each, at one position, and every membership
    # write failed), and a TRUNCATE of one partition leaves a marker.
    with admin() as conn:
        conn.execute("CREATE TABLE part_crew (team text, who text, PRIMARY KEY (team, who))")
        conn.execute("CREATE TABLE part_docs (id int PRIMARY KEY, team text) PARTITION BY RANGE (id)")
        conn.execute("CREATE TABLE part_docs_low PARTITION OF part_docs FOR VALUES FROM (0) TO (100)")
        conn.execute("CREATE TABLE part_docs_high PARTITION OF part_docs FOR VALUES FROM (100) TO (200)")
        call = ("'public.part_docs', 'id', 'team', membership => 'public.part_crew',"
                " membership_user_column => 'who', membership_team_column => 'team'")
        first = refusal(conn, call)
        try:
            conn.execute("INSERT INTO part_crew VALUES ('p1', 'alice')")
            joined = None
        except psycopg.Error as error:
            joined = error.sqlstate
        again = refusal(conn, call)
        listed = [row[0] for row in conn.execute(
            "SELECT tab::text FROM sovaria_published() WHERE feed_name = 'part_docs'")]
        conn.execute("INSERT INTO part_docs VALUES (1, 'p1'), (150, 'p1')")
        conn.execute("TRUNCATE part_docs_high")
    part_feed = [(key, op) for key, op, _ in feed_as("alice", "part_docs")]
    check("a partitioned table published through a membership table: joining its team works, publishing"
          " again works, it alone is listed, and a TRUNCATE of one partition is a must-refetch",
          first is None and joined is None and again is None and listed == ["part_docs"]
          and part_feed[-3:] == [("1", "upsert"), ("150", "upsert"), ("", "trimmed")],
          (first, joined, again, listed, part_feed))
    # Applying the file over what an earlier version left: its membership trigger named each
    # partition as a table of its own, and the partitions had no TRUNCATE trigger. Made by hand
    # here, then the file applied: it makes both again (a review of the first fix).
    with admin() as conn:
        conn.execute("DROP TRIGGER sovaria_membership ON part_crew")
        conn.execute("CREATE TRIGGER sovaria_membership AFTER INSERT OR UPDATE OR DELETE ON part_crew FOR EACH ROW"
                     " EXECUTE FUNCTION sovaria_record_membership('who', 'team', 'public.part_crew',"
                     " 'part_docs', '', 'part_docs', '', 'part_docs', '')")
        for partition in ("part_docs_low", "part_docs_high"):
            conn.execute(f"DROP TRIGGER sovaria_changes_truncate ON {partition}")
        # A table published with a key that publishing would now refuse: left as it is.
        conn.execute("CREATE TABLE lost_key (id text PRIMARY KEY, owner text)")
        conn.execute("SELECT sovaria_publish('public.lost_key', 'id', 'owner')")
        conn.execute("ALTER TABLE lost_key DROP CONSTRAINT lost_key_pkey")
        # Periods an earlier version opened for a char(4) team by its text without padding.
        conn.execute("CREATE TABLE pad_crew (team char(4), who text, PRIMARY KEY (team, who))")
        conn.execute("CREATE TABLE pad_docs (id text PRIMARY KEY, team char(4))")
        conn.execute("INSERT INTO pad_crew VALUES ('k1', 'alice')")
        conn.execute("SELECT sovaria_publish('public.pad_docs', 'id', 'team', membership => 'public.pad_crew',"
                     " membership_user_column => 'who', membership_team_column => 'team')")
        conn.execute("UPDATE sovaria_memberships SET team = rtrim(team) WHERE membership = 'public.pad_crew'")
        # And a membership table renamed since: it stays the membership.
        conn.execute("CREATE TABLE gone_crew (team text, who text, PRIMARY KEY (team, who))")
        conn.execute("CREATE TABLE gone_docs (id text PRIMARY KEY, team text)")
        conn.execute("SELECT sovaria_publish('public.gone_docs', 'id', 'team', membership => 'public.gone_crew',"
                     " membership_user_column => 'who', membership_team_column => 'team')")
        conn.execute("ALTER TABLE gone_crew RENAME TO renamed_crew")
    reapplied = apply_feed_sql(db)
    with admin() as conn:
        try:
            conn.execute("INSERT INTO part_crew VALUES ('p2', 'alice')")
            rejoined = None
        except psycopg.Error as error:
            rejoined = error.sqlstate
        partition_triggers = conn.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgname = 'sovaria_changes_truncate'"
            " AND tgrelid IN ('part_docs_low'::regclass, 'part_docs_high'::regclass)").fetchone()[0]
        still_published = conn.execute(
            "SELECT count(*) FROM sovaria_published() WHERE tab = 'public.lost_key'::regclass").fetchone()[0]
        conn.execute("INSERT INTO pad_docs VALUES ('pd1', 'k1')")
        renamed_triggers = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'renamed_crew'::regclass"
                                        " AND NOT tgisinternal").fetchone()[0]
    check("applying the file again mends what an earlier version left on a partitioned table: a membership"
          " write works, and its partitions have their TRUNCATE triggers",
          reapplied.returncode == 0 and rejoined is None and partition_triggers == 2,
          (reapplied.stderr[-300:], rejoined, partition_triggers))
    check("... leaves a published table that publishing would now refuse as it was, and a renamed membership"
          " table with its triggers (they follow the table, not its name)",
          still_published == 1 and renamed_triggers == 2, (reapplied.stderr[-400:], still_published, renamed_triggers))
    pad_feed = [(key, op) for key, op, _ in feed_as("alice", "pad_docs")]
    check("... and brings periods an earlier version opened for a char(4) team to the team's padded text:"
          " its member is served the team's change",
          ("pd1", "upsert") in pad_feed, pad_feed)

    # A partitioned membership table: a second table is published through it, and a TRUNCATE of
    # one partition ends the periods it held (else alice kept reading the team she was removed
    # from).
    with admin() as conn:
        conn.execute("CREATE TABLE squad_list (team text, who text, PRIMARY KEY (team, who)) PARTITION BY LIST (team)")
        conn.execute("CREATE TABLE squad_list_q PARTITION OF squad_list FOR VALUES IN ('q')")
        conn.execute("CREATE TABLE squad_list_r PARTITION OF squad_list FOR VALUES IN ('r')")
        conn.execute("CREATE TABLE squad_plans (id text PRIMARY KEY, team text)")
        conn.execute("CREATE TABLE squad_notes (id text PRIMARY KEY, team text)")
        conn.execute("INSERT INTO squad_list VALUES ('q', 'alice'), ('r', 'bob')")
        through = ("membership => 'public.squad_list', membership_user_column => 'who',"
                   " membership_team_column => 'team'")
        plans = refusal(conn, f"'public.squad_plans', 'id', 'team', {through}")
        notes = refusal(conn, f"'public.squad_notes', 'id', 'team', {through}")
        conn.execute("INSERT INTO squad_plans VALUES ('before', 'q')")
        conn.execute("TRUNCATE squad_list_q")
        conn.execute("INSERT INTO squad_plans VALUES ('after', 'q'), ('for r', 'r')")
    squad_feed = [(key, op) for key, op, _ in feed_as("alice", "squad_plans")]
    bobs_squad = [(key, op) for key, op, _ in feed_as("bob", "squad_plans")]
    # The membership trigger runs as the log's owner: its TRUNCATE reads the table it fires on,
    # never what the name it saved resolves to now. A membership table's owner (not a superuser)
    # renamed the table and put a view with a function of hers in its name's place: the
    # TRUNCATE read the view as the owner, and her function ran as that owner (a fourth review).
    with admin() as conn:
        conn.execute("CREATE ROLE crew_owner")
        conn.execute("GRANT CREATE ON SCHEMA public TO crew_owner")
        conn.execute("CREATE TABLE owned_crew (team text, who text, PRIMARY KEY (team, who))")
        conn.execute("ALTER TABLE owned_crew OWNER TO crew_owner")
        conn.execute("CREATE TABLE owned_docs (id text PRIMARY KEY, team text)")
        conn.execute("SELECT sovaria_publish('public.owned_docs', 'id', 'team', membership => 'public.owned_crew',"
                     " membership_user_column => 'who', membership_team_column => 'team')")
        conn.execute("SET ROLE crew_owner")
        conn.execute("CREATE TABLE ran_as (who text)")
        conn.execute("GRANT INSERT ON ran_as TO PUBLIC")
        conn.execute("CREATE FUNCTION note_caller() RETURNS boolean LANGUAGE plpgsql AS"
                     " $$ BEGIN INSERT INTO public.ran_as VALUES (current_user); RETURN true; END $$")
        conn.execute("ALTER TABLE owned_crew RENAME TO owned_crew_real")
        conn.execute("CREATE VIEW owned_crew AS SELECT 't'::text AS team, 'x'::text AS who WHERE note_caller()")
        conn.execute("INSERT INTO owned_crew_real VALUES ('t', 'alice')")
        try:
            conn.execute("TRUNCATE owned_crew_real")
            swapped = None
        except psycopg.Error as error:
            swapped = error.sqlstate
        conn.execute("RESET ROLE")
        ran = [row[0] for row in conn.execute("SELECT who FROM ran_as")]
    check("a membership table's TRUNCATE never reads what its saved name resolves to now: with a view in its"
          " name's place, it reads the table it fires on, and no function of the view runs",
          swapped is None and ran == [], (swapped, ran))
    # Renamed, and the file applied again: its trigger stays and still follows who leaves.
    with admin() as conn:
        conn.execute("DROP VIEW owned_crew")
        conn.execute("INSERT INTO owned_crew_real VALUES ('t', 'bob')")
    kept = apply_feed_sql(db)
    with admin() as conn:
        conn.execute("DELETE FROM owned_crew_real WHERE who = 'bob'")
        conn.execute("INSERT INTO owned_docs VALUES ('after bob left', 't')")
    bob_after = [key for key, _, _ in feed_as("bob", "owned_docs")]
    check("a membership table renamed since publishing keeps its trigger when the file is applied again: a"
          " member who leaves it stops reading the team",
          kept.returncode == 0 and "after bob left" not in bob_after,
          (kept.returncode, kept.stderr[-300:], bob_after))
    # A table someone makes under the renamed one's name is not taken for it when the file is
    # applied (it took the triggers, and its rows became members: a fifth review).
    with admin() as conn:
        conn.execute("CREATE TABLE owned_crew (team text, who text)")
        conn.execute("INSERT INTO owned_crew VALUES ('t', 'mallory')")
    taken_over = apply_feed_sql(db)
    with admin() as conn:
        impostor = (conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.owned_crew'::regclass"
                                 " AND NOT tgisinternal").fetchone()[0],
                    conn.execute("SELECT count(*) FROM sovaria_memberships WHERE member = 'mallory'").fetchone()[0])
        conn.execute("DROP TABLE owned_crew")
        # Published again through its new name, as the warning says: its kept triggers are replaced.
        republished = refusal(conn, "'public.owned_docs', 'id', 'team', membership => 'public.owned_crew_real',"
                                    " membership_user_column => 'who', membership_team_column => 'team'")
        try:
            conn.execute("TRUNCATE owned_crew_real")
            truncated = None
        except psycopg.Error as error:
            truncated = error.sqlstate
    check("a table made under a renamed membership table's name gets neither its triggers nor members when the"
          " file is applied; publishing again through the new name works, and its TRUNCATE too",
          taken_over.returncode == 0 and impostor == (0, 0) and republished is None and truncated is None,
          (taken_over.returncode, impostor, republished, truncated))
    # The membership is the table its trigger is on, not a name (a sixth review): a partition
    # detached from it does not take its name (publishing again dropped the table's triggers and
    # left them off); a table someone makes under a renamed one's name is not it, though one of
    # two tables is published again through the new name; a name with a backslash and 000 in it
    # is read back whole.
    with admin() as conn:
        conn.execute("ALTER TABLE squad_list DETACH PARTITION squad_list_r")
        detached_publish = refusal(conn, "'public.squad_notes', 'id', 'team', membership => 'public.squad_list',"
                                         " membership_user_column => 'who', membership_team_column => 'team'")
        root_triggers = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'squad_list'::regclass"
                                     " AND tgname = 'sovaria_membership'").fetchone()[0]
        try:
            conn.execute("TRUNCATE squad_list_r")
            detached_truncate = None
        except psycopg.Error as error:
            detached_truncate = error.sqlstate
        conn.execute("CREATE TABLE two_crew (team text, who text, PRIMARY KEY (team, who))")
        conn.execute("INSERT INTO two_crew VALUES ('t', 'alice')")
        for table in ("two_docs_a", "two_docs_b"):
            conn.execute(f"CREATE TABLE {table} (id text PRIMARY KEY, team text)")
            conn.execute(f"SELECT sovaria_publish('public.{table}', 'id', 'team', membership => 'public.two_crew',"
                         " membership_user_column => 'who', membership_team_column => 'team')")
        conn.execute("ALTER TABLE two_crew RENAME TO two_crew_new")
        conn.execute("CREATE TABLE two_crew (team text, who text)")
        conn.execute("INSERT INTO two_crew VALUES ('t', 'mallory')")
        partial = refusal(conn, "'public.two_docs_a', 'id', 'team', membership => 'public.two_crew_new',"
                                " membership_user_column => 'who', membership_team_column => 'team'")
        impostor_triggers = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.two_crew'::regclass"
                                         " AND NOT tgisinternal").fetchone()[0]
        conn.execute("INSERT INTO two_docs_b VALUES ('b1', 't')")
        conn.execute('CREATE TABLE "x\\000y" (team text, who text, PRIMARY KEY (team, who))')
        conn.execute("CREATE TABLE slash_docs (id text PRIMARY KEY, team text)")
        slash_call = ("'public.slash_docs', 'id', 'team', membership => 'public.\"x\\000y\"',"
                      " membership_user_column => 'who', membership_team_column => 'team'")
        slashed = (refusal(conn, slash_call), refusal(conn, slash_call))
    check("a partition detached from a membership table leaves the table its triggers when a table is published"
          " through it again, and its own TRUNCATE fails (55000)",
          detached_publish is None and root_triggers == 1 and detached_truncate == "55000",
          (detached_publish, root_triggers, detached_truncate))
    check("publishing one of two tables again through a renamed membership table's new name gives a table made"
          " under the old name no trigger", partial is None and impostor_triggers == 0, (partial, impostor_triggers))
    check("a membership table named with a backslash and 000 is published, and published again",
          slashed == (None, None), slashed)
    with admin() as conn:
        of_partition = refusal(conn, "'public.slash_docs', 'id', 'team', membership => 'public.squad_list_q',"
                                     " membership_user_column => 'who', membership_team_column => 'team'")
        root_kept = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'squad_list'::regclass"
                                 " AND tgname = 'sovaria_membership'").fetchone()[0]
    check("a partition is refused as a membership table (22023: its partitioned table is the membership), and"
          " its table keeps its triggers (a seventh review)", of_partition == "22023" and root_kept == 1,
          (of_partition, root_kept))
    # A membership table dropped: applying the file ends its periods (its members kept reading
    # the team until a table was published through it again: an eighth review).
    with admin() as conn:
        conn.execute("CREATE TABLE short_crew (team text, who text, PRIMARY KEY (team, who))")
        conn.execute("CREATE TABLE short_docs (id text PRIMARY KEY, team text)")
        conn.execute("INSERT INTO short_crew VALUES ('t', 'bob')")
        conn.execute("SELECT sovaria_publish('public.short_docs', 'id', 'team', membership => 'public.short_crew',"
                     " membership_user_column => 'who', membership_team_column => 'team')")
        conn.execute("DROP TABLE short_crew")
    dropped_apply = apply_feed_sql(db)
    with admin() as conn:
        conn.execute("INSERT INTO short_docs VALUES ('after the drop', 't')")
        open_periods = conn.execute("SELECT count(*) FROM sovaria_memberships WHERE membership = 'public.short_crew'"
                                    " AND left_at IS NULL").fetchone()[0]
    after_drop = [(key, op) for key, op, _ in feed_as("bob", "short_docs")]
    check("a membership table dropped: applying the file ends its periods, with a must-refetch, and its members"
          " read no change after it",
          dropped_apply.returncode == 0 and open_periods == 0 and after_drop == [("", "trimmed")],
          (dropped_apply.returncode, open_periods, after_drop))
    # A partition published on its own, then its table: refused (publishing the table dropped the
    # partition's own triggers, and its feed vanished without a marker).
    with admin() as conn:
        conn.execute("CREATE TABLE zones (id int PRIMARY KEY, owner text) PARTITION BY RANGE (id)")
        conn.execute("CREATE TABLE zones_a PARTITION OF zones FOR VALUES FROM (0) TO (10)")
        conn.execute("SELECT sovaria_publish('public.zones_a', 'id', 'owner', feed_name => 'zones_a_own')")
        whole = refusal(conn, "'public.zones', 'id', 'owner'")
        own = conn.execute("SELECT count(*) FROM sovaria_published() WHERE feed_name = 'zones_a_own'").fetchone()[0]
    check("publishing a table one of whose partitions is published on its own is refused (duplicate_object"
          " 42710), and the partition's feed stays", whole == "42710" and own == 1, (whole, own))
    check("a partitioned membership table: a second table is published through it, and a TRUNCATE of one"
          " partition ends its periods (a must-refetch, and no change after it), and no other",
          plans is None and notes is None and squad_feed == [("before", "upsert"), ("", "trimmed")]
          and bobs_squad == [("", "trimmed"), ("for r", "upsert")],
          (plans, notes, squad_feed, bobs_squad))

    # Operators another role made in a schema of the caller's search path never run as the caller.
    # Publishing compared two regclass values with `<>`, which her `<>(regclass, regclass)` (an
    # exact match, where pg_catalog's is oid's) answered as the superuser who published; applying
    # the file compared an oid with a regproc (a review after issue 62).
    planted = [("ne", "<>", "regclass", "regclass", "a::oid <> b::oid"),
               ("eq", "=", "regclass", "regclass", "a::oid = b::oid"),
               ("eq_oid", "=", "oid", "regclass", "a = b::oid"),
               ("eq_proc", "=", "oid", "regproc", "a = b::oid")]
    with admin() as conn:
        conn.execute("CREATE ROLE planter")
        conn.execute("CREATE SCHEMA planted AUTHORIZATION planter")
        conn.execute("SET ROLE planter")
        conn.execute("CREATE TABLE planted.ran (who text, operator text)")
        conn.execute("GRANT INSERT ON planted.ran TO PUBLIC")
        for name, symbol, left, right, answer in planted:
            conn.execute(f"CREATE FUNCTION planted.{name}(a {left}, b {right}) RETURNS boolean LANGUAGE plpgsql AS"
                         f" $$ BEGIN INSERT INTO planted.ran VALUES (current_user, '{name}'); RETURN {answer}; END $$")
            conn.execute(f"CREATE OPERATOR planted.{symbol} (FUNCTION = planted.{name}, LEFTARG = {left},"
                         f" RIGHTARG = {right})")
        # Functions that match a call better than pg_catalog's VARIADIC "any" ones: the file's
        # first block called format(text, name) before it set its path, and sovaria_pre_request
        # (run by every API role) json_build_object(text, text) by the caller's path.
        for name, arguments, result in [("format", "a text, b name", "pg_catalog.format(a, b)"),
                                        ("json_build_object", "a text, b text", "pg_catalog.json_build_object(a, b)")]:
            conn.execute(f"CREATE FUNCTION planted.{name}({arguments}) RETURNS {'json' if 'json' in name else 'text'}"
                         f" LANGUAGE plpgsql AS $$ BEGIN INSERT INTO planted.ran VALUES (current_user, '{name}');"
                         f" RETURN {result}; END $$")
        conn.execute("GRANT USAGE ON SCHEMA planted TO PUBLIC")
        conn.execute("RESET ROLE")
        conn.execute("CREATE TABLE planted_notes (id text PRIMARY KEY, owner text)")
        conn.execute("SET search_path = public, planted")
        for _ in range(2):
            conn.execute("SELECT sovaria_publish('public.planted_notes', 'id', 'owner')")
        conn.execute("SELECT sovaria_trim_changes('1 day'), sovaria_compact_changes()")
        conn.execute("GRANT CREATE ON SCHEMA public TO planter")
    applied_planted = apply_feed_sql(psycopg.conninfo.make_conninfo(db, options="-c search_path=public,planted"))
    with admin() as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM planter")
        conn.execute("SET ROLE alice")
        conn.execute("SET search_path = public, planted")
        with conn.transaction():
            conn.execute("SELECT sovaria_pre_request()")
            pre_request_header = conn.execute("SELECT current_setting('response.headers')").fetchone()[0]
        conn.execute("RESET ROLE")
        ran_planted = sorted({tuple(row) for row in conn.execute("SELECT who, operator FROM planted.ran")})
    check("an operator or function another role made in a schema of the caller's search path never runs as the"
          " caller: not when publishing (twice), trimming or compacting, nor when the file is applied, nor in"
          " sovaria_pre_request (which still sets its header)",
          applied_planted.returncode == 0 and ran_planted == [] and "Sovaria-Position" in pre_request_header,
          (applied_planted.stderr[-300:], ran_planted, pre_request_header))
    check("... and applying the file warns of a role that may create objects in its schema",
          "planter" in applied_planted.stderr and "may create objects in the schema public" in applied_planted.stderr,
          applied_planted.stderr[-400:])

    # A type another role owns, in a published table: she could give it a cast to json, which the
    # row trigger's `to_jsonb` runs as the log's owner (a review after issue 62). Refused, as is a
    # type whose cast's function another role owns; the table's owner's own type is published.
    with admin() as conn:
        conn.execute("CREATE ROLE typesmith")
        conn.execute("GRANT USAGE, CREATE ON SCHEMA planted TO typesmith")
        conn.execute("SET ROLE typesmith")
        conn.execute("CREATE TYPE planted.smith_mood AS ENUM ('ok')")
        conn.execute("CREATE FUNCTION planted.smith_json(m planted.smith_mood) RETURNS json LANGUAGE plpgsql AS"
                     " $$ BEGIN INSERT INTO planted.ran VALUES (current_user, 'smith_json'); RETURN to_json(m::text);"
                     " END $$")
        conn.execute("CREATE CAST (planted.smith_mood AS json) WITH FUNCTION planted.smith_json(planted.smith_mood)")
        conn.execute("CREATE TYPE planted.own_mood AS ENUM ('ok')")
        conn.execute("CREATE TABLE planted.smiths_own (id text PRIMARY KEY, owner text, mood planted.own_mood)")
        conn.execute("RESET ROLE")
        conn.execute("CREATE TABLE smith_notes (id text PRIMARY KEY, owner text, moods planted.smith_mood[])")
        conn.execute("CREATE TYPE cast_mood AS ENUM ('ok')")
        conn.execute("CREATE FUNCTION cast_mood_json(m cast_mood) RETURNS json LANGUAGE sql AS $$ SELECT to_json(m::text) $$")
        conn.execute("ALTER FUNCTION cast_mood_json(cast_mood) OWNER TO typesmith")
        conn.execute("CREATE CAST (cast_mood AS json) WITH FUNCTION cast_mood_json(cast_mood)")
        conn.execute("CREATE TABLE cast_notes (id text PRIMARY KEY, owner text, mood cast_mood)")
        others_type = refusal(conn, "'public.smith_notes', 'id', 'owner'")
        others_cast = refusal(conn, "'public.cast_notes', 'id', 'owner'")
        own_type = refusal(conn, "'planted.smiths_own', 'id', 'owner'")
        conn.execute("INSERT INTO smith_notes VALUES ('s1', 'alice', '{ok}')")
        smith_ran = [tuple(row) for row in conn.execute("SELECT who, operator FROM planted.ran")]
        smith_triggers = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid IN ('smith_notes'::regclass,"
                                      " 'cast_notes'::regclass) AND NOT tgisinternal").fetchone()[0]
    check("publishing a table with a type another role owns (here in an array), whose cast to json the triggers"
          " would run as the log's owner, is refused (42501), nothing changed, and no function of hers runs",
          others_type == "42501" and smith_ran == [] and smith_triggers == 0, (others_type, smith_ran, smith_triggers))
    check("... so is a type whose cast's function another role owns; the table's owner's own type is published",
          others_cast == "42501" and own_type is None, (others_cast, own_type))
    # A table published before its type was another role's (or before publishing refused it, as
    # an upgraded database's): applying the file names it (a review after issue 62).
    with admin() as conn:
        conn.execute("CREATE TYPE given_mood AS ENUM ('ok')")
        conn.execute("CREATE TABLE given_notes (id text PRIMARY KEY, owner text, mood given_mood)")
        conn.execute("SELECT sovaria_publish('public.given_notes', 'id', 'owner')")
        conn.execute("ALTER TYPE given_mood OWNER TO typesmith")
    given_apply = apply_feed_sql(db)
    with admin() as conn:
        conn.execute("DROP TABLE given_notes")
    check("applying the file warns of a published table that publishing would refuse now (its type given to"
          " another role since), naming it",
          given_apply.returncode == 0 and "given_notes is published, and publishing would refuse it now"
          in given_apply.stderr and "owned by typesmith" in given_apply.stderr, given_apply.stderr[-500:])

    with admin() as conn:
        volatility = conn.execute(
            "SELECT provolatile FROM pg_proc WHERE proname = 'sovaria_pre_request'").fetchone()[0]
    check("sovaria_pre_request, which sets response.headers, is VOLATILE", volatility == "v", volatility)

    # Privileges as a Supabase project has them: every new function and table granted by name to
    # the API roles (ALTER DEFAULT PRIVILEGES), which REVOKE … FROM PUBLIC leaves in place.
    other = psycopg.conninfo.make_conninfo(db, dbname="sovaria_defaults")
    with admin() as conn:
        conn.execute("CREATE DATABASE sovaria_defaults")
    with psycopg.connect(other, autocommit=True) as conn:
        conn.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON FUNCTIONS TO anon, authenticated")
        conn.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO anon, authenticated")
    applied = [apply_feed_sql(other) for _ in range(2)]
    with psycopg.connect(other, autocommit=True) as conn:
        runnable = [tuple(row) for row in conn.execute(
            "SELECT routine_name, grantee FROM information_schema.routine_privileges"
            " WHERE routine_name LIKE 'sovaria%%' AND grantee IN ('PUBLIC', 'anon', 'authenticated')"
            " AND routine_name NOT IN ('sovaria_position', 'sovaria_pre_request') ORDER BY 1, 2")]
        writable = [tuple(row) for row in conn.execute(
            "SELECT table_name, grantee, privilege_type FROM information_schema.table_privileges"
            " WHERE table_name IN ('sovaria_changes', 'sovaria_feed', 'sovaria_memberships')"
            " AND grantee IN ('anon', 'authenticated')"
            " AND privilege_type <> 'SELECT' ORDER BY 1, 2, 3")]
        conn.execute("GRANT EXECUTE ON FUNCTION sovaria_trim_changes(interval) TO authenticated")
        conn.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO authenticated")
        conn.execute("CREATE TABLE t (id text PRIMARY KEY)")
        warnings: list[str] = []
        conn.add_notice_handler(lambda notice: warnings.append(notice.message_primary or ""))
        conn.execute("SELECT sovaria_publish('t', 'id')")
    check("applied under ALTER DEFAULT PRIVILEGES (Supabase): no API role may run publish/trim, or write the log",
          all(run.returncode == 0 for run in applied) and runnable == [] and writable == [],
          ([run.stderr[-300:] for run in applied], runnable, writable))
    check("... and a role given EXECUTE since is named by a warning at publish, as is one given TRIGGER on the log"
          " (GRANT ALL ON ALL TABLES)",
          any("authenticated" in warning and "sovaria_trim_changes" in warning for warning in warnings)
          and any("authenticated (TRIGGER on sovaria_changes)" in warning for warning in warnings), warnings)
    with admin() as conn:
        conn.execute("DROP DATABASE sovaria_defaults")


def run_owner_without_bypass_checks(db: str) -> None:
    """ChangeFeed.sql applied by a role that is no superuser (and may not bypass row-level
    security), in a schema of its own. It publishes only tables it owns (publishing again drops
    their triggers, which their owner alone may); the membership trigger and the periods' sync
    read the membership table with `row_security = off`, so a policy that hides its rows from the
    log's owner (FORCE ROW LEVEL SECURITY, a policy on the request's claims) fails the read
    instead of ending the periods of the members it hides."""
    other = psycopg.conninfo.make_conninfo(db, dbname="sovaria_owned")
    as_owner = psycopg.conninfo.make_conninfo(other, user="feed_owner")
    publish_rdocs = ("SELECT sovaria_publish('feed.rdocs', 'id', 'team', membership => 'public.rcrew',"
                     " membership_user_column => 'who', membership_team_column => 'team')")

    def attempt(conninfo: str, statement: str) -> psycopg.Error | None:
        try:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute(statement)
            return None
        except psycopg.Error as error:
            return error

    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE DATABASE sovaria_owned")
        conn.execute("CREATE ROLE feed_owner LOGIN")
        conn.execute("CREATE ROLE crew_admin")
    try:
        with psycopg.connect(other, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA feed AUTHORIZATION feed_owner")
            conn.execute("ALTER ROLE feed_owner IN DATABASE sovaria_owned SET search_path = feed")
            conn.execute("CREATE TABLE rcrew (team text, who text, PRIMARY KEY (team, who)) PARTITION BY LIST (team)")
            conn.execute("CREATE TABLE rcrew_a PARTITION OF rcrew FOR VALUES IN ('a')")
            conn.execute("CREATE TABLE rcrew_b PARTITION OF rcrew FOR VALUES IN ('b')")
            conn.execute("INSERT INTO rcrew VALUES ('a', 'alice'), ('b', 'bob')")
            for table in ("rcrew", "rcrew_a", "rcrew_b"):
                conn.execute(f"ALTER TABLE {table} OWNER TO crew_admin")
                conn.execute(f"GRANT SELECT, UPDATE, TRIGGER ON {table} TO feed_owner")
        applied = apply_feed_sql(as_owner)
        with psycopg.connect(as_owner, autocommit=True) as conn:
            conn.execute("CREATE TABLE feed.rdocs (id text PRIMARY KEY, team text)")
        not_owned = attempt(as_owner, publish_rdocs)
        by_superuser = attempt(other, publish_rdocs.replace("SELECT sovaria_publish", "SELECT feed.sovaria_publish"))
        with psycopg.connect(other, autocommit=True) as conn:
            untouched = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid IN ('rcrew'::regclass,"
                                     " 'feed.rdocs'::regclass) AND NOT tgisinternal").fetchone()[0]
            conn.execute("GRANT crew_admin TO feed_owner")
        first = attempt(as_owner, publish_rdocs)
        again = attempt(as_owner, publish_rdocs)
        reapplied = apply_feed_sql(as_owner)
        check("a superuser publishing through a table whose owner's rights the log's owner lacks is refused"
              " (42501): the log's owner could not make its triggers again (a review after issue 62)",
              by_superuser is not None and by_superuser.sqlstate == "42501"
              and "feed_owner (the log's owner, who applies ChangeFeed.sql) does not have" in str(by_superuser),
              str(by_superuser))
        check("applied by a role that is no superuser, in a schema of its own: publishing through a table it"
              " does not own is refused (42501), nothing changed; as a member of the owner's role it publishes,"
              " publishes again and applies the file again",
              applied.returncode == 0 and not_owned is not None and not_owned.sqlstate == "42501"
              and "whose rights feed_owner (publishing, and the log's owner) does not have" in str(not_owned) and untouched == 0 and first is None and again is None
              and reapplied.returncode == 0,
              (applied.stderr[-300:], str(not_owned), untouched, str(first), str(again), reapplied.stderr[-300:]))
        # The policy hides every row from the log's owner, its owner's rights notwithstanding.
        with psycopg.connect(other, autocommit=True) as conn:
            conn.execute("ALTER TABLE rcrew ENABLE ROW LEVEL SECURITY")
            conn.execute("ALTER TABLE rcrew FORCE ROW LEVEL SECURITY")
            conn.execute("CREATE POLICY rcrew_hidden ON rcrew USING (current_user <> 'feed_owner')")
        truncated = attempt(other, "TRUNCATE rcrew_a")
        republished = attempt(as_owner, publish_rdocs)
        with psycopg.connect(other, autocommit=True) as conn:
            open_periods = sorted(row[0] for row in conn.execute(
                "SELECT member FROM feed.sovaria_memberships WHERE left_at IS NULL"))
        check("a membership policy that hides rows from the log's owner fails a partition's TRUNCATE and a publish"
              " (42501, row-level security) instead of ending the periods of the members it hides",
              all(error is not None and error.sqlstate == "42501" and "row-level security" in str(error)
                  for error in (truncated, republished)) and open_periods == ["alice", "bob"],
              (str(truncated), str(republished), open_periods))
        # The log's owner loses the table owner's rights: applying the file names the table, and
        # fails with a typed error where it would make the membership triggers again.
        with psycopg.connect(other, autocommit=True) as conn:
            conn.execute("ALTER TABLE rcrew NO FORCE ROW LEVEL SECURITY")
            conn.execute("REVOKE crew_admin FROM feed_owner")
        lost = apply_feed_sql(as_owner)
        check("... and once the log's owner is no longer a member of the owner's role, applying the file warns of"
              " the table and fails with a typed error (42501) naming it, not a bare 'must be owner'",
              lost.returncode != 0 and "rcrew is published, and publishing would refuse it now" in lost.stderr
              and "may not make the triggers of the membership table public.rcrew again" in lost.stderr,
              lost.stderr[-600:])
    finally:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DROP DATABASE sovaria_owned")
            conn.execute("DROP ROLE feed_owner")
            conn.execute("DROP ROLE crew_admin")


def sql_statements(text: str) -> list[str]:
    """The top-level statements of a SQL file: split at each `;` outside a comment, a quoted
    string or identifier, and a dollar-quoted string (what psql sends one by one)."""
    statements: list[str] = []
    start = index = 0
    while index < len(text):
        if text.startswith("--", index):
            index = text.find("\n", index)
            index = len(text) if index < 0 else index + 1
        elif text[index] in "'\"":
            index = text.find(text[index], index + 1) + 1  # '' inside a string: two strings in a row
        elif (tag := re.match(r"\$[A-Za-z_]*\$", text[index:])) is not None:
            index = text.find(tag.group(0), index + len(tag.group(0))) + len(tag.group(0))
        elif text[index] == ";":
            statements.append(text[start:index + 1])
            start = index = index + 1
        else:
            index += 1
    return [statement for statement in statements if statement.strip(" \n;")]


def run_statement_by_statement_checks(db: str) -> None:
    """ChangeFeed.sql applied one statement at a time, each its own transaction (psql -f without
    -1): between two of its statements no role but the owner may run the functions that write the
    log as its owner. The trigger functions were open to PUBLIC from the statement that made them
    to the end of the file, and another role attached them to her own table in that moment (a
    review after issue 62); so was `sovaria_publish`."""
    other = psycopg.conninfo.make_conninfo(db, dbname="sovaria_statements")
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE DATABASE sovaria_statements")
        conn.execute("CREATE ROLE api_everything")
    try:
        statements = sql_statements(FEED_SQL.read_text())
        open_after: list[str] = []
        with psycopg.connect(other, autocommit=True) as conn:
            # As Supabase's projects have it: every table and function made here is given to
            # the API roles whole.
            conn.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO api_everything")
            conn.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON FUNCTIONS TO api_everything")
            for statement in statements:
                conn.execute(statement)
                runnable = [row[0] for row in conn.execute(
                    "SELECT p.proname FROM pg_proc p WHERE p.proname IN ('sovaria_record_row',"
                    " 'sovaria_record_statement', 'sovaria_record_membership', 'sovaria_publish')"
                    " AND (has_function_privilege('public', p.oid, 'EXECUTE')"
                    " OR has_function_privilege('api_everything', p.oid, 'EXECUTE'))"
                    " UNION ALL SELECT c.relname::text FROM pg_class c WHERE c.relname IN ('sovaria_changes',"
                    " 'sovaria_memberships') AND has_table_privilege('api_everything', c.oid,"
                    " 'INSERT, UPDATE, DELETE, TRUNCATE, TRIGGER')")]
                if runnable:
                    open_after.append(f"{statement.strip().splitlines()[0][:60]}: {runnable}")
        check("applied statement by statement under default privileges that give a role ALL, no statement leaves"
              " the functions that write the log as its owner runnable by another role, nor the log and the"
              f" periods writable or open to her triggers ({len(statements)} statements)",
              len(statements) > 40 and open_after == [], open_after[:5])
    finally:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DROP DATABASE sovaria_statements")
            conn.execute("DROP ROLE api_everything")


def run_search_path_checks(db: str) -> None:
    """ChangeFeed.sql applied in a schema other than public, in one transaction, by an applier
    whose search path was set for that transaction alone (a review after issue 62): the path is
    the applier's again after it; applied again from another path, it is refused rather than make
    a second feed; and `sovaria_pre_request` works with the feed's schema off the caller's path."""
    other = psycopg.conninfo.make_conninfo(db, dbname="sovaria_paths")
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE DATABASE sovaria_paths")
    try:
        with psycopg.connect(other, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA api")
        script = ("SET search_path = public;\nBEGIN;\nSET LOCAL search_path = api;\n"
                  f"\\i {FEED_SQL}\nSHOW search_path;\nCOMMIT;\nSHOW search_path;\n")
        in_transaction = subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", other],
                                        input=script, capture_output=True, text=True)
        paths = in_transaction.stdout.split()
        check("applied in one transaction after SET LOCAL search_path = api: the feed is made in api, and the"
              " path is api to the end of the transaction and the session's (public) after it",
              in_transaction.returncode == 0 and paths == ["api", "public"],
              (in_transaction.returncode, paths, in_transaction.stderr[-300:]))
        elsewhere = apply_feed_sql(other)
        with psycopg.connect(other, autocommit=True) as conn:
            made_in_public = conn.execute("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"
                                          " AND relname LIKE 'sovaria%%'").fetchone()[0]
            conn.execute("SET search_path = pg_catalog")
            try:
                with conn.transaction():
                    conn.execute("SELECT api.sovaria_pre_request()")
                    header = conn.execute("SELECT current_setting('response.headers')").fetchone()[0]
            except psycopg.Error as error:
                header = str(error)
        check("applied again with another first schema (public) while the feed is in api: refused (42710),"
              " nothing made in public",
              elsewhere.returncode != 0 and "the change feed is in the schema api already" in elsewhere.stderr
              and made_in_public == 0, (elsewhere.stderr[-300:], made_in_public))
        check("sovaria_pre_request sets the position header with the feed's schema off the caller's path",
              "Sovaria-Position" in header, header)
        catalog_last = apply_feed_sql(psycopg.conninfo.make_conninfo(other, options="-c search_path=api,pg_catalog"))
        check("applied with a search path that names pg_catalog after another schema: refused (22023), since its"
              " plain statements would find that schema's objects first (a fourth review)",
              catalog_last.returncode != 0 and "names pg_catalog after another schema" in catalog_last.stderr,
              catalog_last.stderr[-300:])
        with psycopg.connect(other, autocommit=True) as conn:
            conn.execute('CREATE DATABASE "sovaria_quoted"')
        quoted = psycopg.conninfo.make_conninfo(db, dbname="sovaria_quoted")
        try:
            with psycopg.connect(quoted, autocommit=True) as conn:
                conn.execute('CREATE SCHEMA "Sales"')
            in_quoted = apply_feed_sql(psycopg.conninfo.make_conninfo(quoted, options='-c search_path="Sales"'))
            with psycopg.connect(quoted, autocommit=True) as conn:
                closed = conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'sovaria_record_row'"
                                      " AND pronamespace = '\"Sales\"'::regnamespace"
                                      " AND NOT has_function_privilege('public', oid, 'EXECUTE')").fetchone()[0]
        finally:
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute("DROP DATABASE sovaria_quoted")
        check("applied in a schema whose name needs quotes (\"Sales\"), its trigger"
              " functions closed to PUBLIC",
              in_quoted.returncode == 0 and closed == 1, (in_quoted.stderr[-300:], closed))
    finally:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DROP DATABASE sovaria_paths")


def run_upgrade_checks(db: str) -> None:
    """ChangeFeed.sql applied over a log an earlier version made (issue 62): a row trigger of
    `sovaria_record_change` on a table, the primary key on `position` alone and a third index.
    Applying the file publishes the table again with the current triggers, as it was (notifying),
    and leaves the log with its two indexes."""
    other = psycopg.conninfo.make_conninfo(db, dbname="sovaria_upgrade")
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE DATABASE sovaria_upgrade")
    try:
        with psycopg.connect(other, autocommit=True) as conn:
            conn.execute("""CREATE TABLE sovaria_changes (position bigint PRIMARY KEY, "table" text NOT NULL,
                key text NOT NULL, op text NOT NULL CHECK (op IN ('upsert', 'delete', 'trimmed')), row jsonb,
                visible_to text, changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                seq bigint GENERATED ALWAYS AS IDENTITY)""")
            conn.execute('CREATE INDEX sovaria_changes_by_table ON sovaria_changes ("table", position)')
            conn.execute("CREATE FUNCTION sovaria_record_change() RETURNS trigger LANGUAGE plpgsql"
                         " AS $$ BEGIN RETURN NULL; END $$")
            conn.execute("CREATE TABLE old_notes (id text PRIMARY KEY, owner text)")
            conn.execute("CREATE TRIGGER sovaria_changes AFTER INSERT OR UPDATE OR DELETE ON old_notes FOR EACH ROW"
                         " EXECUTE FUNCTION sovaria_record_change('id', 'owner', 'public.sovaria_changes', 'notes')")
        applied = apply_feed_sql(other)
        with psycopg.connect(other, autocommit=True) as conn:
            published = [tuple(row) for row in conn.execute(
                "SELECT tab::text, feed_name, key_column, visibility_column, notifies FROM sovaria_published()")]
            triggers = sorted(row[0] for row in conn.execute(
                "SELECT tgfoid::regproc::text FROM pg_trigger WHERE tgrelid = 'old_notes'::regclass"))
            indexes = sorted(row[0] for row in conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = 'sovaria_changes'"))
            conn.execute("INSERT INTO old_notes VALUES ('o1', 'alice')")
            logged = [tuple(row) for row in conn.execute('SELECT "table", key, op FROM sovaria_changes')]
        check("applied over an earlier version's row trigger: the table is published again, as it was (notifying)",
              applied.returncode == 0 and published == [("old_notes", "notes", "id", "owner", True)]
              and triggers == ["sovaria_record_row", "sovaria_record_statement", "sovaria_record_statement"]
              and logged == [("notes", "o1", "upsert")],
              (applied.stderr[-300:], published, triggers, logged))
        check("... and the log keeps two indexes: (table, position) as its primary key, (table, key, seq)",
              len(indexes) == 2 and any('PRIMARY' not in i and '("table", key, seq)' in i for i in indexes)
              and any('sovaria_changes_pkey' in i and '("table", "position")' in i for i in indexes), indexes)
    finally:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DROP DATABASE sovaria_upgrade WITH (FORCE)")


def run_bare_database_checks(db: str) -> None:
    """A database set up by hand, as a newcomer following the change feed's article does: the
    roles exist (they are the cluster's), a table and its grants, no `idempotency_keys`. The
    server started without --setup creates that table itself, and writes with an
    Idempotency-Key work (they answered 404 `relation "idempotency_keys" does not exist`)."""
    bare = psycopg.conninfo.make_conninfo(db, dbname="sovaria_bare")
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE DATABASE sovaria_bare")
    server: subprocess.Popen[str] | None = None
    try:
        with psycopg.connect(bare, autocommit=True) as conn:
            conn.execute("CREATE TABLE public.todo (id text PRIMARY KEY)")
            conn.execute("GRANT SELECT, INSERT ON public.todo TO authenticated")
        server = subprocess.Popen(
            [sys.executable, str(HERE / "restserver.py"), "--conninfo", bare],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = server.stdout.readline() if server.stdout else ""
        check("without --setup on a database set up by hand, the server starts", line.startswith("listening "),
              line)
        if not line.startswith("listening "):
            return
        api = Client(f"http://127.0.0.1:{int(line.split()[1])}")
        key = {"Idempotency-Key": "k-bare"}
        first = api.call("POST", "/rest/v1/todo", {"id": "t1"}, token="token-alice", headers=key)
        again = api.call("POST", "/rest/v1/todo", {"id": "t1"}, token="token-alice", headers=key)
        check("... it creates idempotency_keys itself: a write with an Idempotency-Key is applied once",
              first.status == 201 and again.status == 201 and again.header("Idempotent-Replayed") == "true",
              (first, again))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DROP DATABASE sovaria_bare WITH (FORCE)")


SPEC = HERE.parent / "PostgRESTSpec"
# What the stand-in does not implement, by what a case's request shows (README "What the spec
# check covers"); every other case is held to PostgREST's answer.
SPEC_SKIPS = [
    ("a computed column (a function of the row): not implemented, and not in fixture.sql",
     lambda case, used: bool(used - case["_columns"]) and not is_parse_error(case)),
]


def is_parse_error(case: dict[str, Any]) -> bool:
    """PostgREST refuses the query string itself (400 PGRST100) before looking at any column."""
    body = case["body"] or {}
    return isinstance(body.get("json"), dict) and body["json"].get("code") == "PGRST100"


def spec_columns(case: dict[str, Any]) -> set[str]:
    """The names a case's query uses as columns: filter keys, `order` and `select` terms, and the
    columns of `or`/`and` trees (a name that is no column of the table is a computed column)."""
    query = case["path"].partition("?")[2]
    used: set[str] = set()
    for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        if key == "select":
            used.update(item.split("::")[0].rpartition(":")[2].strip()
                        for item in value.split(",") if item.strip() not in ("", "*"))
        elif key == "order":
            used.update(term.strip().split(".")[0] for term in value.split(","))
        elif key in ("or", "and", "not.or", "not.and"):
            used.update(m.group(1) for m in re.finditer(r"[(,]\s*([A-Za-z_][A-Za-z0-9_]*)\.(?:not\.)?[a-z]+[.(]", value)
                        if m.group(1) not in ("and", "or", "not"))
        elif key not in ("limit", "offset", "on_conflict", "columns"):
            used.add(key)
    return used


def same_body(expected: dict[str, Any], body: bytes, ordered: bool) -> bool:
    if "text" in expected:
        return body.decode(errors="replace") == expected["text"]
    try:
        actual = json.loads(body)
    except ValueError:
        return False
    wanted = expected["json"]
    if not ordered and isinstance(wanted, list) and isinstance(actual, list):
        key = lambda row: json.dumps(row, sort_keys=True)  # noqa: E731 (a multiset of rows)
        return sorted(map(key, wanted)) == sorted(map(key, actual))
    return actual == wanted


def run_spec_checks(db: str) -> None:
    """PostgREST's own spec cases (Tests/PostgRESTSpec/cases.json) through HTTP: fixture.sql in a
    database of its own (schema `test`, as PostgREST's suite loads it), a second server with
    `--schemas test,v1,v2`, and each case the server's features can answer sent as the spec
    sends it: status, body (JSON equality; row order where the case fixes it) and every response
    header the case names must be PostgREST's. Then the singular and multiple-schema cases of
    SingularSpec.hs and MultipleSchemaSpec.hs that read one table."""
    spec_db = psycopg.conninfo.make_conninfo(db, dbname="sovaria_spec")
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("CREATE DATABASE sovaria_spec")
    server: subprocess.Popen[str] | None = None
    started = time.monotonic()
    try:
        with psycopg.connect(spec_db, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA test")
        # fixture.sql ends its COPY data with `\\.;` (extract.py joins statements with `;`),
        # which psql does not take for the end of the data: given as `\\.`.
        fixture = (SPEC / "fixture.sql").read_text().replace("\n\\.;\n", "\n\\.\n")
        load = subprocess.run(
            ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", spec_db], input=fixture,
            capture_output=True, text=True,
            env=dict(os.environ, PGOPTIONS="-c search_path=test,public -c client_min_messages=warning"))
        check("spec: fixture.sql loads into schema test", load.returncode == 0, load.stderr[-500:])
        with psycopg.connect(spec_db, autocommit=True) as conn:
            # data.sql's UPDATEs (lines 959-961 at the commit of cases.json), which extract.py
            # leaves out of fixture.sql (it keeps INSERT, TRUNCATE and COPY): without them the
            # jsonb and tsvector-domain columns are null or empty and their fts cases find nothing.
            conn.execute("""
                SET search_path = test, public;
                UPDATE tsearch_to_tsvector SET jsonb_search = jsonb_build_object('text_search', text_search);
                UPDATE tsearch_to_tsvector SET text_search_domain = to_tsvector('simple', text_search);
                UPDATE tsearch_to_tsvector SET text_search_rec_domain = to_tsvector('simple', text_search);
                RESET search_path;""")
            # PostgREST's test setup runs `VACUUM ANALYZE` after loading (nix/tools/withTools.nix):
            # the planner's statistics decide `Prefer: count=planned`.
            conn.execute("VACUUM ANALYZE")
            # MultipleSchemaSpec's tables (PostgREST's test/spec/fixtures/{schema,data}.sql)
            conn.execute("""
                CREATE SCHEMA v1; CREATE SCHEMA v2;
                CREATE TABLE v1.parents (id int PRIMARY KEY, name text);
                CREATE TABLE v2.parents (id int PRIMARY KEY, name text);
                CREATE TABLE v2.another_table (id int PRIMARY KEY, another_value text);
                INSERT INTO v1.parents VALUES (1, 'parent v1-1'), (2, 'parent v1-2');
                INSERT INTO v2.parents VALUES (3, 'parent v2-3'), (4, 'parent v2-4');
                INSERT INTO v2.another_table VALUES (5, 'value 5'), (6, 'value 6');
                GRANT USAGE ON SCHEMA test, v1, v2 TO anon;
                GRANT SELECT ON ALL TABLES IN SCHEMA test, v1, v2 TO anon;""")
        server = subprocess.Popen(
            [sys.executable, str(HERE / "restserver.py"), "--conninfo", spec_db, "--schemas", "test,v1,v2",
             "--extra-search-path", ""],  # PostgREST's spec configuration (SpecHelper.baseCfg)
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = server.stdout.readline() if server.stdout else ""
        check("spec: a server with --schemas test,v1,v2 starts", line.startswith("listening "), line)
        if not line.startswith("listening "):
            return
        api = Client(f"http://127.0.0.1:{int(line.split()[1])}/rest/v1")

        spec = json.loads((SPEC / "cases.json").read_text())
        passed, failures, skipped, parse_errors = 0, [], {}, []
        sent = []
        for case in spec["cases"]:
            case["_columns"] = {column["name"] for column in spec["tables"].get(case["table"], {}).get("columns", [])}
            used = spec_columns(case)
            reason = next((why for why, applies in SPEC_SKIPS if applies(case, used)), None)
            if reason is not None:
                skipped.setdefault(reason, []).append(case["id"])
            else:
                sent.append(case)

        def send(case: dict[str, Any]) -> Response:
            path = case["path"] if case["path"].startswith("/") else "/" + case["path"]
            # As the spec sends it; only what a URL cannot hold raw is escaped (a `%` stays).
            path = urllib.parse.quote(path, safe="/?&=%:;,()*.!$'+-_~@[]")
            return api.call("GET", path, headers=dict(case["headers"]))

        # Reads only, so sent 8 at a time (each opens its own PostgreSQL connection); the answers
        # are compared in the cases' order.
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(send, sent))
        for case, r in zip(sent, answers):
            wrong = []
            if r.status != case["status"]:
                wrong.append(f"status {r.status}, PostgREST {case['status']}")
            expected = case["body"]
            # PostgREST's query-string parser (Parsec) words its PGRST100 errors with the line,
            # column and the tokens it expected; the stand-in's parser gives the same status,
            # code and message start, not that wording: such a case is held to those only.
            parse_error = is_parse_error(case)
            if parse_error:
                answer = r.json() if (r.body or b"").startswith(b"{") else {}
                message = expected["json"]["message"].split(" (line ")[0]
                if answer.get("code") != "PGRST100" or answer.get("message") != message:
                    wrong.append(f"body {r.body[:200]!r}, PostgREST {json.dumps(expected)[:200]}")
            elif expected is not None and not same_body(expected, r.body, case["ordered"]):
                wrong.append(f"body {r.body[:200]!r}, PostgREST {json.dumps(expected)[:200]}")
            for name, value in case["responseHeaders"]:
                if parse_error and name.lower() == "content-length":
                    continue
                if r.header(name) != value:
                    wrong.append(f"{name}: {r.header(name)!r}, PostgREST {value!r}")
            if wrong:
                source = case["source"]
                failures.append(f"{case['id']} GET {case['path']} ({source['file']}:{source['line']} "
                                f"\"{source['it']}\"): " + "; ".join(wrong))
            elif parse_error:
                parse_errors.append(case["id"])
            else:
                passed += 1
        for failure in failures:
            print(f"     spec case differs: {failure}")
        for why, ids in skipped.items():
            print(f"     spec cases skipped ({len(ids)}), {why}: {', '.join(ids)}")
        if parse_errors:
            print(f"     spec cases held to status, code and message only ({len(parse_errors)}; PostgREST's "
                  f"parser's details and line/column are not reproduced): {', '.join(parse_errors)}")
        check(f"spec: PostgREST's {len(spec['cases'])} single-table GET cases through HTTP: {passed} as "
              f"PostgREST answers, {len(parse_errors)} parse errors as PostgREST (status, code, message), "
              f"{len(failures)} differ, {sum(map(len, skipped.values()))} skipped (not implemented)",
              not failures and passed > 0, f"{len(failures)} differ")

        run_profile_and_singular_checks(api)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute("DROP DATABASE sovaria_spec WITH (FORCE)")
    print(f"     spec checks took {time.monotonic() - started:.1f} s")


def run_profile_and_singular_checks(api: Client) -> None:
    """The GET cases of PostgREST's SingularSpec.hs and MultipleSchemaSpec.hs (commit of
    cases.json) that read one table, with their expected answers, on the spec server."""
    singular = {"Accept": "application/vnd.pgrst.object+json"}
    r = api.call("GET", "/items?id=gt.0&id=lt.0", headers=singular)
    check("singular (SingularSpec \"fails for zero rows\"): 406 PGRST116, \"The result contains 0 rows\"",
          r.status == 406 and r.json() == {"code": "PGRST116", "details": "The result contains 0 rows", "hint": None,
                                           "message": "Cannot coerce the result to a single JSON object"}, r)
    r = api.call("GET", "/items?id=lt.3", headers=singular)
    check("singular over 2 rows: 406 PGRST116, \"The result contains 2 rows\"",
          r.status == 406 and r.json()["details"] == "The result contains 2 rows", r)
    for accept in ("application/vnd.pgrst.object+json", "application/vnd.pgrst.object"):
        r = api.call("GET", "/items?id=eq.5", headers={"Accept": accept, "Prefer": "count=none"})
        check(f"singular (SingularSpec \"will select an existing object\"), Accept: {accept}: the object",
              r.status == 200 and r.json() == {"id": 5}
              and r.header("Content-Type") == "application/vnd.pgrst.object+json; charset=utf-8", (r, r.header("Content-Type")))
    r = api.call("GET", "/items?id=eq.5", headers={"Accept": "text/unknowntype, application/vnd.pgrst.object+json"})
    check("Accept: the first type the server produces wins (here the singular object)",
          r.status == 200 and r.json() == {"id": 5}, r)

    r = api.call("GET", "/items?id=eq.1")
    check("profiles (MultipleSchemaSpec): no Accept-Profile reads the first schema, Content-Profile says it",
          r.status == 200 and r.header("Content-Profile") == "test" and r.json() == [{"id": 1}],
          (r, r.header("Content-Profile")))
    for profile, table, rows in (("v1", "parents", [{"id": 1, "name": "parent v1-1"}, {"id": 2, "name": "parent v1-2"}]),
                                 ("v2", "parents", [{"id": 3, "name": "parent v2-3"}, {"id": 4, "name": "parent v2-4"}]),
                                 ("v2", "another_table", [{"id": 5, "another_value": "value 5"},
                                                          {"id": 6, "another_value": "value 6"}])):
        r = api.call("GET", f"/{table}", headers={"Accept-Profile": profile})
        check(f"Accept-Profile: {profile} reads {profile}.{table}, Content-Profile: {profile}",
              r.status == 200 and r.json() == rows and r.header("Content-Profile") == profile,
              (r, r.header("Content-Profile")))
    r = api.call("GET", "/another_table", headers={"Accept-Profile": "v1"})
    check("Accept-Profile: v1 does not find v2's table: 404 PGRST205 naming v1",
          r.status == 404 and r.json()["code"] == "PGRST205"
          and r.json()["message"] == "Could not find the table 'v1.another_table' in the schema cache", r)
    r = api.call("GET", "/parents", headers={"Accept-Profile": "unknown"})
    check("Accept-Profile: unknown: 406 PGRST106 with the exposed schemas",
          r.status == 406 and r.json() == {"code": "PGRST106", "details": None, "message": "Invalid schema: unknown",
                                           "hint": "Only the following schemas are exposed: test, v1, v2"}, r)


def pending_connections(port: int) -> int | None:
    """The accept queue's length of the socket listening on PORT (/proc/net/tcp's rx_queue of a
    LISTEN socket), or None off Linux."""
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":  # 0A: LISTEN
            return int(fields[4].split(":")[1], 16)
    return None


def run_backlog_check(server: subprocess.Popen[str], port: int) -> None:
    """A burst of connections while the server's accept loop is held (a loaded machine) waits in
    the listen queue; with socketserver's backlog of 5 Linux dropped the handshakes past it, and
    clients waited out SYN-ACK retransmissions past URLSession's 30 s timeout."""
    burst = 64
    server.send_signal(signal.SIGSTOP)
    sockets: list[socket.socket] = []
    queued: int | None = 0
    try:
        for _ in range(burst):
            # Past a full queue Linux drops the SYN itself and connect() waits: that is the defect.
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=3))
        deadline = time.monotonic() + 5
        queued = pending_connections(port)
        while queued is not None and queued < burst and time.monotonic() < deadline:
            time.sleep(0.01)
            queued = pending_connections(port)
    except OSError as error:
        queued = len(sockets)
        print(f"     connection {len(sockets) + 1} of the burst: {error}", flush=True)
    finally:
        server.send_signal(signal.SIGCONT)
        for each in sockets:
            each.close()
    if queued is None:
        print("skip a burst of connections waits in the listen queue (no /proc/net/tcp)", flush=True)
        return
    check(f"a burst of {burst} connections waits in the listen queue, none dropped", queued >= burst, queued)


def run_reload_check(api: Client, db: str) -> None:
    """PostgREST's schema reload: a table created after the start is served once
    `NOTIFY pgrst, 'reload schema'` is sent (the server's listener reads the schema again)."""
    before = api.call("GET", "/rest/v1/reloaded_later", token=ALICE).status
    with psycopg.connect(db, autocommit=True) as admin:
        admin.execute("CREATE TABLE public.reloaded_later (id text PRIMARY KEY)")
        admin.execute("GRANT SELECT ON public.reloaded_later TO PUBLIC")
        admin.execute("NOTIFY pgrst, 'reload schema'")
    deadline = time.monotonic() + 10
    after = None
    while time.monotonic() < deadline and after != 200:
        after = api.call("GET", "/rest/v1/reloaded_later", token=ALICE).status
        time.sleep(0.02)
    check("NOTIFY pgrst, 'reload schema': a table created after the start is served",
          before == 404 and after == 200, (before, after))


def main() -> int:
    verbose = "--verbose" in sys.argv
    started = time.monotonic()
    temp = Path(tempfile.mkdtemp(prefix="sovaria-restserver-"))
    temp.chmod(0o755)  # as root, the cluster runs as `postgres`, which must reach DIR
    cluster = temp / "cluster"
    server: subprocess.Popen[str] | None = None
    try:
        db = subprocess.run([str(HERE / "pgcluster"), "start", str(cluster)], check=True,
                            capture_output=True, text=True).stdout.strip()
        server = subprocess.Popen(
            [sys.executable, str(HERE / "restserver.py"), "--conninfo", db, "--setup",
             "--db-pre-request", "sovaria_pre_request"]
            + (["--verbose"] if verbose else []),
            stdout=subprocess.PIPE, text=True)
        line = server.stdout.readline() if server.stdout else ""
        check("restserver prints 'listening PORT'", line.startswith("listening "), line)
        if not line.startswith("listening "):
            return 1
        port = int(line.split()[1])
        run_checks(Client(f"http://127.0.0.1:{port}"), db, cluster)
        run_backlog_check(server, port)
        run_reload_check(Client(f"http://127.0.0.1:{port}"), db)
        run_feed_sql_checks(db)
        run_upgrade_checks(db)
        run_owner_without_bypass_checks(db)
        run_search_path_checks(db)
        run_statement_by_statement_checks(db)
        run_bare_database_checks(db)
        run_spec_checks(db)

        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        check("SIGTERM stops the server cleanly (exit 0)", code == 0, code)
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait()
        subprocess.run([str(HERE / "pgcluster"), "stop", str(cluster)], check=False)
        shutil.rmtree(temp, ignore_errors=True)
    print(f"{'FAILED' if failed else 'passed'}: {len(failed)} failing check(s) "
          f"in {time.monotonic() - started:.1f} s" + (f": {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
