-- Sovaria test server schema: test equipment, not product code.
--
-- Roles follow PostgREST's model (docs.postgrest.org, "Authentication" > "Overview of role system"):
--   authenticator  LOGIN NOINHERIT: restserver.py connects as it and, per request,
--                  `SET LOCAL ROLE`s into anon or a user role, so PostgreSQL enforces the grants
--                  and the row-level security below.
--   anon           the role of requests without a token: no table privileges at all, so any
--                  table access raises 42501 (PostgREST answers 401 to an anonymous 42501).
--   authenticated  a group role holding the table privileges; alice, bob and carol are its members.
--   alice, bob, carol  user roles (tokens `token-alice`, `token-bob`, `token-carol`).
--
-- Rows belong to the role that wrote them: `owner` defaults to current_user, and the policies
-- let a user see, insert, update and delete only rows whose owner is that user.
--
-- Which writes of another user's row raise 42501 (PostgREST: 403), and which do not:
--   * INSERT with "owner" set to someone else                       -> 42501 (INSERT WITH CHECK)
--   * upsert (INSERT ... ON CONFLICT DO UPDATE, i.e. POST with
--     Prefer: resolution=merge-duplicates) whose primary key is
--     another user's row                                           -> 42501 (UPDATE USING on the
--                                                                     existing row: for ON CONFLICT
--                                                                     PostgreSQL raises instead of
--                                                                     skipping the row)
--   * UPDATE of one's own row setting "owner" to someone else       -> 42501 (UPDATE WITH CHECK)
--   * UPDATE or DELETE filtered on another user's row               -> no error: the row is
--                                                                     invisible (USING), 0 rows
--                                                                     match, PostgREST answers 204
--                                                                     (or 200 with [])
--
-- Idempotent: apply it any number of times to a fresh or an already set-up database.
-- Roles are cluster-wide; everything else lives in this database.

DO $$
DECLARE
    r text;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'authenticator') THEN
        CREATE ROLE authenticator LOGIN NOINHERIT NOCREATEDB NOCREATEROLE NOSUPERUSER;
    END IF;
    FOREACH r IN ARRAY ARRAY['anon', 'authenticated', 'alice', 'bob', 'carol'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        END IF;
    END LOOP;
END
$$;

GRANT authenticated TO alice, bob, carol;
GRANT anon, alice, bob, carol TO authenticator;

CREATE TABLE IF NOT EXISTS public.lists (
    id    text PRIMARY KEY,
    owner text NOT NULL DEFAULT current_user,
    name  text NOT NULL,
    UNIQUE (owner, name)
);

CREATE TABLE IF NOT EXISTS public.notes (
    id         text PRIMARY KEY,
    owner      text NOT NULL DEFAULT current_user,
    list_id    text REFERENCES public.lists (id),
    title      text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    body       text,
    done       boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The local-first differential test's table (Tests/SovariaHTTPTests/OverlayDifferentialTests.swift):
-- text, integer, boolean and nullable columns, each with the default the overlay is told of.
CREATE TABLE IF NOT EXISTS public.items (
    id     text PRIMARY KEY,
    owner  text NOT NULL DEFAULT current_user,
    name   text NOT NULL,
    qty    integer NOT NULL DEFAULT 0,
    active boolean NOT NULL DEFAULT true,
    note   text,
    rank   integer
);

-- The conflict tests' table (Tests/SovariaHTTPTests/ConflictTests.swift): a version column the
-- server increments on every update, the trigger article "When offline edits conflict" gives.
CREATE TABLE IF NOT EXISTS public.tasks (
    id      text PRIMARY KEY,
    owner   text NOT NULL DEFAULT current_user,
    title   text NOT NULL,
    done    boolean NOT NULL DEFAULT false,
    version integer NOT NULL DEFAULT 1,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE OR REPLACE FUNCTION public.bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.version := OLD.version + 1;
    NEW.updated_at := clock_timestamp();
    RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS tasks_bump_version ON public.tasks;
CREATE TRIGGER tasks_bump_version BEFORE UPDATE ON public.tasks
    FOR EACH ROW EXECUTE FUNCTION public.bump_version();

-- One row per Idempotency-Key, written by restserver.py as `authenticator` in the same
-- transaction as the write it answers for. Users have no access to it.
CREATE TABLE IF NOT EXISTS public.idempotency_keys (
    key          text PRIMARY KEY,
    role         text NOT NULL,
    method       text NOT NULL,
    path         text NOT NULL,          -- path and query string as sent
    request_hash text NOT NULL,          -- sha256 of method, path and body: a reuse check
    status       int,                    -- the answer stored for replays
    body         bytea,
    headers      jsonb,
    created_at   timestamptz NOT NULL DEFAULT now()
);

GRANT USAGE ON SCHEMA public TO anon, authenticated;
REVOKE ALL ON public.lists, public.notes, public.items, public.tasks, public.idempotency_keys FROM anon;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.lists, public.notes, public.items, public.tasks TO authenticated;
GRANT SELECT, INSERT, UPDATE ON public.idempotency_keys TO authenticator;
-- For POST /_test/reset only (TRUNCATE ignores row-level security).
GRANT TRUNCATE ON public.lists, public.notes, public.items, public.tasks, public.idempotency_keys TO authenticator;

ALTER TABLE public.lists ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.items ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.tasks ENABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS lists_select ON public.lists;
DROP POLICY IF EXISTS lists_insert ON public.lists;
DROP POLICY IF EXISTS lists_update ON public.lists;
DROP POLICY IF EXISTS lists_delete ON public.lists;
CREATE POLICY lists_select ON public.lists FOR SELECT TO authenticated USING (owner = current_user);
CREATE POLICY lists_insert ON public.lists FOR INSERT TO authenticated WITH CHECK (owner = current_user);
CREATE POLICY lists_update ON public.lists FOR UPDATE TO authenticated
    USING (owner = current_user) WITH CHECK (owner = current_user);
CREATE POLICY lists_delete ON public.lists FOR DELETE TO authenticated USING (owner = current_user);

DROP POLICY IF EXISTS notes_select ON public.notes;
DROP POLICY IF EXISTS notes_insert ON public.notes;
DROP POLICY IF EXISTS notes_update ON public.notes;
DROP POLICY IF EXISTS notes_delete ON public.notes;
CREATE POLICY notes_select ON public.notes FOR SELECT TO authenticated USING (owner = current_user);
CREATE POLICY notes_insert ON public.notes FOR INSERT TO authenticated WITH CHECK (owner = current_user);
CREATE POLICY notes_update ON public.notes FOR UPDATE TO authenticated
    USING (owner = current_user) WITH CHECK (owner = current_user);
CREATE POLICY notes_delete ON public.notes FOR DELETE TO authenticated USING (owner = current_user);

DROP POLICY IF EXISTS tasks_all ON public.tasks;
CREATE POLICY tasks_all ON public.tasks FOR ALL TO authenticated
    USING (owner = current_user) WITH CHECK (owner = current_user);

DROP POLICY IF EXISTS items_all ON public.items;
CREATE POLICY items_all ON public.items FOR ALL TO authenticated
    USING (owner = current_user) WITH CHECK (owner = current_user);

-- Rows shared with a team (Tests/SovariaHTTPTests/TeamFeedTests.swift): a document is its team's,
-- and a user sees the documents of the teams `team_members` lists them in. Memberships are
-- written by the superuser (an admin's tool); a user reads their own.
CREATE TABLE IF NOT EXISTS public.team_members (
    team   text NOT NULL,
    member text NOT NULL,
    PRIMARY KEY (team, member)
);
CREATE TABLE IF NOT EXISTS public.team_docs (
    id    text PRIMARY KEY,
    team  text NOT NULL,
    title text NOT NULL
);
REVOKE ALL ON public.team_members, public.team_docs FROM anon;
GRANT SELECT ON public.team_members TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.team_docs TO authenticated;
GRANT TRUNCATE ON public.team_members, public.team_docs TO authenticator;
ALTER TABLE public.team_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.team_docs ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS team_members_own ON public.team_members;
CREATE POLICY team_members_own ON public.team_members FOR SELECT TO authenticated USING (member = current_user);
DROP POLICY IF EXISTS team_docs_all ON public.team_docs;
CREATE POLICY team_docs_all ON public.team_docs FOR ALL TO authenticated
    USING (team IN (SELECT team FROM public.team_members WHERE member = current_user))
    WITH CHECK (team IN (SELECT team FROM public.team_members WHERE member = current_user));

-- The change feed, as a user applies it to their database, then what the tests publish to it.
\ir ../../Sources/SovariaPostgREST/ChangeFeed.sql
\ir publish.sql
