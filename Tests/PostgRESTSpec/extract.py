#!/usr/bin/env python3
"""Extracts PostgREST's single-table GET spec cases into cases.json, and the fixture SQL they need.

Usage (see README.md):
    extract.py GIT_DIR [--pg-bin DIR]

GIT_DIR is a clone (or bare git directory) of github.com/PostgREST/postgrest. The spec files are
read at its HEAD with `git show`, so no work tree is needed. With PostgreSQL's binaries (initdb,
pg_ctl; Debian: /usr/lib/postgresql/15/bin) and psycopg, the fixture is loaded into a throwaway
cluster and every table's rows (its whole-table answer, as PostgREST writes it) and column types
are stored in the case file, so the Swift test needs no database.

The extraction is ours: a small reader of the few Haskell forms the spec writes requests in
(`get "path"`, `request methodGet "path" headers body`) followed by `shouldRespondWith` and the
expected answer (`[json|…|]`, a string, a status, and `{ matchStatus = …, matchHeaders = … }`).
Whatever it cannot read is listed under "skipped" with why; what it reads but leaves out (RPC,
embedding, aggregates, views…) under "excluded" with why.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse

SPEC_FILES = [
    "test/spec/Feature/Query/QuerySpec.hs",
    "test/spec/Feature/Query/AndOrParamsSpec.hs",
    "test/spec/Feature/Query/RangeSpec.hs",
    "test/spec/Feature/Query/UnicodeSpec.hs",
    # LimitOffsetSpec.hs was folded into RangeSpec.hs upstream; it is read when it exists.
    "test/spec/Feature/Query/LimitOffsetSpec.hs",
]
SCHEMA_FILE = "test/spec/fixtures/schema.sql"
DATA_FILE = "test/spec/fixtures/data.sql"
HERE = os.path.dirname(os.path.abspath(__file__))


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True, capture_output=True).stdout.decode()


# ---------------------------------------------------------------------------------------------
# Reading the Haskell forms


class Unreadable(Exception):
    pass


def haskell_string(text, i):
    """The Haskell string literal starting at text[i] == '"': (value, end index)."""
    assert text[i] == '"'
    i += 1
    out = []
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            n = text[i + 1]
            simple = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "\r", "&": ""}
            if n in simple:
                out.append(simple[n])
                i += 2
                continue
            m = re.match(r"\d+", text[i + 1 :])
            if m:
                out.append(chr(int(m.group(0))))
                i += 1 + len(m.group(0))
                continue
            m = re.match(r"\s+\\", text[i + 1 :])  # a string gap
            if m:
                i += 1 + len(m.group(0))
                continue
            raise Unreadable("an escape the reader does not know: \\" + n)
        if c == "\n":
            raise Unreadable("a string across lines")
        out.append(c)
        i += 1
    raise Unreadable("an unterminated string")


def skip_space(text, i):
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if text.startswith("--", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        return i


def header_list(text, i):
    """A header expression: `[("A", "b"), …]`, `(acceptHdrs "x")`, `(rangeHdrs $ ByteRangeFromTo 0 1)`,
    `mempty`, `[singular]`, or `acceptHdrs "x"` unparenthesized. Returns (headers, end index)."""
    i = skip_space(text, i)
    if text.startswith("mempty", i) or text.startswith("[]", i):
        return [], i + (6 if text[i] == "m" else 2)
    if text[i] == "(":
        depth, j = 0, i
        while True:
            if text[j] == '"':
                _, j = haskell_string(text, j)
                continue
            if text[j] == "(":
                depth += 1
            elif text[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        return header_expression(text[i + 1 : j].strip()), j + 1
    if text[i] == "[":
        depth, j = 0, i
        while True:
            if text[j] == '"':
                _, j = haskell_string(text, j)
                continue
            if text[j] == "[":
                depth += 1
            elif text[j] == "]":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        return header_expression(text[i : j + 1].strip()), j + 1
    m = re.match(r'acceptHdrs\s+"', text[i:])
    if m:
        value, end = haskell_string(text, i + len(m.group(0)) - 1)
        return [["Accept", value]], end
    raise Unreadable("a header expression the reader does not know: " + text[i : i + 40].split("\n")[0])


NAMED_HEADERS = {
    "singular": [["Accept", "application/vnd.pgrst.object+json"]],
    "rangeUnit": [["Range-Unit", "items"]],
    "planHdr": [["Accept", "application/vnd.pgrst.plan+json"]],
}


def header_expression(expr):
    m = re.fullmatch(r'acceptHdrs\s+"([^"]*)"', expr)
    if m:
        return [["Accept", m.group(1)]]
    m = re.fullmatch(r"(rangeHdrs|rangeHdrsWithCount)\s*\$\s*(ByteRangeFromTo\s+(\d+)\s+(\d+)|ByteRangeFrom\s+(\d+))", expr)
    if m:
        rng = f"{m.group(3)}-{m.group(4)}" if m.group(3) is not None else f"{m.group(5)}-"
        headers = [["Range-Unit", "items"], ["Range", rng]]
        if m.group(1) == "rangeHdrsWithCount":
            headers.insert(0, ["Prefer", "count=exact"])
        return headers
    if expr.startswith("[") and expr.endswith("]"):
        inner = expr[1:-1].strip()
        if not inner:
            return []
        headers = []
        pos = 0
        while pos < len(inner):
            pos = skip_space(inner, pos)
            if inner.startswith("(", pos):
                pos = skip_space(inner, pos + 1)
                name, pos = haskell_string(inner, pos)
                pos = skip_space(inner, pos)
                if inner[pos] != ",":
                    raise Unreadable("a header pair the reader does not know")
                pos = skip_space(inner, pos + 1)
                value, pos = haskell_string(inner, pos)
                pos = skip_space(inner, pos)
                if inner[pos] != ")":
                    raise Unreadable("a header pair the reader does not know")
                headers.append([name, value])
                pos += 1
            else:
                m = re.match(r"[A-Za-z_][A-Za-z0-9_']*", inner[pos:])
                if not m or m.group(0) not in NAMED_HEADERS:
                    raise Unreadable("a header the reader does not know: " + inner[pos : pos + 30])
                headers.extend(NAMED_HEADERS[m.group(0)])
                pos += len(m.group(0))
            pos = skip_space(inner, pos)
            if pos < len(inner):
                if inner[pos] != ",":
                    raise Unreadable("a header list the reader does not know")
                pos += 1
        return headers
    raise Unreadable("a header expression the reader does not know: " + expr[:40])


def expected_answer(text, i):
    """What follows `shouldRespondWith`: (status, body, headers, end index). body is
    {"json": value} or {"text": str} or None (status only)."""
    i = skip_space(text, i)
    body = None
    status = 200
    if text.startswith("[json|", i):
        end = text.index("|]", i)
        raw = text[i + 6 : end]
        if "#{" in raw:
            raise Unreadable("a JSON body with Haskell interpolation")
        try:
            body = {"json": json.loads(raw)}
        except ValueError as error:
            raise Unreadable(f"a JSON body Python's json cannot read ({error})")
        i = end + 2
    elif text.startswith("[str|", i):
        end = text.index("|]", i)
        body = {"text": text[i + 5 : end]}
        i = end + 2
    elif text[i] == '"':
        value, i = haskell_string(text, i)
        try:
            body = {"json": json.loads(value)}
        except ValueError:
            body = {"text": value}
    else:
        m = re.match(r"\d{3}\b", text[i:])
        if not m:
            raise Unreadable("an expectation the reader does not know: " + text[i : i + 40].split("\n")[0])
        status = int(m.group(0))
        return status, None, [], i + 3
    headers = []
    j = skip_space(text, i)
    if j < len(text) and text[j] == "{":
        depth, k = 0, j
        while True:
            if text[k] == '"':
                _, k = haskell_string(text, k)
                continue
            if text[k] in "{[":
                depth += 1
            elif text[k] in "}]":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        record = text[j + 1 : k]
        m = re.search(r"matchStatus\s*=\s*(\d+)", record)
        if m:
            status = int(m.group(1))
        for name, value in re.findall(r'"([^"]+)"\s*<:>\s*"([^"]*)"', record):
            headers.append([name, value])
        if "matchContentTypeSingular" in record:
            headers.append(["Content-Type", "application/vnd.pgrst.object+json; charset=utf-8"])
        elif "matchContentTypeJson" in record:
            headers.append(["Content-Type", "application/json; charset=utf-8"])
        i = k + 1
    return status, body, headers, i


CALL = re.compile(r'(?<![A-Za-z_])(get|request\s+(methodGet|methodPost|methodPatch|methodPut|methodDelete|methodHead|methodOptions))\s+"')
IT = re.compile(r'^\s*it\s+"((?:[^"\\]|\\.)*)"', re.M)


def calls_in(text):
    """Every request of the spec file, in order, with the line it starts on and its `it`."""
    its = [(m.start(), m.group(1)) for m in IT.finditer(text)]
    for m in CALL.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        owner = None
        owner_start = 0
        for start, name in its:
            if start <= m.start():
                owner, owner_start = name, start
        yield m, line, owner, owner_start


def read_call(text, m):
    """The request at match `m` and its expectation."""
    method = "GET" if m.group(1) == "get" else m.group(2)[len("method") :].upper()
    path, i = haskell_string(text, m.end() - 1)
    headers = []
    if method != "GET" or m.group(1) != "get":
        headers, i = header_list(text, i)
        i = skip_space(text, i)
        if text.startswith("mempty", i):
            i += 6
        elif text.startswith('""', i):
            i += 2
        elif text[i] == '"':
            _, i = haskell_string(text, i)
        elif text.startswith("[json|", i):
            i = text.index("|]", i) + 2
        else:
            raise Unreadable("a request body the reader does not know")
    line_start = text.rfind("\n", 0, m.start()) + 1
    before = text[line_start : m.start()]
    if "<-" in before or "<$>" in before or "`shouldSatisfy`" in before:
        raise Unreadable("checked by a custom assertion, not shouldRespondWith")
    i = skip_space(text, i)
    if not text.startswith("`shouldRespondWith`", i):
        raise Unreadable("not followed by shouldRespondWith")
    status, body, expect_headers, _ = expected_answer(text, i + len("`shouldRespondWith`"))
    return method, path, headers, status, body, expect_headers


# ---------------------------------------------------------------------------------------------
# Which cases are single-table reads


def split_path(path):
    base, _, query = path.partition("?")
    table = urllib.parse.unquote(base.lstrip("/"))
    items = []
    for item in query.split("&") if query else []:
        key, _, value = item.partition("=")
        items.append((urllib.parse.unquote_plus(key), urllib.parse.unquote_plus(value)))
    return table, items


AGGREGATES = re.compile(r"\b(count|sum|avg|min|max)\(\)|\.(count|sum|avg|min|max)\(")


def exclusion(path, headers, tables, views):
    """Why a GET is left out of the single-table cases (None: it is one)."""
    table, items = split_path(path)
    if table.startswith("rpc/"):
        return "rpc"
    if "/" in table or table == "":
        return "not a table path"
    for key, value in items:
        if key == "select":
            if AGGREGATES.search(value):
                return "aggregate"
            if "(" in value or "!" in value or "..." in value:
                return "embedding"
        if "." in key and key.split(".")[0] not in ("not", "or", "and") and not key.startswith("not."):
            return "embedding (a filter on an embedded resource)"
        if key in ("columns", "on_conflict"):
            return "a write parameter"
    if table in views:
        return "a view or foreign table (its rows come from elsewhere)"
    if table not in tables:
        return "not a table of the fixture's test schema"
    for name, value in headers:
        if name.lower() == "accept" and ("plan" in value or "geo+json" in value):
            return "a media type of another feature (plan, GeoJSON)"
    return None


# ---------------------------------------------------------------------------------------------
# The fixture


COPY_IN = re.compile(r"^COPY\s.*\bFROM\s+STDIN\b", re.I | re.S)
DOLLAR = re.compile(r"\$[A-Za-z_0-9]*\$")


def sql_statements(sql):
    """`sql` split into statements (dollar quotes, strings and comments kept whole)."""
    statements = []
    current = []
    i = 0
    dollar = None
    while i < len(sql):
        if dollar:
            end = sql.find(dollar, i)
            if end < 0:
                current.append(sql[i:])
                break
            current.append(sql[i : end + len(dollar)])
            i = end + len(dollar)
            dollar = None
            continue
        c = sql[i]
        if sql.startswith("--", i):
            end = sql.find("\n", i)
            end = len(sql) if end < 0 else end
            current.append(sql[i:end])
            i = end
            continue
        if c == "'":
            end = i + 1
            while True:
                end = sql.index("'", end)
                if sql.startswith("''", end):
                    end += 2
                    continue
                break
            current.append(sql[i : end + 1])
            i = end + 1
            continue
        # `do$llar$s` is a name, not a dollar quote: a quote never follows a name's character.
        after_name = i > 0 and (sql[i - 1].isalnum() or sql[i - 1] in "_$")
        if c == '"':  # a quoted name may hold a `;` ("Escap3e;")
            end = i + 1
            while True:
                end = sql.index('"', end)
                if sql.startswith('""', end):
                    end += 2
                    continue
                break
            current.append(sql[i : end + 1])
            i = end + 1
            continue
        m = DOLLAR.match(sql, i) if c == "$" and not after_name else None
        if m:
            dollar = m.group(0)
            current.append(dollar)
            i += len(dollar)
            continue
        if c == ";":
            statement = "".join(current).strip()
            i += 1
            if COPY_IN.search(strip_comments(statement)):
                # The rows follow the statement, up to a line `\.` (psql's form).
                end = sql.index("\n\\.", i)
                statement += ";" + sql[i:end] + "\n\\."
                i = end + 3
            statements.append(statement)
            current = []
            continue
        current.append(c)
        i += 1
    if "".join(current).strip():
        statements.append("".join(current).strip())
    return [s for s in statements if s and not all(line.strip().startswith("--") or not line.strip() for line in s.split("\n"))]


def strip_comments(statement):
    return "\n".join(line for line in statement.split("\n") if not line.strip().startswith("--")).strip()


TABLE = re.compile(r'CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:"?(\w+)"?\.)?("[^"]+"|[^\s("]+)', re.I)
VIEW = re.compile(r'CREATE\s+(?:OR\s+REPLACE\s+)?(?:MATERIALIZED\s+|FOREIGN\s+)?(?:VIEW|TABLE)\s+(?:"?(\w+)"?\.)?("[^"]+"|[^\s("]+)', re.I)
SEARCH_PATH = re.compile(r"SET\s+search_path\s*=\s*([^,\s]+)", re.I)


def unquote_name(name):
    return name[1:-1].replace('""', '"') if name.startswith('"') else name


def schema_objects(schema_sql):
    """Each statement of schema.sql with the schema its unqualified names are created in (the
    file sets `search_path` as it goes)."""
    schema = "public"
    for statement in sql_statements(schema_sql):
        body = strip_comments(statement)
        m = SEARCH_PATH.match(body)
        if m:
            schema = m.group(1).strip('"')
        yield schema, body


def test_relations(schema_sql):
    """The base tables and the other relations (views, foreign tables) of schema `test`."""
    tables, others = set(), set()
    for schema, body in schema_objects(schema_sql):
        m = TABLE.match(body)
        foreign = re.match(r"CREATE\s+FOREIGN\s+TABLE", body, re.I)
        if m and not foreign and (m.group(1) or schema) == "test":
            tables.add(unquote_name(m.group(2)))
            continue
        m = VIEW.match(body)
        if m and (m.group(1) or schema) == "test":
            others.add(unquote_name(m.group(2)))
    return tables, others


def fixture_sql(schema_sql, data_sql, wanted):
    """The CREATE statements of `wanted` tables of schema `test` (with the tables their foreign
    keys reference, the types and extensions they use) from schema.sql, and their rows from
    data.sql, as one script run with `search_path = test, public`."""
    made = {}
    for schema, body in schema_objects(schema_sql):
        m = TABLE.match(body)
        if m and not re.match(r"CREATE\s+FOREIGN", body, re.I) and (m.group(1) or schema) == "test":
            made[unquote_name(m.group(2))] = body
    needed = [name for name in wanted if name in made]
    for name in needed:  # grows as it goes: the references' references
        for ref in re.findall(r'REFERENCES\s+(?:test\.)?("[^"]+"|\w+)', made[name], re.I):
            ref = unquote_name(ref)
            if ref in made and ref not in needed:
                needed.append(ref)
    used_text = "\n".join(made[name] for name in needed)
    kept = []
    if re.search(r"\bltree\b", used_text):
        kept.append("CREATE EXTENSION IF NOT EXISTS ltree WITH SCHEMA public")
    for schema, body in schema_objects(schema_sql):
        m = re.match(r"CREATE\s+(TYPE|DOMAIN)\s+(?:(\w+)\.)?(\w+)", body, re.I)
        if m and (m.group(2) or schema) in ("test", "public") and re.search(r"\b" + re.escape(m.group(3)) + r"\b", used_text):
            kept.append(body)
    # Referenced tables first, in schema.sql's order.
    kept.extend(body for name, body in made.items() if name in needed)
    for statement in sql_statements(data_sql):
        body = strip_comments(statement)
        m = re.match(r'(?:INSERT\s+INTO|TRUNCATE\s+TABLE|COPY)\s+(?:"?(\w+)"?\.)?("[^"]+"|[^\s("]+)', body, re.I)
        if m and m.group(1) in (None, "test") and unquote_name(m.group(2)) in needed:
            kept.append(body)
    return kept


def load_fixture(statements, pg_bin, tables):
    """Loads `statements` into a throwaway PostgreSQL cluster and reads each table's whole-table
    answer (as PostgREST builds it: json_agg of the rows in the table's order), its columns and
    their types, and its primary key."""
    import psycopg  # Debian: python3-psycopg, for /usr/bin/python3

    root = tempfile.mkdtemp(prefix="pgrst-spec-")
    data, sock = os.path.join(root, "data"), os.path.join(root, "sock")
    os.makedirs(sock)
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "postgres", root], check=True)
    subprocess.run(as_postgres + [f"{pg_bin}/initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                    "--locale", "C"], check=True, capture_output=True)
    # The server's output goes to a log file: a pipe would stay open as long as the server runs.
    subprocess.run(as_postgres + [f"{pg_bin}/pg_ctl", "-D", data, "-l", os.path.join(root, "log"), "-o",
                    f"-p 5499 -k {sock} -c listen_addresses=''", "-w", "start"], check=True,
                   stdout=subprocess.DEVNULL)
    result = {}
    failed = []
    try:
        with psycopg.connect(host=sock, port=5499, user="postgres", dbname="postgres", autocommit=True) as conn:
            conn.execute("CREATE SCHEMA test")
            conn.execute("SET search_path = test, public")
            for statement in statements:
                try:
                    if COPY_IN.search(statement):
                        head, _, rows = statement.partition(";\n")
                        with conn.cursor() as cursor, cursor.copy(head) as copy:
                            copy.write(rows[: -len("\\.")])
                    else:
                        conn.execute(statement)
                except psycopg.Error as error:
                    failed.append({"statement": statement[:200], "error": str(error).split("\n")[0]})
            for table in tables:
                exists = conn.execute("SELECT to_regclass(%s)", (f'test."{table}"',)).fetchone()[0]
                if exists is None:
                    continue
                body = conn.execute(f'SELECT coalesce(json_agg(_t), \'[]\')::text FROM (SELECT * FROM test."{table}") _t').fetchone()[0]
                columns = conn.execute(
                    "SELECT a.attname, format_type(a.atttypid, a.atttypmod), t.typcategory FROM pg_attribute a"
                    " JOIN pg_type t ON t.oid = a.atttypid"
                    " WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                    (f'test."{table}"',)).fetchall()
                key = conn.execute(
                    "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                    " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary",
                    (f'test."{table}"',)).fetchall()
                result[table] = {
                    "columns": [{"name": n, "type": t, "category": c} for n, t, c in columns],
                    "primaryKey": [k[0] for k in key],
                    "rows": json.loads(body),
                }
    finally:
        subprocess.run(as_postgres + [f"{pg_bin}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop"],
                       stdout=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", root])
    return result, failed


# ---------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gitdir")
    parser.add_argument("--pg-bin", default="/usr/lib/postgresql/15/bin")
    args = parser.parse_args()
    gitdir = args.gitdir
    commit = git(gitdir, "rev-parse", "HEAD").strip()
    schema_sql = git(gitdir, "show", f"HEAD:{SCHEMA_FILE}")
    data_sql = git(gitdir, "show", f"HEAD:{DATA_FILE}")

    # Tables and views of schema `test` (the spec's db-schemas) as schema.sql creates them.
    tables, views = test_relations(schema_sql)
    # Types PostgREST writes through a cast to json of the schema's own (its "data
    # representations"): json_agg here would not write them as PostgREST does.
    represented = set(re.findall(r"CREATE\s+CAST\s+\((?:\w+\.)?(\w+)\s+AS\s+json\)", schema_sql, re.I))

    cases, skipped, excluded = [], [], []
    for spec_file in SPEC_FILES:
        try:
            text = git(gitdir, "show", f"HEAD:{spec_file}")
        except subprocess.CalledProcessError:
            continue
        # A config other than baseCfg changes what the server answers.
        config_lines = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(r"withConfig\s+\(", text)]
        wrote_in = {}
        for m, line, owner, owner_start in calls_in(text):
            where = {"file": spec_file, "line": line, "it": owner}
            try:
                method, path, headers, status, body, expect_headers = read_call(text, m)
            except (Unreadable, ValueError, IndexError) as error:
                skipped.append({**where, "why": str(error), "text": text[m.start() : m.start() + 120].split("\n")[0]})
                continue
            if method != "GET":
                excluded.append({**where, "method": method, "path": path, "why": "not a GET"})
                if method in ("POST", "PATCH", "PUT", "DELETE"):
                    wrote_in[owner_start] = True
                continue
            why = exclusion(path, headers, tables, views)
            if why is None and represented and any(
                    re.search(r"\b(?:public\.)?(" + "|".join(represented) + r")\b", statement)
                    for statement in fixture_sql(schema_sql, "", [split_path(path)[0]])
                    if TABLE.match(statement)):
                why = "data representations (a column whose type has its own cast to json)"
            if why is None and wrote_in.get(owner_start):
                why = "follows a write in the same test"
            if why is None and any(line > c for c in config_lines) and "Unicode" not in spec_file:
                why = "under a configuration other than baseCfg"
            if why is None and "Unicode" in spec_file:
                why = "a table of another schema (تست), which the fixture does not load"
            if why:
                excluded.append({**where, "method": method, "path": path, "why": why})
                continue
            table, _ = split_path(path)
            cases.append({
                "id": f"{os.path.basename(spec_file)[:-3]}:{line}",
                "table": table,
                "path": path,
                "headers": headers,
                "status": status,
                "body": body,
                "responseHeaders": expect_headers,
                "ordered": any(k == "order" for k, _ in split_path(path)[1])
                or any(h[0].lower() == "range" for h in headers),
                "source": {**where, "commit": commit},
            })
            # One `it` may check the same request twice; each is its own case.

    wanted = sorted({case["table"] for case in cases})
    statements = fixture_sql(schema_sql, data_sql, wanted)
    fixture_text = (
        f"-- The tables the PostgREST spec cases in cases.json read, from PostgREST {commit}\n"
        f"-- ({SCHEMA_FILE} and {DATA_FILE}), made by extract.py. Load into PostgreSQL 15:\n"
        "--   CREATE SCHEMA test; SET search_path = test, public; then this file.\n\n"
        + ";\n\n".join(statements) + ";\n"
    )
    with open(os.path.join(HERE, "fixture.sql"), "w") as out:
        out.write(fixture_text)

    table_data, failed = load_fixture(statements, args.pg_bin, wanted)
    for failure in failed:
        print("fixture statement failed:", failure["error"], "::", failure["statement"][:100].replace("\n", " "))
    for case in cases:
        if case["table"] not in table_data:
            case["skipFixture"] = "the fixture script did not create the table"
    result = {
        "postgrest": {"repository": "https://github.com/PostgREST/postgrest", "commit": commit,
                      "files": [f for f in SPEC_FILES], "fixtures": [SCHEMA_FILE, DATA_FILE]},
        "tables": table_data,
        "cases": cases,
        "excluded": excluded,
        "skipped": skipped,
    }
    with open(os.path.join(HERE, "cases.json"), "w") as out:
        json.dump(result, out, ensure_ascii=False, indent=1)
        out.write("\n")
    print(f"{len(cases)} cases over {len(wanted)} tables, {len(excluded)} excluded, {len(skipped)} skipped")
    reasons = {}
    for e in excluded:
        reasons[e["why"]] = reasons.get(e["why"], 0) + 1
    for why, n in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"  excluded {n:4}  {why}")
    for s in skipped:
        print(f"  skipped {s['file']}:{s['line']}: {s['why']}")


if __name__ == "__main__":
    main()
