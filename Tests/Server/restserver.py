#!/usr/bin/python3
"""A small PostgREST-style HTTP front over a real PostgreSQL: test equipment for Sovaria.

    restserver.py --conninfo "host=DIR port=P user=postgres dbname=postgres" [--port 0]
                  [--setup] [--verbose] [--schemas public,other] [--extra-search-path public]

--setup applies schema.sql with the given conninfo (a superuser's) first. The server itself
always connects as `authenticator` (the same conninfo with user=authenticator) and runs each
request in one transaction after `SET LOCAL ROLE <role of the token>`, so grants and row-level
security are enforced by PostgreSQL, as with PostgREST. It binds 127.0.0.1, prints exactly one
line `listening PORT` on stdout when ready, and stops cleanly on SIGTERM or SIGINT.

Without --setup it serves any database that has PostgREST's roles (`authenticator`, `anon`, and
the users of the tokens, `alice` and `bob`): at start it checks them and says what is missing on
stderr, and creates its own table, `idempotency_keys`, when the conninfo's user may.

See README.md for the endpoints, the token scheme, the control endpoints under /_test/ and the
known differences from PostgREST.
"""
from __future__ import annotations

import argparse
import base64
import difflib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl, quote as quote_url, unquote as unquote_url, urlsplit

try:
    import psycopg
except ImportError:  # a non-Debian python3 first in PATH (pyenv): use Debian's python3-psycopg
    sys.path.append("/usr/lib/python3/dist-packages")
    import psycopg
from psycopg import sql

SCHEMA = "public"                               # the default of --schemas
USERS = ("alice", "bob", "carol")               # user roles created by schema.sql
TOKENS = {f"token-{user}": user for user in USERS}
# A refreshed token: `token-<user>.<anything>` is that user too (each spelling expires on its own).
REFRESHED_TOKEN = re.compile(r"token-([a-z]+)\.[A-Za-z0-9_-]+\Z")
# A JSON Web Token of a user: `<header>.<payload>.test-signature`, base64url, whose payload's `sub`
# is the user (the tests' stand-in for a signed JWT; any other signature is refused as forged).
JWT = re.compile(r"[A-Za-z0-9_-]+\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\Z")
JWT_SIGNATURE = "test-signature"
ANON = "anon"
REST_PREFIX = "/rest/v1/"
NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")        # the control tables' names
# Table and column names as PostgREST's parser takes them (letters, digits, `_`, `$`, `-` and
# inner spaces: `Server Today`, `field-with_sep`, `a$num$`); always quoted with sql.Identifier.
FIELD = re.compile(r"[A-Za-z0-9_$][A-Za-z0-9_$ -]*\Z")
TABLE = re.compile(r"[^/\x00]+\Z")
CAST_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[\])?\Z")
RESERVED_PARAMS = {"select", "order", "limit", "offset", "on_conflict", "columns"}
COMPARISONS = {"eq": "=", "neq": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<=",
               "like": "LIKE", "ilike": "ILIKE", "match": "~", "imatch": "~*",
               "isdistinct": "IS DISTINCT FROM",
               # arrays and ranges (PostgREST's cs, cd, ov, sl, sr, nxr, nxl, adj)
               "cs": "@>", "cd": "<@", "ov": "&&", "sl": "<<", "sr": ">>", "nxr": "&<",
               "nxl": "&>", "adj": "-|-"}
# The operators that take PostgREST's `(any)`/`(all)` modifier: `id=eq(any).{3,4,5}`.
QUANTIFIABLE = {"eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike", "match", "imatch"}
# Full-text search: the operator's tsquery function (`fts(french).amusant`).
FTS = {"fts": "to_tsquery", "plfts": "plainto_tsquery", "phfts": "phraseto_tsquery",
       "wfts": "websearch_to_tsquery"}
IS_VALUES = {"null": "NULL", "not_null": "NOT NULL", "true": "TRUE", "false": "FALSE",
             "unknown": "UNKNOWN"}
JSON_TYPE = "application/json; charset=utf-8"
SINGULAR_TYPE = "application/vnd.pgrst.object+json; charset=utf-8"
CSV_TYPE = "text/csv; charset=utf-8"



def jwt_subject(payload: str) -> str | None:
    """The `sub` claim of a JWT's base64url payload, or None."""
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, TypeError):
        return None
    return claims.get("sub") if isinstance(claims, dict) else None

class ApiError(Exception):
    """An error answered in PostgREST's shape: {"code", "details", "hint", "message"}."""

    def __init__(self, status: int, code: str, message: str, details: Any = None,
                 hint: Any = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.details, self.hint, self.headers = details, hint, headers or {}

    def body(self) -> bytes:
        # Compact, in PostgREST's key order: byte for byte what it sends (its Content-Length).
        return json.dumps({"code": self.code, "details": self.details, "hint": self.hint,
                           "message": self.message}, separators=(",", ":"),
                          ensure_ascii=False).encode()


def status_for_sqlstate(state: str, message: str, authenticated: bool) -> int:
    """PostgREST's mapping of PostgreSQL error codes to HTTP statuses (its Error.hs and
    docs.postgrest.org "Errors" > "HTTP Status Codes"); anything else is 400."""
    exact = {"23503": 409, "23505": 409, "25006": 405, "53400": 500, "57P01": 503,
             "P0001": 400, "42883": 404, "42P01": 404, "42P17": 500}
    if state == "42501":
        return 403 if authenticated else 401
    if state == "22023" and message.startswith("role") and message.endswith("does not exist"):
        return 401
    if state in exact:
        return exact[state]
    prefixes = {"08": 503, "09": 500, "0L": 403, "0P": 403, "25": 500, "28": 403, "2D": 500,
                "38": 500, "39": 500, "3B": 500, "40": 500, "53": 503, "54": 500, "55": 500,
                "57": 500, "58": 500, "F0": 500, "HV": 500, "P0": 500, "XX": 500}
    return prefixes.get(state[:2], 400)


def pg_error(error: psycopg.Error, role: str) -> ApiError:
    state = error.sqlstate
    if state is None:  # no answer from the server: PostgREST's connection error
        return ApiError(503, "PGRST000", "Database connection error. Retrying the connection.",
                        details=str(error).strip() or None)
    diag = error.diag
    message = diag.message_primary or str(error)
    status = status_for_sqlstate(state, message, role != ANON)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    return ApiError(status, state, message, diag.message_detail, diag.message_hint, headers)


# ---------------------------------------------------------------- shared state (for /_test/)

@dataclass
class TestState:
    """What the control endpoints set, and the log of /rest requests. Guarded by `lock`."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    failures: list[dict[str, Any]] = field(default_factory=list)   # FIFO rules, see /_test/fail
    slow: list[float] = field(default_factory=list)                # seconds, one per write
    expired: set[str] = field(default_factory=set)
    requests: list[dict[str, Any]] = field(default_factory=list)
    # /_test/fail with "hold": a write committed and now waiting for /_test/release
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def take_failure(self, is_write: bool) -> dict[str, Any] | None:
        """Consume one use of the first rule that applies to this request."""
        with self.lock:
            for rule in self.failures:
                if rule["after_commit"] and not is_write:
                    continue
                rule["count"] -= 1
                if rule["count"] <= 0:
                    self.failures.remove(rule)
                return rule
        return None

    def take_slow(self) -> float:
        with self.lock:
            return self.slow.pop(0) if self.slow else 0.0

    def clear(self) -> None:
        with self.lock:
            self.failures.clear()
            self.slow.clear()
            self.expired.clear()
            self.requests.clear()
        self.release.set()  # a held answer is let go (dropped)
        self.held.clear()


# ---------------------------------------------------------------- request parsing

@dataclass
class Query:
    select: sql.Composable
    where: list[sql.Composable]
    params: list[Any]
    order: list[sql.Composable]
    limit: int | None          # the `limit` parameter, None when absent or not an integer
    offset: int | None         # the `offset` parameter, likewise
    on_conflict: list[str] | None
    columns: list[str] | None
    # Set by the handler from the headers (README "Ranges, counts, singular reads, profiles"):
    schema: str = SCHEMA               # Accept-Profile / Content-Profile
    first: int = 0                     # the page: rows first..last of the answer (last None: all)
    last: int | None = None
    singular: bool = False             # Accept: application/vnd.pgrst.object+json
    csv: bool = False                  # Accept: text/csv (reads)
    location: str = ""                 # Content-Location of a read: /table?params sorted by name
    paged: tuple[bool, bool] = (False, False)  # whether `limit`, `offset` were given at all


def bad_param(what: str, value: str) -> ApiError:
    return ApiError(400, "PGRST100", f'"failed to parse {what} ({value})"',
                    details=f"unexpected input in {value!r}")


def names(value: str, what: str) -> list[str]:
    items = [item.strip() for item in value.split(",")]
    if not all(FIELD.match(item) for item in items):
        raise bad_param(what, value)
    return items


def select_list(value: str) -> sql.Composable:
    """A `select` of columns, each optionally renamed (`alias:column`) and cast (`column::type`,
    named after the column unless renamed), as PostgREST does."""
    parts: list[sql.Composable] = []
    for item in value.split(","):
        item = item.strip()
        item, _, cast = item.partition("::")
        alias, _, column = item.rpartition(":")
        if (not FIELD.match(column) or (alias and not FIELD.match(alias))
                or (cast and not CAST_TYPE.match(cast))):
            raise bad_param("select parameter", value)
        expression: sql.Composable = sql.Identifier(column)
        if cast:  # CAST_TYPE admits only a plain type name: `int`, `text`, `_int4`, `text[]`
            expression = sql.SQL("CAST({} AS {})").format(expression, sql.SQL(cast))
        if alias or cast:
            expression = sql.SQL("{} AS {}").format(expression, sql.Identifier(alias or column))
        parts.append(expression)
    return sql.SQL(", ").join(parts)


def in_list(value: str) -> list[str]:
    """Parse PostgREST's `(a,b,"c,d")` list as its parser does: an element that starts with `"`
    and has a closing `"` before the next `,` or the end is quoted (`\\` escapes the next
    character); any other element runs to the next comma, quotes and backslashes kept, and is
    trimmed. `()` and `(   )` are the empty list."""
    if not (value.startswith("(") and value.endswith(")")):
        raise bad_param("filter", f"in.{value}")
    text = value[1:-1]
    if not text.strip():
        return []
    items: list[str] = []
    i = 0
    while True:
        quoted = re.match(r'\s*"((?:[^"\\]|\\.)*)"\s*(,|\Z)', text[i:], re.S)
        if quoted:
            items.append(re.sub(r"\\(.)", r"\1", quoted.group(1), flags=re.S))
            i += quoted.end()
            if not quoted.group(2):
                return items
            continue
        comma = text.find(",", i)
        items.append((text[i:] if comma < 0 else text[i:comma]).strip())
        if comma < 0:
            return items
        i = comma + 1


OPERATOR = re.compile(r"(not\.)?([a-z]+)(?:\((any|all|[A-Za-z0-9_]+)\))?\.(.*)\Z", re.S)


def unquote(value: str) -> str:
    """A value of a logic tree (`name.eq."a,b"`): double quotes protect, `\\` escapes."""
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def condition(column: str, value: str, params: list[Any], types: dict[str, str],
              in_tree: bool = False) -> sql.Composable:
    """One filter, `column=[not.]operator[(modifier)].operand`, as a SQL condition."""
    if not FIELD.match(column):
        raise bad_param("filter", f"{column}={value}")
    match = OPERATOR.match(value)
    if not match:
        raise bad_param("filter", value)
    negate, operator, modifier, operand = match.groups()
    ident = sql.Identifier(column)
    if in_tree and operator not in ("in",):
        operand = unquote(operand)
    if operator in FTS:
        # `fts(french).amusant`: the configuration applies to the query and, on a column that
        # is not a tsvector (text, json, jsonb), to the to_tsvector PostgREST wraps it in.
        lang = [modifier] if modifier else []
        query = sql.SQL("{}({})").format(sql.SQL(FTS[operator]), sql.SQL(
            "%s::regconfig, %s" if modifier else "%s"))
        if types.get(column) == "tsvector":
            clause = sql.SQL("{} @@ {}").format(ident, query)
            params.extend(lang + [operand])
        else:
            vector = sql.SQL("to_tsvector({}{})").format(
                sql.SQL("%s::regconfig, " if modifier else ""), ident)
            clause = sql.SQL("{} @@ {}").format(vector, query)
            params.extend(lang + lang + [operand])
    elif modifier in ("any", "all"):
        if operator not in QUANTIFIABLE:
            raise bad_param("filter", value)
        if operator in ("like", "ilike"):
            operand = operand.replace("*", "%")
        params.append(operand)  # an array literal `{a,b}`, cast to the column's array type
        clause = sql.SQL("{} {} {}(%s)").format(ident, sql.SQL(COMPARISONS[operator]),
                                                sql.SQL(modifier.upper()))
    elif modifier is not None:
        raise bad_param("filter", value)
    elif operator in COMPARISONS:
        if operator in ("like", "ilike"):
            operand = operand.replace("*", "%")
        params.append(operand)  # sent untyped: PostgreSQL casts it to the column's type
        clause = sql.SQL("{} {} %s").format(ident, sql.SQL(COMPARISONS[operator]))
    elif operator == "in":
        items = in_list(operand.strip() if in_tree else operand)
        params.extend(items)
        placeholders = sql.SQL(", ").join(sql.Placeholder() * len(items))
        clause = (sql.SQL("{} IN ({})").format(ident, placeholders) if items
                  else sql.SQL("false"))
    elif operator == "is" and operand.lower() in IS_VALUES:
        clause = sql.SQL("{} IS {}").format(ident, sql.SQL(IS_VALUES[operand.lower()]))
    else:
        raise bad_param("filter", value)
    return sql.SQL("NOT ({})").format(clause) if negate else clause


def parse_filter(column: str, value: str, params: list[Any],
                 types: dict[str, str] | None = None) -> sql.Composable:
    return condition(column, value, params, types or {})


def split_top(text: str) -> list[str]:
    """Split a logic tree's list at the commas outside parentheses, braces and quotes."""
    items, current, depth, quoted, escaped = [], "", 0, False, False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif not quoted and char in "({":
            depth += 1
        elif not quoted and char in ")}":
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            items.append(current)
            current = ""
            continue
        current += char
    items.append(current)
    return items


LOGIC = re.compile(r"(not\.)?(and|or)\s*\((.*)\)\Z", re.S)


def logic_tree(operator: str, text: str, params: list[Any], types: dict[str, str]) -> sql.Composable:
    """`or=(a.eq.1,and(b.gt.2,not.or(c.is.null,d.in.(1,2))))` as PostgREST reads it."""
    text = text.strip()
    if text.startswith("("):  # PostgREST's parser stops at the group's closing parenthesis
        depth, quoted = 0, False
        for end, char in enumerate(text):
            if char == '"':
                quoted = not quoted
            elif not quoted and char == "(":
                depth += 1
            elif not quoted and char == ")":
                depth -= 1
                if depth == 0:
                    text = text[:end + 1]
                    break
    if not (text.startswith("(") and text.endswith(")")) or not text[1:-1].strip():
        raise ApiError(400, "PGRST100", f'"failed to parse logic tree ({text})"',
                       details=f"unexpected input in {text!r}")
    parts: list[sql.Composable] = []
    for item in split_top(text[1:-1]):
        item = item.strip()
        nested = LOGIC.match(item)
        if nested:
            inner = logic_tree(nested.group(2), "(" + nested.group(3) + ")", params, types)
            parts.append(sql.SQL("NOT ({})").format(inner) if nested.group(1) else inner)
            continue
        column, dot, rest = item.partition(".")
        if not dot:
            raise bad_param("logic tree", text)
        parts.append(condition(column.strip(), rest, params, types, in_tree=True))
    return sql.SQL("({})").format(sql.SQL(f" {operator.upper()} ").join(parts))


def parse_query(query: str, types: dict[str, str] | None = None) -> Query:
    types = types or {}
    select: sql.Composable = sql.SQL("*")
    where: list[sql.Composable] = []
    params: list[Any] = []
    order: list[sql.Composable] = []
    limit = offset = None
    on_conflict = columns = None
    given = set()
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == "select":
            if value.strip() not in ("*", ""):  # PostgREST reads an empty select as `*`
                select = select_list(value)
        elif key == "order":
            for term in value.split(","):
                column, *modifiers = term.strip().split(".")
                known = {"asc": "ASC", "desc": "DESC", "nullsfirst": "NULLS FIRST",
                         "nullslast": "NULLS LAST"}
                if not FIELD.match(column) or not all(m in known for m in modifiers):
                    raise bad_param("order", value)
                order.append(sql.SQL(" ").join([sql.Identifier(column)] +
                                               [sql.SQL(known[m]) for m in modifiers]))
        elif key in ("limit", "offset"):
            # PostgREST reads them as integers and ignores what is not one (`readMaybe`); a
            # negative limit is refused later (416), a negative offset clipped to 0.
            number = int(value) if re.fullmatch(r"-?[0-9]+", value.strip()) else None
            limit, offset = (number, offset) if key == "limit" else (limit, number)
            given.add(key)
        elif key == "on_conflict":
            on_conflict = names(value, "on_conflict")
        elif key == "columns":
            columns = names(value, "columns")
        elif key in ("or", "and", "not.or", "not.and"):
            tree = logic_tree(key.removeprefix("not."), value, params, types)
            where.append(sql.SQL("NOT {}").format(tree) if key.startswith("not.") else tree)
        else:
            where.append(parse_filter(key, value, params, types))
    parsed = Query(select, where, params, order, limit, offset, on_conflict, columns)
    parsed.paged = ("limit" in given, "offset" in given)
    return parsed


RANGE = re.compile(r"([0-9]+)-([0-9]*)\Z")


def range_not_satisfiable(details: str) -> ApiError:
    return ApiError(416, "PGRST103", "Requested range not satisfiable", details=details)


def page(query: Query, range_header: str | None) -> tuple[int, int | None]:
    """The rows a read answers, as PostgREST's RangeQuery and QueryParams compute them: the
    `Range` header (`first-[last]`; anything else is the whole range; `Range-Unit` is not looked
    at) intersected with the range of `limit`/`offset` (`offset`..`offset+limit-1`; a parameter
    that is not an integer is ignored, except that with both given an unreadable limit counts as
    0). That range ending at -1 (`limit=0`) answers no rows, whatever the header; any other
    empty page is a 416."""
    lo, hi = 0, None
    if range_header is not None and (m := RANGE.match(range_header.strip())):
        lo, hi = int(m.group(1)), (int(m.group(2)) if m.group(2) else None)
    header_empty = hi is not None and lo > hi
    offset = query.offset if query.offset is not None else 0
    limit_given, offset_given = query.paged
    if limit_given and offset_given:
        limit_lo, limit_hi = offset, offset + (query.limit if query.limit is not None else 0) - 1
    elif limit_given and query.limit is not None:
        limit_lo, limit_hi = 0, query.limit - 1
    else:
        limit_lo, limit_hi = offset, None
    if limit_hi == -1:
        return 0, -1  # PostgREST's "limit zero range", allowed where the Range header's is not
    first = max(lo, limit_lo)
    last = hi if limit_hi is None else (limit_hi if hi is None else min(hi, limit_hi))
    if header_empty or (last is not None and first > last):
        raise range_not_satisfiable(
            "The lower boundary must be lower than or equal to the upper boundary in the Range header."
            if header_empty else "Limit should be greater than or equal to zero.")
    return first, last


SINGULAR = ("application/vnd.pgrst.object+json", "application/vnd.pgrst.object")
CSV = "text/csv"
PRODUCED = ("application/json", "application/*", "*/*", CSV) + SINGULAR


def negotiate(accept: str | None, read: bool) -> str:
    """Accept -> "json" (an array: `application/json`, `*/*`, no Accept), "singular" (one object:
    `application/vnd.pgrst.object[+json]`) or "csv" (`text/csv`, reads only); the first type
    this server produces wins, in the client's order. Anything else is PostgREST's 406 PGRST107."""
    if accept is None or not accept.strip():
        return "json"
    offered = [item.split(";")[0].strip().lower() for item in accept.split(",")]
    for media in offered:
        if media in PRODUCED and (read or media != CSV):
            return "singular" if media in SINGULAR else "csv" if media == CSV else "json"
    raise ApiError(406, "PGRST107", "None of these media types are available: " +
                   ", ".join(item.strip() for item in accept.split(",")))


def content_location(table: str, query: str) -> str:
    """PostgREST's Content-Location of a read: `/table`, then the query's parameters sorted by
    name (stable), a repeated name's values joined with `,`, each part percent-encoded."""
    pairs = parse_qsl(query, keep_blank_values=True)
    grouped: dict[str, list[str]] = {}
    for key, value in sorted(pairs, key=lambda pair: pair[0]):
        grouped.setdefault(key, []).append(value)
    canonical = "&".join(quote_url(key, safe="") + "=" + ",".join(quote_url(v, safe="") for v in values)
                         for key, values in grouped.items())
    return "/" + table + ("?" + canonical if canonical else "")


def parse_prefer(headers: list[str]) -> dict[str, str]:
    prefs: dict[str, str] = {}
    for header in headers:
        for token in header.split(","):
            name, _, value = token.strip().partition("=")
            if name:
                prefs[name.lower()] = value.strip()
    return prefs


FEED_VIEW = "sovaria_feed"   # Sources/SovariaPostgREST/ChangeFeed.sql
MAX_FEED_WAIT = 60.0
FEED_RECHECK = 0.25          # seconds between reads once a commit was announced
CONNECT_TIMEOUT_SECONDS = 120  # how long a request waits for PostgreSQL to take its connection


def feed_wait(table: str, prefs: dict[str, str]) -> float | None:
    """`Prefer: wait=N` on a read of the change feed: how long to hold an empty answer."""
    if table != FEED_VIEW or "wait" not in prefs:
        return None
    try:
        wait = float(prefs["wait"])
    except ValueError:
        raise bad_param("Prefer", f"wait={prefs['wait']}") from None
    return max(0.0, min(wait, MAX_FEED_WAIT))


def invalid_json() -> ApiError:
    return ApiError(400, "PGRST102", "Empty or invalid json")


# ---------------------------------------------------------------- the server

class RestServer(ThreadingHTTPServer):
    daemon_threads = True
    # Do not join the request threads on close: a client's idle keep-alive connection keeps its
    # thread waiting for the next request, and SIGTERM must stop the server at once.
    block_on_close = False
    # socketserver listens with a backlog of 5. A burst of connections while the accept loop waits
    # for the GIL (a full suite on 2 cores) overflows it; Linux then drops the handshake's last
    # ACK and the client waits out SYN-ACK retransmissions (1, 2, 4, 8, 16 s): URLSession's 30 s
    # timeout (-1001) in CI. 40 connections during a 0.5 s pause overflowed 114 times; PostgREST
    # (warp) listens with the system's maximum.
    request_queue_size = 4096

    def __init__(self, port: int, conninfo: str, verbose: bool, pre_request: str | None = None,
                 schemas: list[str] | None = None, extra_search_path: list[str] | None = None) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        # PostgREST's db-schemas: the first is the default, the others are chosen with
        # Accept-Profile (reads) or Content-Profile (writes).
        self.schemas = schemas or [SCHEMA]
        # PostgREST's db-extra-search-path: after the request's schema in search_path.
        self.extra_search_path = [SCHEMA] if extra_search_path is None else extra_search_path
        self.conninfo = psycopg.conninfo.make_conninfo(conninfo, user="authenticator")
        self.verbose = verbose
        self.pre_request = pre_request
        self.state = TestState()
        self.tables = self.load_schema_cache()
        threading.Thread(target=self.follow_reloads, daemon=True).start()
        # The long poll's wake-ups: one LISTEN for the whole server, counted. A connection per
        # long poll cost each new poll a connection and a LISTEN before its first read (the
        # first edit a newly opened device waited for), and held a session per waiting client.
        self.commits = threading.Condition()
        self.commit_count = 0
        self.waiting_polls = 0  # long polls waiting for a commit now (GET /_test/waiting)
        self.listening = threading.Event()
        threading.Thread(target=self.follow_commits, daemon=True).start()

    def follow_reloads(self) -> None:
        """PostgREST's schema reload: `NOTIFY pgrst, 'reload schema'` (or an empty payload)
        loads the schema cache again, so a table created after the start is served."""
        def reload(payload: str | None = None) -> None:
            if payload in (None, "", "reload schema"):
                self.tables = self.load_schema_cache()

        self.listen_forever("pgrst", listening=reload, notified=reload)  # what changed while not listening

    def follow_commits(self) -> None:
        """Counts the NOTIFYs on `sovaria_changes` and wakes the long polls waiting for one. While
        it is not listening (PostgreSQL restarting), long polls read again every
        `FEED_RECHECK` seconds instead of trusting a wake-up."""
        def listening() -> None:
            self.announce_commit()  # what committed while not listening
            self.listening.set()

        self.listen_forever("sovaria_changes", listening=listening, notified=lambda _: self.announce_commit(),
                            stopped=self.listening.clear)

    def listen_forever(self, channel: str, listening: Callable[[], None], notified: Callable[[str], None],
                       stopped: Callable[[], None] = lambda: None) -> None:
        """Listens on `channel` for the server's life: `listening()` each time a connection
        listens (what was sent before is missed: catch up there), `notified(payload)` for each
        notification, `stopped()` when the connection ends; then listens again a second later
        (PostgreSQL restarting). A failure that is not PostgreSQL's is said on stderr."""
        while True:
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as listener:
                    listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    listening()
                    for notice in listener.notifies():
                        notified(notice.payload)
            except psycopg.Error:
                pass  # PostgreSQL restarting
            except Exception as error:  # noqa: BLE001 -- any failure: listen again
                print(f"restserver: the listener of {channel} stopped: {error!r}", file=sys.stderr, flush=True)
            finally:
                stopped()
            time.sleep(1)

    def announce_commit(self) -> None:
        with self.commits:
            self.commit_count += 1
            self.commits.notify_all()

    def load_schema_cache(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Schema -> table name -> {"columns": [...], "pk": [...], "types": {column: base type}}
        (a domain's base type: `tsvector_not_null` is a tsvector), like PostgREST's schema cache."""
        schemas: dict[str, dict[str, dict[str, Any]]] = {schema: {} for schema in self.schemas}
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            rows = conn.execute(
                """SELECT n.nspname, c.relname, a.attname, coalesce(a.attnum = ANY (i.indkey), false),
                          a.atttypid::int
                     FROM pg_class c
                     JOIN pg_namespace n ON n.oid = c.relnamespace
                     JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
                                        AND NOT a.attisdropped
                     LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
                    WHERE n.nspname = ANY (%s) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
                    ORDER BY n.nspname, c.relname, a.attnum""", [self.schemas]).fetchall()
            types = {oid: (name, base) for oid, name, base in conn.execute(
                "SELECT oid::int, typname, typbasetype::int FROM pg_type").fetchall()}

        def base_type(oid: int) -> str:
            while types.get(oid, ("", 0))[1]:  # a domain: its base type, to the bottom
                oid = types[oid][1]
            return types.get(oid, ("", 0))[0]

        for schema, table, column, is_pk, type_oid in rows:
            entry = schemas[schema].setdefault(table, {"columns": [], "pk": [], "types": {}})
            entry["columns"].append(column)
            entry["types"][column] = base_type(type_oid)
            if is_pk:
                entry["pk"].append(column)
        return schemas

    def connect(self) -> psycopg.Connection:
        # One connection per request: simple, and correct across a PostgreSQL restart. A stopped
        # server refuses at once (and a full listen queue fails at once: EAGAIN); the timeout only
        # bounds a connection a loaded machine is slow to answer. The whole suite on 2 cores once
        # took over 5 s, and a read got a 503; with 30 s, a run that took a quarter longer than
        # usual (on a noisy day) met one connection that did not answer in 30 s. The equipment's
        # stall is not what a test checks: two minutes.
        # A cluster whose connection slots are all taken (every test's servers and stores share
        # it: over 300 sessions at once were seen in a full run) is waited for, as long, as
        # PostgREST's pool waits for a free connection; a CI run once met it as a 500.
        deadline = time.monotonic() + CONNECT_TIMEOUT_SECONDS
        while True:
            try:
                return psycopg.connect(self.conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS)
            except psycopg.OperationalError as error:
                full = "too many clients" in str(error) or "remaining connection slots" in str(error)
                if not full or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class Handler(BaseHTTPRequestHandler):
    server: RestServer
    protocol_version = "HTTP/1.1"
    server_version = "sovaria-restserver"
    # An answer goes out as two writes (headers, then body): with Nagle's algorithm on, the body
    # waits for the client's delayed ACK of the headers, 40 ms on Linux, on every keep-alive reply.
    disable_nagle_algorithm = True

    # --- plumbing

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (base class name)
        if self.server.verbose:
            sys.stderr.write(f"restserver: {self.address_string()} {format % args}\n")

    def read_body(self) -> bytes | None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while (size := int(self.rfile.readline().split(b";")[0], 16)) > 0:
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        # Shorter than announced: the client went away mid-request (killed between the headers
        # and the body). A real server neither applies nor answers such a request.
        return body if len(body) == length else None

    def send(self, reply: Reply, head_only: bool = False) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.status not in (204, 304):
            self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if reply.body and not head_only and reply.status not in (204, 304):
            self.wfile.write(reply.body)

    def drop(self) -> None:
        """Close the connection without answering: a lost acknowledgement."""
        self.close_connection = True
        self.wfile.flush()
        try:
            self.connection.shutdown(2)  # socket.SHUT_RDWR
        except OSError:
            pass

    @staticmethod
    def error_reply(error: ApiError) -> Reply:
        headers = {"Content-Type": JSON_TYPE, "Proxy-Status": f"PostgREST; error={error.code}"}
        return Reply(error.status, error.body(), {**headers, **error.headers})

    def do_GET(self) -> None:
        self.dispatch("GET")

    def do_HEAD(self) -> None:
        self.dispatch("HEAD")

    def do_POST(self) -> None:
        self.dispatch("POST")

    def do_PATCH(self) -> None:
        self.dispatch("PATCH")

    def do_DELETE(self) -> None:
        self.dispatch("DELETE")

    def do_PUT(self) -> None:
        self.dispatch("PUT")

    def dispatch(self, method: str) -> None:
        body = self.read_body()
        if body is None:
            self.close_connection = True
            return
        path = urlsplit(self.path).path
        try:
            if path.startswith(REST_PREFIX):
                self.rest(method, body)
            elif path.startswith("/_test/"):
                self.send(self.control(method, path, body))
            else:
                raise ApiError(404, "PGRST125", "Invalid path specified in request URL")
        except ApiError as error:
            self.send(self.error_reply(error), head_only=method == "HEAD")
        except Exception as error:  # a bug here: answer 500 rather than hang the client
            if self.server.verbose:
                traceback.print_exc()
            # What failed, in `details`: a test that meets this 500 says why in its own output
            # (the server's stderr is not kept).
            self.send(self.error_reply(ApiError(
                500, "PGRSTX00", "Internal server error",
                details=f"{type(error).__name__}: {error}"[:600])))

    # --- /rest/v1/<table>

    def rest(self, method: str, body: bytes) -> None:
        state = self.server.state
        key = self.headers.get("Idempotency-Key")
        is_write = method in ("POST", "PATCH", "DELETE")
        entry: dict[str, Any] = {"method": method, "path": self.path,
                                 "idempotency_key": key, "role": None, "status": None,
                                 "replayed": False, "dropped": False}
        with state.lock:
            state.requests.append(entry)

        rule = state.take_failure(is_write)
        if rule is not None and not rule["after_commit"]:
            headers = {"Content-Type": JSON_TYPE}
            if rule.get("retry_after") is not None:
                headers["Retry-After"] = str(rule["retry_after"])
            error = ApiError(rule["status"], "SOVTEST", "Injected by POST /_test/fail")
            entry["status"] = rule["status"]
            self.send(Reply(rule["status"], error.body(), headers), head_only=method == "HEAD")
            return

        try:
            role = self.authenticate()
            entry["role"] = role
            reply = self.rest_reply(method, role, body, key, entry)
        except ApiError as error:
            reply = self.error_reply(error)
        entry["status"] = reply.status
        if rule is not None:  # after_commit: the transaction is over, the answer is lost
            if rule.get("hold"):  # ... or kept back until /_test/release (or 60 s)
                state.held.set()
                state.release.wait(60)
            entry["dropped"] = True
            self.drop()
            return
        self.send(reply, head_only=method == "HEAD")

    def authenticate(self) -> str:
        """`Authorization: Bearer token-<user>` -> that user's role; no bearer token -> anon."""
        scheme, _, token = (self.headers.get("Authorization") or "").strip().partition(" ")
        if scheme.lower() != "bearer":
            return ANON
        token = token.strip()
        if token in self.server.state.expired:
            message = "JWT expired"
            code = "PGRST303"
        elif token in TOKENS:
            return TOKENS[token]
        elif (refreshed := REFRESHED_TOKEN.match(token)) and refreshed.group(1) in USERS:
            return refreshed.group(1)
        elif (jwt := JWT.match(token)) and jwt.group(2) == JWT_SIGNATURE \
                and (subject := jwt_subject(jwt.group(1))) in USERS:
            return subject
        else:
            message = "JWT cryptographic operation failed" if token else \
                "Empty JWT is sent in Authorization header"
            code = "PGRST301"
        raise ApiError(401, code, message, headers={
            "WWW-Authenticate": f'Bearer error="invalid_token", error_description="{message}"'})

    def rest_reply(self, method: str, role: str, body: bytes, key: str | None,
                   entry: dict[str, Any]) -> Reply:
        url = urlsplit(self.path)
        table = unquote_url(url.path[len(REST_PREFIX):])
        if not TABLE.match(table):
            raise ApiError(404, "PGRST125", "Invalid path specified in request URL")
        if method not in ("GET", "HEAD", "POST", "PATCH", "DELETE"):
            raise ApiError(405, "PGRST117", f"Unsupported HTTP method: {method}")
        # PostgREST's schema negotiation: Accept-Profile for reads, Content-Profile for writes;
        # the first of --schemas without one.
        schemas = self.server.schemas
        profile = self.headers.get("Accept-Profile" if method in ("GET", "HEAD") else "Content-Profile")
        if profile is not None and profile not in schemas:
            raise ApiError(406, "PGRST106", f"Invalid schema: {profile}",
                           hint="Only the following schemas are exposed: " + ", ".join(schemas))
        schema = profile if profile is not None else schemas[0]
        profiled = profile is not None or len(schemas) > 1
        tables = self.server.tables.get(schema, {})
        info = tables.get(table)
        if info is None:
            close = difflib.get_close_matches(table, list(tables), n=1)
            hint = f"Perhaps you meant the table '{schema}.{close[0]}'" if close else None
            raise ApiError(404, "PGRST205",
                           f"Could not find the table '{schema}.{table}' in the schema cache",
                           hint=hint)
        media = negotiate(self.headers.get("Accept"), method in ("GET", "HEAD"))
        query = parse_query(url.query, info["types"])
        query.schema, query.singular, query.csv = schema, media == "singular", media == "csv"
        query.location = content_location(table, url.query)
        if method in ("GET", "HEAD"):
            # RFC 9110: Range is for GET only (PostgREST ignores it on other methods).
            query.first, query.last = page(query, self.headers.get("Range") if method == "GET" else None)
        prefs = parse_prefer(self.headers.get_all("Prefer") or [])
        payload = None
        if method in ("POST", "PATCH"):
            try:
                payload = json.loads(body)
            except ValueError:
                raise invalid_json() from None
        if method in ("GET", "HEAD"):
            key = None  # Idempotency-Key only matters on writes
            wait = feed_wait(table, prefs)
            if wait is not None:
                return self.long_poll(role, table, query, wait, entry)
        reply = self.transact(method, role, table, info, query, payload, prefs, key, entry, body)
        if profiled and 200 <= reply.status < 300:
            reply.headers["Content-Profile"] = schema
        return reply

    def long_poll(self, role: str, table: str, query: Query, wait: float,
                  entry: dict[str, Any]) -> Reply:
        """The change feed's extension: an empty answer is held until a change is committed (a
        NOTIFY on `sovaria_changes`) or `wait` seconds pass, then read again. Says so with
        `Preference-Applied: wait=N`, which a client without it never sees."""
        deadline = time.monotonic() + wait
        woken = False
        server = self.server
        while True:
            with server.commits:
                seen = server.commit_count  # before the read: a commit after it wakes this poll
            reply = self.transact("GET", role, table, None, query, None, {}, None, entry, b"")
            left = deadline - time.monotonic()
            if reply.status != 200 or reply.body != b"[]" or left <= 0:
                break
            # Once woken, a change is committed but may be held back behind an older running
            # transaction, whose end notifies nobody if it wrote no published table: read again
            # every quarter second rather than waiting for another notification. The same while
            # the server is not listening.
            timeout = min(left, FEED_RECHECK) if woken or not server.listening.is_set() else left
            with server.commits:
                server.waiting_polls += 1
                try:
                    if server.commits.wait_for(lambda: server.commit_count != seen, timeout):
                        woken = True
                finally:
                    server.waiting_polls -= 1
        reply.headers["Preference-Applied"] = f"wait={wait:g}"
        return reply

    def transact(self, method: str, role: str, table: str, info: dict[str, list[str]] | None,
                 query: Query, payload: Any, prefs: dict[str, str], key: str | None,
                 entry: dict[str, Any], body: bytes) -> Reply:
        try:
            with self.server.connect() as conn, conn.transaction():
                if key is not None:
                    replay = self.claim_key(conn, key, role, method, body)
                    if replay is not None:
                        entry["replayed"] = True
                        return replay
                conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
                # As PostgREST: the request's schema, then its extra search path (`public`), so
                # functions and types of either resolve without a schema.
                conn.execute("SELECT set_config('search_path', %s, true)",
                             [", ".join('"' + name.replace('"', '""') + '"' for name in
                                        dict.fromkeys([query.schema, *self.server.extra_search_path]))])
                # A signed-in user's token names them in `sub`, as a real JWT does (Supabase's
                # auth.uid() reads it); anon's has no subject.
                claims = {"role": role} if role == ANON else {"role": role, "sub": role}
                conn.execute("SELECT set_config('request.jwt.claims', %s, true)", [json.dumps(claims)])
                if self.server.pre_request:  # PostgREST's db-pre-request
                    conn.execute(sql.SQL("SELECT {}()").format(
                        sql.Identifier(*self.server.pre_request.split("."))))
                if method in ("GET", "HEAD"):
                    reply = self.read(conn, table, query, count=prefs.get("count"))
                else:
                    reply = self.write(conn, method, table, info, query, payload, prefs)
                # Headers the request's SQL set, as PostgREST adds them: a JSON array of objects.
                extra = conn.execute("SELECT current_setting('response.headers', true)").fetchone()[0]
                for header in json.loads(extra) if extra else []:
                    reply.headers.update({str(name): str(value) for name, value in header.items()})
                if key is not None:
                    conn.execute("RESET ROLE")
                    conn.execute(
                        "UPDATE public.idempotency_keys SET status = %s, body = %s, headers = %s"
                        " WHERE key = %s",
                        [reply.status, reply.body, json.dumps(reply.headers), key])
                if method in ("POST", "PATCH", "DELETE"):  # /_test/slow: hold the transaction
                    time.sleep(self.server.state.take_slow())
        except psycopg.Error as error:
            raise pg_error(error, role) from None
        if method in ("GET", "HEAD"):
            return self.conditional(reply)
        return reply

    def claim_key(self, conn: psycopg.Connection, key: str, role: str, method: str,
                  body: bytes) -> Reply | None:
        """Insert the key's row, or return the stored answer of an earlier request with it.

        A concurrent request with the same key waits on the primary key until the first one
        commits (then replays its answer) or rolls back (then runs itself)."""
        digest = hashlib.sha256(f"{method}\n{self.path}\n".encode() + body).hexdigest()
        claimed = conn.execute(
            "INSERT INTO public.idempotency_keys (key, role, method, path, request_hash)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING RETURNING 1",
            [key, role, method, self.path, digest]).fetchone()
        if claimed:
            return None
        stored = conn.execute(
            "SELECT role, request_hash, status, body, headers FROM public.idempotency_keys"
            " WHERE key = %s", [key]).fetchone()
        stored_role, stored_digest, status, stored_body, headers = stored
        if stored_role != role or stored_digest != digest:
            raise ApiError(422, "SOVIDEMP",
                           "Idempotency-Key was already used for a different request",
                           details=f"key {key!r}")
        return Reply(status, bytes(stored_body or b""),
                     {**(headers or {}), "Idempotent-Replayed": "true"})

    def read(self, conn: psycopg.Connection, table: str, query: Query, count: str | None = None) -> Reply:
        """The rows of the page (`Range`, `limit`, `offset`), with `Content-Range: first-last/*`;
        with `Prefer: count=exact`, the total of the rows the filters match in place of `*`, 206
        when the page holds fewer and 416 when it starts past them; one object for a singular
        read, 406 PGRST116 when the page is not exactly one row. As PostgREST's Response.hs."""
        statement = sql.SQL("SELECT {cols} FROM {table}").format(
            cols=query.select, table=sql.Identifier(query.schema, table))
        statement = self.tail(statement, query)
        if query.csv:  # PostgREST's asCsvF: a header of the column names, then each row's text
            answer = sql.SQL(
                "(SELECT coalesce(string_agg(a.k, ','), '') FROM (SELECT json_object_keys(r)::text AS k"
                " FROM (SELECT row_to_json(hh) AS r FROM ({0}) hh LIMIT 1) s) a) || chr(10) ||"
                " coalesce(string_agg(substring(_t::text, 2, length(_t::text) - 2), chr(10)), '')"
            ).format(statement)
        else:
            answer = sql.SQL("coalesce(json_agg(_t), '[]')::text")
        text, rows, first_row = conn.execute(
            sql.SQL("SELECT {}, count(*), (json_agg(_t)->0)::text FROM ({}) _t").format(answer, statement),
            query.params * (2 if query.csv else 1)).fetchone()
        lower = query.first
        upper = lower + rows - 1
        total = None
        matched = self.tail(sql.SQL("SELECT 1 FROM {table}").format(
            table=sql.Identifier(query.schema, table)), query, reads=False)
        if count in ("exact", "estimated"):
            total = conn.execute(sql.SQL("SELECT count(*) FROM ({}) _c").format(matched),
                                 query.params).fetchone()[0]
        if count in ("planned", "estimated"):
            # PostgREST's MainTx: the planner's rows for the count query; `estimated` is the
            # larger of that and the exact count when the total passes db-max-rows, which this
            # server does not limit (so always).
            plan = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) {}").format(matched), query.params).fetchone()[0]
            planned = int(plan[0]["Plan"]["Plan Rows"])
            total = planned if count == "planned" else max(total, planned)
        shown = f"{lower}-{upper}" if total != 0 and lower <= upper else "*"
        content_range = f"{shown}/{'*' if total is None else total}"
        if total is not None and lower > total:
            error = range_not_satisfiable(f"An offset of {lower} was requested, but there are only {total} rows.")
            return Reply(416, error.body(), {"Content-Type": JSON_TYPE, "Content-Range": content_range,
                                             "Content-Location": query.location})
        if query.singular:
            if rows != 1:
                raise ApiError(406, "PGRST116", "Cannot coerce the result to a single JSON object",
                               details=f"The result contains {rows} rows")
            return Reply(200, first_row.encode(), {"Content-Type": SINGULAR_TYPE,
                                                   "Content-Range": content_range,
                                                   "Content-Location": query.location})
        status = 206 if total is not None and rows < total else 200
        return Reply(status, text.encode(), {"Content-Type": CSV_TYPE if query.csv else JSON_TYPE,
                                             "Content-Range": content_range,
                                             "Content-Location": query.location})

    @staticmethod
    def tail(statement: sql.Composable, query: Query, reads: bool = True) -> sql.Composable:
        parts = [statement]
        if query.where:
            parts.append(sql.SQL("WHERE ") + sql.SQL(" AND ").join(query.where))
        if reads and query.order:
            parts.append(sql.SQL("ORDER BY ") + sql.SQL(", ").join(query.order))
        if reads and query.last is not None:
            parts.append(sql.SQL("LIMIT {}").format(sql.Literal(max(0, query.last - query.first + 1))))
        if reads and query.first:
            parts.append(sql.SQL("OFFSET {}").format(sql.Literal(query.first)))
        return sql.SQL(" ").join(parts)

    def conditional(self, reply: Reply) -> Reply:
        """A strong ETag on 200 reads; a matching If-None-Match answers 304 without a body."""
        if reply.status != 200:
            return reply
        etag = '"' + hashlib.sha256(reply.body).hexdigest()[:32] + '"'
        reply.headers["ETag"] = etag
        wanted = [tag.strip().removeprefix("W/")
                  for tag in (self.headers.get("If-None-Match") or "").split(",")]
        if etag in wanted or "*" in wanted:
            return Reply(304, b"", {"ETag": etag})
        return reply

    def write(self, conn: psycopg.Connection, method: str, table: str,
              info: dict[str, list[str]], query: Query, payload: Any,
              prefs: dict[str, str]) -> Reply:
        if method != "POST" and (query.limit is not None or query.offset is not None
                                 or query.order):
            raise ApiError(400, "PGRST127", "Feature not implemented",
                           details="limit, offset and order on PATCH and DELETE")
        target = sql.Identifier(query.schema, table)
        params: list[Any] = []
        applied: list[str] = []
        if method == "POST":
            rows = payload if isinstance(payload, list) else [payload]
            if not all(isinstance(row, dict) for row in rows):
                raise invalid_json()
            if not rows:
                statement = None
            else:
                columns = query.columns or list(dict.fromkeys(k for row in rows for k in row))
                self.check_columns(table, info, columns)
                idents = sql.SQL(", ").join(map(sql.Identifier, columns))
                statement = sql.SQL(
                    "INSERT INTO {t} ({c}) SELECT {c} FROM json_populate_recordset(NULL::{t}, %s)"
                ).format(t=target, c=idents)
                params.append(json.dumps(rows))
                resolution = prefs.get("resolution")
                if resolution in ("merge-duplicates", "ignore-duplicates"):
                    conflict = query.on_conflict or info["pk"]
                    action = (sql.SQL("DO NOTHING") if resolution == "ignore-duplicates" else
                              sql.SQL("DO UPDATE SET ") + sql.SQL(", ").join(
                                  sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c))
                                  for c in columns))
                    statement += sql.SQL(" ON CONFLICT ({}) ").format(
                        sql.SQL(", ").join(map(sql.Identifier, conflict))) + action
                    applied.append(f"resolution={resolution}")
            success = 201
        else:
            if method == "PATCH":
                if not isinstance(payload, dict):
                    raise invalid_json()
                if not payload:  # nothing to set: PostgREST answers without touching rows
                    statement = None
                else:
                    columns = list(payload)
                    self.check_columns(table, info, columns)
                    idents = sql.SQL(", ").join(map(sql.Identifier, columns))
                    statement = sql.SQL(
                        "UPDATE {t} SET ({c}) ="
                        " (SELECT {c} FROM json_populate_record(NULL::{t}, %s))"
                    ).format(t=target, c=idents)
                    params.append(json.dumps(payload))
            else:
                statement = sql.SQL("DELETE FROM {}").format(target)
            if statement is not None:
                statement = self.tail(statement, query, reads=False)
                params.extend(query.params)
            success = 204
        representation = prefs.get("return") == "representation"
        if prefs.get("return") in ("representation", "minimal"):
            applied.insert(0, f"return={prefs['return']}")
        headers = {"Preference-Applied": ", ".join(applied)} if applied else {}
        text = "[]"
        if statement is not None:
            returning = sql.SQL(" RETURNING *" if representation else " RETURNING 1")
            text = conn.execute(
                sql.SQL("WITH _w AS ({}) SELECT coalesce(json_agg(_t), '[]')::text"
                        " FROM (SELECT {} FROM _w) _t").format(
                    statement + returning, query.select if representation else sql.SQL("1")),
                params).fetchone()[0]
        if query.singular:  # PostgREST's failNotSingular: not one row, and the write rolls back
            written = json.loads(text)
            if len(written) != 1:
                raise ApiError(406, "PGRST116", "Cannot coerce the result to a single JSON object",
                               details=f"The result contains {len(written)} rows")
            text = json.dumps(written[0], separators=(",", ":"), ensure_ascii=False)
        if not representation:
            return Reply(success, b"", headers)
        headers["Content-Type"] = SINGULAR_TYPE if query.singular else JSON_TYPE
        return Reply(201 if method == "POST" else 200, text.encode(), headers)

    @staticmethod
    def check_columns(table: str, info: dict[str, list[str]], columns: list[str]) -> None:
        for column in columns:
            if column not in info["columns"]:
                raise ApiError(400, "PGRST204", f"Could not find the '{column}' column of "
                               f"'{table}' in the schema cache")

    # --- /_test/ control endpoints

    def control(self, method: str, path: str, body: bytes) -> Reply:
        state = self.server.state
        try:
            args = json.loads(body) if body.strip() else {}
        except ValueError:
            raise invalid_json() from None
        ok = Reply(200, b'{"ok":true}', {"Content-Type": JSON_TYPE})
        if (method, path) == ("GET", "/_test/health"):
            try:
                with self.server.connect() as conn:
                    conn.execute("SELECT 1")
                database = True
            except psycopg.Error:
                database = False
            return Reply(200, json.dumps({"ok": True, "database": database}).encode(),
                         {"Content-Type": JSON_TYPE})
        if (method, path) == ("POST", "/_test/fail"):
            rule = {"status": int(args.get("status", 503)),
                    "retry_after": args.get("retry_after"),
                    "count": int(args.get("count", 1)),
                    "after_commit": bool(args.get("after_commit", False)) or bool(args.get("hold", False)),
                    "hold": bool(args.get("hold", False))}
            if rule["hold"]:
                state.held.clear()
                state.release.clear()
            if rule["count"] > 0:
                with state.lock:
                    state.failures.append(rule)
            return ok
        if (method, path) == ("GET", "/_test/held"):
            # Waits (up to 30 s) until a held write has committed: a test's way to know, without
            # sleeping, that the server applied it.
            held = state.held.wait(30)
            return Reply(200 if held else 408, json.dumps({"held": held}).encode(), {"Content-Type": JSON_TYPE})
        if (method, path) == ("GET", "/_test/waiting"):
            # How many long polls wait for a commit now: a test's way to write only once a
            # reader waits, without sleeping.
            with self.server.commits:
                waiting = self.server.waiting_polls
            return Reply(200, json.dumps({"waiting": waiting}).encode(), {"Content-Type": JSON_TYPE})
        if (method, path) == ("POST", "/_test/release"):
            state.release.set()
            return ok
        if (method, path) == ("POST", "/_test/slow"):
            with state.lock:
                state.slow.extend([float(args.get("seconds", 0.5))] * int(args.get("count", 1)))
            return ok
        if (method, path) in (("POST", "/_test/expire"), ("POST", "/_test/renew")):
            token = str(args.get("token", ""))
            with state.lock:
                (state.expired.add if path.endswith("expire") else state.expired.discard)(token)
            return ok
        if (method, path) == ("POST", "/_test/reset"):
            with self.server.connect() as conn:
                conn.execute(
                    "TRUNCATE public.notes, public.lists, public.items, public.tasks, public.idempotency_keys,"
                    " public.team_docs, public.team_members")
                # After: the truncate above logs a 'trimmed' row per published table (and closes
                # every membership's period).
                conn.execute("TRUNCATE public.sovaria_changes, public.sovaria_memberships")
            state.clear()
            return ok
        if (method, path) == ("GET", "/_test/requests"):
            with state.lock:
                return Reply(200, json.dumps(state.requests).encode(), {"Content-Type": JSON_TYPE})
        if (method, path) == ("DELETE", "/_test/requests"):
            with state.lock:
                state.requests.clear()
            return ok
        raise ApiError(404, "PGRST125", "Invalid path specified in request URL")


# The server's own bookkeeping for Idempotency-Key (README "Idempotency-Key"): written as
# `authenticator` in each write's transaction, readable by no API user. The same table as in
# schema.sql, so a database set up by --setup and one set up by hand agree.
IDEMPOTENCY_TABLE = """
CREATE TABLE IF NOT EXISTS public.idempotency_keys (
    key          text PRIMARY KEY,
    role         text NOT NULL,
    method       text NOT NULL,
    path         text NOT NULL,
    request_hash text NOT NULL,
    status       int,
    body         bytea,
    headers      jsonb,
    created_at   timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON public.idempotency_keys FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, TRUNCATE ON public.idempotency_keys TO authenticator;
"""


def prepare_database(conninfo: str) -> list[str]:
    """What the server needs besides the user's tables: PostgREST's roles (checked, never made:
    they are the deployment's) and `idempotency_keys` (made if missing, idempotently, when the
    conninfo's user may create it). Returns what is still missing, one sentence each."""
    missing: list[str] = []
    with psycopg.connect(conninfo, autocommit=True) as conn:
        roles = {row[0] for row in conn.execute(
            "SELECT rolname FROM pg_roles WHERE rolname = ANY (%s)",
            [["authenticator", ANON, *USERS]]).fetchall()}
        absent = [role for role in ("authenticator", ANON, *USERS) if role not in roles]
        if absent:
            missing.append(f"role(s) {', '.join(absent)} do not exist: the server connects as "
                           "`authenticator` and switches to `anon`, `alice`, `bob` or `carol` per token "
                           "(--setup creates them; README.md, \"Tokens and roles\")")
            if "authenticator" in absent:
                return missing  # the table's grant names it
        exists = conn.execute("SELECT to_regclass('public.idempotency_keys') IS NOT NULL").fetchone()[0]
        if not exists:
            try:
                with conn.transaction():
                    # Two servers starting on one database: one creates, the other waits and sees it.
                    conn.execute("SELECT pg_advisory_xact_lock(hashtext('sovaria idempotency_keys'))")
                    conn.execute(IDEMPOTENCY_TABLE)
            except psycopg.Error as error:
                reason = error.diag.message_primary or str(error)
                missing.append("table public.idempotency_keys is missing and could not be created "
                               f"as this conninfo's user ({reason}): writes with an Idempotency-Key "
                               "will answer 404; run once with a superuser's conninfo or --setup")
    return missing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conninfo", required=True,
                        help="libpq conninfo (a superuser's for --setup)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--setup", action="store_true", help="apply schema.sql first")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")
    parser.add_argument("--db-pre-request", metavar="FUNCTION",
                        help="run FUNCTION() before each request, as PostgREST's db-pre-request")
    parser.add_argument("--schemas", default=SCHEMA, metavar="A,B",
                        help="the schemas served, as PostgREST's db-schemas: the first by default, "
                             "the others with Accept-Profile/Content-Profile (default: public)")
    parser.add_argument("--extra-search-path", default=SCHEMA, metavar="A,B",
                        help="schemas after the request's in search_path, as PostgREST's "
                             "db-extra-search-path (default: public)")
    args = parser.parse_args()

    if args.setup:
        # psql, not psycopg: schema.sql includes the change feed's SQL with `\\ir`.
        schema = Path(__file__).resolve().parent / "schema.sql"
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", args.conninfo, "-f", str(schema)],
                       check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, PGOPTIONS="-c client_min_messages=warning"))
    problems = prepare_database(args.conninfo)
    for problem in problems:
        print(f"restserver: {problem}", file=sys.stderr, flush=True)
    if any("authenticator" in problem for problem in problems):
        return 2  # it cannot connect at all
    schemas = [name.strip() for name in args.schemas.split(",") if name.strip()]
    extra = [name.strip() for name in args.extra_search_path.split(",") if name.strip()]
    server = RestServer(args.port, args.conninfo, args.verbose, args.db_pre_request, schemas, extra)

    def stop(signum: int, frame: Any) -> None:
        # shutdown() waits for serve_forever() to return: call it off the main thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
