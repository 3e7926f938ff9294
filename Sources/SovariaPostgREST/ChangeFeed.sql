-- Sovaria's change feed for PostgREST: what changed in the tables you publish, in commit order,
-- read by `PostgRESTChangeFeed` with a plain GET:
--
--     GET /rest/v1/sovaria_feed?select=p:position,k:key,o:op,r:row&table=eq.notes&position=gt.N&order=position&limit=500
--
-- Apply it once, as the owner of your schema (it is idempotent), then publish each table:
--
--     SELECT sovaria_publish('public.notes', key_column => 'id', visibility_column => 'owner');
--
-- The key column is one a unique index holds alone (the primary key's, as a rule), NOT NULL, of
-- a type whose text does not depend on the writer's settings: publishing refuses another, since
-- two rows sharing a key would take each other's place on a device. `sovaria_publish` says
-- what else it refuses, each with a typed error and nothing changed.
--
-- Table names. The feed names a table of the schema `public` by its name (`notes`: what the
-- client sends for a table of the API's default schema) and a table of any other schema by
-- `schema.name` (`table=eq.sales.orders`). If your API's default schema is not `public`
-- (PostgREST's `db-schemas = api`), publish its tables with `feed_name => 'orders'`. Two
-- published tables never share a feed name: `sovaria_publish` refuses the second.
-- `sovaria_published()` lists what is published. No name is derived from a table's name, so
-- any table name (up to PostgreSQL's 63 bytes) can be published.
--
-- Positions. A change's position is its transaction's id (xid8) times 2^22 plus its number within
-- the transaction. The view serves only the changes of transactions older than the oldest one
-- still running (`pg_snapshot_xmin` of the reader's snapshot): those have all committed or rolled
-- back, so no change can appear later below a position already served, and a reader that asked
-- for `position > N` never skips one. A sequence would not do: a transaction that takes position
-- 5 and commits after the one that took 6 is skipped by a reader that asked between the two
-- commits. The price: a transaction left open holds the feed back until it ends (never loses it).
--
-- Who sees what. Row-level security on the log decides it: `visible_to` is a copy of the row's
-- visibility column (the role that owns it), taken when the change is made, because a deleted row
-- is gone. A change of that column is logged as a delete for the old owner and an upsert for the
-- new one, so a row that leaves a user's sight leaves their answers. A row whose visibility
-- column is NULL is nobody's: no user sees its changes (as `owner = current_user` shows it to
-- nobody). Only the changes of a table published without a visibility column, and the `trimmed`
-- markers, are every reader's (`visible_to_all`). If your tables' policies are not
-- "owner = current_user", change the policy `sovaria_changes_select` to match them.
--
-- Teams. A table whose rows are a team's (RLS through a membership table: "team_id IN (SELECT
-- team_id FROM members WHERE user_name = current_user)") is published with the membership
-- table named:
--
--     SELECT sovaria_publish('public.docs', key_column => 'id', visibility_column => 'team_id',
--         membership => 'public.members', membership_user_column => 'user_name',
--         membership_team_column => 'team_id');
--
-- The log records each change's team (`visible_to`, with `visible_via` naming the membership),
-- and a user reads a change only if they were in its team at the change's position:
-- `sovaria_memberships` keeps each membership's period, from the position of the insert that
-- began it to that of the delete that ended it (the rows the membership table holds when
-- publishing have been members since position 0). A membership insert or delete is logged for
-- its user as a `trimmed` row of each table published through it (must-refetch): joining brings
-- the team's rows, leaving takes them away, with one fetch of the user's answers of each table
-- and not one change per row of the team (a team's rows can be many; a refetch costs what the
-- user's screens show). A membership table holds each (user, team) once.
--
-- Writes. A published table's writers log each row with one static INSERT (a row trigger) and
-- set the `Sovaria-Write-Position` header once per statement (a statement trigger); they send
-- no NOTIFY unless the table is published with `notify => true`, for a server that waits on the
-- channel `sovaria_changes` (Sovaria's test server's long poll): a NOTIFY serializes the commits
-- of every transaction that sent one. What a write costs: ChangesFromOtherDevices.md, "Write cost".
--
-- Retention. `sovaria_trim_changes(keep)` deletes the changes older than `keep` and leaves, per
-- table, one `trimmed` row at the highest position it deleted: a reader whose checkpoint is below
-- it reads that row first and knows it must fetch the table's answers again. A TRUNCATE of a
-- published table leaves a `trimmed` row too. The feed serves each row's last change, not every
-- write (below, at the view); `sovaria_compact_changes()` deletes the superseded changes it
-- serves to no one, a batch per call. Run each from a scheduled job of its own (one transaction
-- each), e.g. with pg_cron:
--
--     SELECT cron.schedule('sovaria-compact', '* * * * *', 'SELECT sovaria_compact_changes()');
--     SELECT cron.schedule('sovaria-trim', '0 * * * *', 'SELECT sovaria_trim_changes(''7 days'')');
--
-- Search path. This file is applied in the first schema of the applier's search path (its
-- objects are made there), and resolves names in that schema and pg_catalog alone: each of its
-- DO blocks sets the path to `schema, pg_temp` for its transaction (applied in one transaction,
-- `psql -1` or one multi-statement query, for the whole file; its end gives the applier's path
-- back, so nothing of it outlives the file), and the functions its owner runs (publishing,
-- trimming, compacting and what they call) keep that path (`SET search_path`, below). An
-- operator or function another role made in a schema of the caller's path never runs as the
-- caller (a `<>` of two `regclass` values did: a review after issue 62). So only trusted roles
-- may create objects in this file's schema: applying it warns of any other that may. The
-- triggers resolve names in pg_catalog alone. The file refuses to be applied in a schema while
-- its objects are in another (applied again from another search path, it would make a second,
-- empty feed and leave the first as it was).
DO $$
DECLARE
    elsewhere text;
BEGIN
    -- Until the path is set, every name is pg_catalog's, written so: the applier's path could
    -- hold a better match (a `format(text, name)` beats `format(text, VARIADIC "any")`).
    IF pg_catalog.current_schema() IS NULL THEN
        RAISE EXCEPTION 'sovaria: the search path names no schema that exists, to make the feed''s objects in'
            USING ERRCODE = 'invalid_schema_name';
    END IF;
    -- The plain statements below (the view, the policies, the functions' signatures) resolve
    -- names by the applier's path: with pg_catalog first (where PostgreSQL puts it unless the
    -- path names it), no object of another schema with pg_catalog's name and argument types is
    -- found before pg_catalog's (a path `public, planted, pg_catalog` bound the policies to
    -- another role's `=`: a review after issue 62).
    IF (SELECT s.name FROM pg_catalog.unnest(pg_catalog.current_schemas(true)) WITH ORDINALITY s(name, place)
        WHERE s.name OPERATOR(pg_catalog.!~) '^pg_temp' ORDER BY s.place LIMIT 1) OPERATOR(pg_catalog.<>) 'pg_catalog' THEN
        RAISE EXCEPTION 'sovaria: the search path names pg_catalog after another schema: %', pg_catalog.current_setting('search_path')
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Apply ChangeFeed.sql with pg_catalog first in the search path, or not named in it.';
    END IF;
    PERFORM pg_catalog.set_config('sovaria.applier_search_path', pg_catalog.current_setting('search_path'), true);
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    -- A schema holds a feed where it has the log and the row trigger's function (another table
    -- named `sovaria_changes`, or a session's temporary one, is no feed).
    SELECT string_agg(DISTINCT n.nspname::text, ', ') INTO elsewhere
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relname = 'sovaria_changes' AND c.relkind IN ('r', 'p') AND n.nspname <> current_schema()
        AND n.nspname !~ '^pg_(toast_)?temp_'
        AND EXISTS (SELECT FROM pg_proc f WHERE f.pronamespace = n.oid AND f.proname = 'sovaria_record_row');
    IF elsewhere IS NOT NULL AND to_regclass(format('%I.sovaria_changes', current_schema())) IS NULL THEN
        RAISE EXCEPTION 'sovaria: the change feed is in the schema % already, not in %', elsewhere, current_schema()
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Apply ChangeFeed.sql with a search path whose first schema is the feed''s.';
    END IF;
END
$$;

-- Leaves every privilege on each of `tables` but SELECT to its owner: revoked from PUBLIC and
-- from each role given it by name or by default privileges (which give Supabase's API roles
-- ALL on every table). (Run by another role, it revokes nothing.)
CREATE OR REPLACE FUNCTION sovaria_leave_writes_to_owner(tables regclass[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT DISTINCT c.oid::regclass AS tab, a.privilege_type AS what,
            CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END AS who
        FROM pg_class c, aclexplode(c.relacl) a
        WHERE c.oid = ANY (tables::oid[]) AND a.grantee <> c.relowner
            AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER')
    LOOP
        EXECUTE format('REVOKE %s ON %s FROM %s', g.what, g.tab, g.who);
    END LOOP;
END
$$;

-- The log and the membership periods are made, and closed to every other role's writes and
-- triggers, in one statement: applied statement by statement, the file left them open (to the
-- roles default privileges give ALL) until its end, and a trigger another role put on the log
-- in that moment stayed, to run as the log's owner with every logged row (a review after issue
-- 62). For the same reason the file refuses to go on over a trigger on either that it did not
-- make.
DO $do$
DECLARE
    foreign_triggers text;
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    CREATE TABLE IF NOT EXISTS sovaria_changes (
        position   bigint NOT NULL,
        "table"    text NOT NULL,
        key        text NOT NULL,
        op         text NOT NULL,  -- 'upsert', 'delete' or 'trimmed'
        row        jsonb,
        visible_to text,
        changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        seq        bigint GENERATED ALWAYS AS IDENTITY
    );
    -- Each membership's period, written by the membership table's trigger alone: `member` was
    -- in `team` (through the membership table `membership`, `schema.name`) at the positions
    -- after `joined` and before `left_at` (NULL: still). A user reads their own periods only:
    -- the log's policy asks this table as the reader.
    CREATE TABLE IF NOT EXISTS sovaria_memberships (
        membership text NOT NULL,
        member     text NOT NULL,
        team       text NOT NULL,
        joined     bigint NOT NULL,
        left_at    bigint
    );
    ALTER TABLE sovaria_changes ENABLE ROW LEVEL SECURITY;
    ALTER TABLE sovaria_memberships ENABLE ROW LEVEL SECURITY;
    PERFORM sovaria_leave_writes_to_owner(ARRAY['sovaria_changes'::regclass, 'sovaria_memberships'::regclass]);
    SELECT string_agg(format('%I on %s', t.tgname, t.tgrelid::regclass), ', ') INTO foreign_triggers
    FROM pg_trigger t
    WHERE t.tgrelid IN ('sovaria_changes'::regclass, 'sovaria_memberships'::regclass) AND NOT t.tgisinternal;
    IF foreign_triggers IS NOT NULL THEN
        RAISE EXCEPTION 'sovaria: the log has triggers this file did not make (%): they run as the log''s owner',
            foreign_triggers
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Drop them, then apply ChangeFeed.sql again; no role but the log''s owner may hold TRIGGER on it.';
    END IF;
END
$do$;
-- `seq`: the order the changes were made in. Two writes of one row are made in the order they
-- commit (the second waits for the first's row lock), which positions need not follow.
ALTER TABLE sovaria_changes ADD COLUMN IF NOT EXISTS seq bigint GENERATED ALWAYS AS IDENTITY;
-- `visible_via`: for a table published through a membership table, that table (`schema.name`):
-- `visible_to` is then the row's team, not its owner.
ALTER TABLE sovaria_changes ADD COLUMN IF NOT EXISTS visible_via text;

CREATE INDEX IF NOT EXISTS sovaria_memberships_by_member ON sovaria_memberships (member, membership, team);
DO $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    DROP POLICY IF EXISTS sovaria_memberships_select ON sovaria_memberships;
    CREATE POLICY sovaria_memberships_select ON sovaria_memberships FOR SELECT USING (member = current_user);
END
$$;
GRANT SELECT ON sovaria_memberships TO PUBLIC;
-- `visible_to_all` (added below, after the functions an upgrade needs): the change is every
-- reader's (a table without a visibility column, a `trimmed` marker). A NULL `visible_to` alone
-- means a row nobody owns, seen by nobody.
-- No CHECK on `op`: the triggers are the log's only writers (no other role keeps a write
-- privilege on it, see the end of this file), and a CHECK is compiled again by every statement
-- that inserts, which a trigger's insert is: about a tenth of a logged write's cost.
ALTER TABLE sovaria_changes DROP CONSTRAINT IF EXISTS sovaria_changes_op_check;
-- Two indexes, each a read of the feed's, and no more (every change pays for each): a page, its
-- count and the latest position read one table's changes by position (the primary key, which
-- also keeps positions unique); a change's newest state is its key's last change by `seq`.
-- A log made by an earlier version of this file had its primary key on `position` alone and a
-- third index beside it: replaced here, once.
DO $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    IF NOT EXISTS (SELECT FROM pg_constraint WHERE conrelid = 'sovaria_changes'::regclass AND contype = 'p'
                   AND conkey = ARRAY[(SELECT attnum FROM pg_attribute WHERE attrelid = 'sovaria_changes'::regclass
                                       AND attname = 'table'),
                                      (SELECT attnum FROM pg_attribute WHERE attrelid = 'sovaria_changes'::regclass
                                       AND attname = 'position')]::int2[]) THEN
        ALTER TABLE sovaria_changes DROP CONSTRAINT IF EXISTS sovaria_changes_pkey;
        ALTER TABLE sovaria_changes ADD CONSTRAINT sovaria_changes_pkey PRIMARY KEY ("table", position);
    END IF;
END
$$;
DROP INDEX IF EXISTS sovaria_changes_by_table;
CREATE INDEX IF NOT EXISTS sovaria_changes_by_key ON sovaria_changes ("table", key, seq);

-- Leaves EXECUTE on each of `functions` to its owner alone: revoked from PUBLIC and from each
-- role given it by name or by default privileges. (Run by another role, it revokes nothing.)
CREATE OR REPLACE FUNCTION sovaria_leave_to_owner(functions regprocedure[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT DISTINCT p.oid::regprocedure AS fn,
            CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END AS who
        FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
        WHERE p.oid = ANY (functions::oid[]) AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM %s', g.fn, g.who);
    END LOOP;
END
$$;

-- The triggers every published table gets. Per row, `sovaria_record_row` logs the change with
-- one static INSERT (planned once and kept, the log's name written into it when this file is
-- applied); per statement, `sovaria_record_statement` sets the write-position header once and,
-- for a table published with `notify => true`, notifies once. Both SECURITY DEFINER: writers need
-- no privilege on the log; their search path is pg_catalog's alone, so no object a user can
-- create is resolved by them. The changes of a transaction are numbered in the local setting
-- `sovaria.change_number` (it ends with the transaction); `sovaria.announced_number` is the
-- number the header last named.
DO $do$
DECLARE
    log text;
    memberships text;
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    log := format('%I.sovaria_changes', current_schema());
    memberships := format('%I.sovaria_memberships', current_schema());
    EXECUTE format($function$
CREATE OR REPLACE FUNCTION sovaria_record_row() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 1 SET bytea_output = hex SET IntervalStyle = postgres SET DateStyle = 'ISO, MDY' AS $body$
-- Arguments: the key column, the visibility column ('' for none: every reader's), the log, the
-- feed name, 'notify' or '', and the membership table the visibility column's team is read
-- through ('', or absent in a trigger of an earlier version: the column names the owner). Few
-- PL/pgSQL expressions and no PERFORM: PL/pgSQL prepares each expression again in every
-- transaction, and most writes are a transaction of one statement. A row's JSON is written
-- with PostgreSQL's default extra_float_digits, bytea_output, IntervalStyle and DateStyle,
-- whatever the writer set (a writer's `extra_float_digits = -15` logged 123.456 as 100, and
-- `DateStyle = 'SQL, DMY'` a daterange as `[01/02/2024,…)`, and the feed served them to every
-- reader: reviews after issue 62); its TimeZone stays the writer's (a timestamptz names the
-- same instant in any).
DECLARE
    number int := coalesce(nullif(current_setting('sovaria.change_number', true), ''), '0')::int;
    old_row jsonb;
    new_row jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        new_row := to_jsonb(NEW);
    ELSIF TG_OP = 'DELETE' THEN
        old_row := to_jsonb(OLD);
    ELSE
        old_row := to_jsonb(OLD);
        new_row := to_jsonb(NEW);
    END IF;
    -- A key or visibility column renamed or dropped since publishing: the row would be logged
    -- without a key, or as nobody's (leaving every reader's sight unannounced), so the write is
    -- refused until the table is published again.
    IF NOT (coalesce(new_row, old_row) ? TG_ARGV[0])
        OR (TG_ARGV[1] <> '' AND NOT (coalesce(new_row, old_row) ? TG_ARGV[1])) THEN
        RAISE EXCEPTION 'sovaria: %% has no column "%%" or "%%", which it was published with (renamed or dropped since)',
            TG_RELID::regclass, TG_ARGV[0], TG_ARGV[1]
            USING ERRCODE = 'undefined_column', HINT = 'Publish the table again, naming its columns as they are now.';
    END IF;
    -- A delete, or an update that moves the row to another key or another owner: the old row
    -- leaves first. Without a visibility column (''), `->> ''` is NULL on both sides.
    IF TG_OP <> 'INSERT' AND (new_row IS NULL
        OR old_row ->> TG_ARGV[0] IS DISTINCT FROM new_row ->> TG_ARGV[0]
        OR old_row ->> TG_ARGV[1] IS DISTINCT FROM new_row ->> TG_ARGV[1])
    THEN
        number := number + 1;
        INSERT INTO %1$s (position, "table", key, op, visible_to, visible_via, visible_to_all)
        VALUES (pg_current_xact_id()::text::bigint * 4194304 + number, TG_ARGV[3], old_row ->> TG_ARGV[0],
                'delete', old_row ->> TG_ARGV[1], nullif(TG_ARGV[5], ''), TG_ARGV[1] = '');
    END IF;
    IF new_row IS NOT NULL THEN
        number := number + 1;
        INSERT INTO %1$s (position, "table", key, op, row, visible_to, visible_via, visible_to_all)
        VALUES (pg_current_xact_id()::text::bigint * 4194304 + number, TG_ARGV[3], new_row ->> TG_ARGV[0],
                'upsert', new_row, new_row ->> TG_ARGV[1], nullif(TG_ARGV[5], ''), TG_ARGV[1] = '');
    END IF;
    -- A position is the transaction's id times 2^22 plus the change's number in it: past 2^22 it
    -- would reach the next transaction id's, and below 1 (the setting set by hand) the last one's,
    -- under positions already served, so the write is refused instead.
    IF set_config('sovaria.change_number', number::text, true)::int NOT BETWEEN 1 AND 4194303 THEN
        RAISE EXCEPTION 'sovaria: change number %% is out of range: more than 4194303 changes to published tables in one transaction, or sovaria.change_number set by hand', number
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    RETURN NULL;
END
$body$
$function$, log);

    EXECUTE format($function$
CREATE OR REPLACE FUNCTION sovaria_record_statement() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $body$
DECLARE
    number int := coalesce(nullif(current_setting('sovaria.change_number', true), ''), '0')::int;
    announced int := coalesce(nullif(current_setting('sovaria.announced_number', true), ''), '0')::int;
    headers text;
    -- The transaction's first position, less one: its id times 2^22.
    position bigint;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        -- A TRUNCATE logs no row: it leaves a `trimmed` row, so every reader fetches the table's
        -- answers again. The write-position header does not name it. The row is at this
        -- transaction's position: a change another transaction committed before the TRUNCATE,
        -- at a later position, is served after it (what the article says: run TRUNCATE as its
        -- transaction's first write).
        number := number + 1;
        IF number NOT BETWEEN 1 AND 4194303 THEN
            RAISE EXCEPTION 'sovaria: change number %% is out of range: more than 4194303 changes to published tables in one transaction, or sovaria.change_number set by hand', number
                USING ERRCODE = 'program_limit_exceeded';
        END IF;
        INSERT INTO %1$s (position, "table", key, op, visible_to_all)
        VALUES (pg_current_xact_id()::text::bigint * 4194304 + number, TG_ARGV[3], '', 'trimmed', true);
        headers := set_config('sovaria.change_number', number::text, true)
            || set_config('sovaria.announced_number', number::text, true);
        IF TG_ARGV[4] = 'notify' THEN
            PERFORM pg_notify('sovaria_changes', TG_ARGV[3]);
        END IF;
        RETURN NULL;
    ELSIF number <= announced THEN
        -- The statement logged nothing (or the other statement trigger of an upsert, an INSERT
        -- ... ON CONFLICT DO UPDATE, announced it): no header, no notification, no transaction id.
        RETURN NULL;
    END IF;
    -- The writer learns the position of its last change (PostgREST sends `response.headers`): its
    -- device stops showing the write over its answers once the feed has brought it there. The
    -- header this trigger set for an earlier statement is replaced where it stands, a new one
    -- added after the others (`sovaria_pre_request`'s), as text; headers set otherwise are read
    -- as JSON.
    headers := current_setting('response.headers', true);
    position := pg_current_xact_id()::text::bigint * 4194304;
    IF headers IS NULL OR headers IN ('', '[]') THEN
        headers := '[{"Sovaria-Write-Position": "' || (position + number) || '"}]';
    ELSIF announced > 0 AND strpos(headers, '{"Sovaria-Write-Position": "' || (position + announced) || '"}') > 0 THEN
        headers := replace(headers, '{"Sovaria-Write-Position": "' || (position + announced) || '"}',
                           '{"Sovaria-Write-Position": "' || (position + number) || '"}');
    ELSIF strpos(headers, 'Sovaria-Write-Position') = 0 AND headers LIKE '[{%%}]' THEN
        headers := left(headers, -1) || ', {"Sovaria-Write-Position": "' || (position + number) || '"}]';
    ELSE
        headers := (SELECT coalesce(jsonb_agg(h), '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
                'Sovaria-Write-Position', (position + number)::text))
            FROM jsonb_array_elements(headers::jsonb) h WHERE NOT h ? 'Sovaria-Write-Position')::text;
    END IF;
    headers := set_config('response.headers', headers, true)
        || set_config('sovaria.announced_number', number::text, true);
    -- Only for a server that waits on it (Sovaria's test server's long poll): NOTIFY makes every
    -- committing transaction that notified take one lock in turn, so writers that notify lose
    -- their group commit. PostgreSQL delivers one notification per transaction for the same
    -- channel and payload: a transaction's statements on one table wake a listener once.
    IF TG_ARGV[4] = 'notify' THEN
        PERFORM pg_notify('sovaria_changes', TG_ARGV[3]);
    END IF;
    RETURN NULL;
END
$body$
$function$, log);

    EXECUTE format($function$
CREATE OR REPLACE FUNCTION sovaria_record_membership() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET row_security = off AS $body$
-- A membership table's trigger. Arguments: its user column, its team column, the membership as
-- the log names it (`schema.name`), then each table published through it: its feed name and
-- 'notify' or '' (`sovaria_publish` writes them). A membership that ends closes its period and
-- one that begins opens one, each at a position of its own; each logs for its user a `trimmed`
-- row of every table published through it: the user's answers of those tables are fetched
-- again. A TRUNCATE (of the table, or of one of its partitions, which have this trigger too)
-- ends the periods whose row is gone, and its `trimmed` rows are every reader's.
--
-- A period ends below every transaction still running (`horizon`), this one included: a change
-- made by one of them, before or after the delete in its own order, commits when the user is no
-- longer in the team, so the user never reads it (the `trimmed` row fetches their answers again
-- once every one of them has ended).
DECLARE
    number int := coalesce(nullif(current_setting('sovaria.change_number', true), ''), '0')::int;
    xact bigint := pg_current_xact_id()::text::bigint * 4194304;
    horizon bigint := pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304;
    old_row jsonb;
    new_row jsonb;
    who text;
    ended bigint;
    membership_table regclass;
    -- This trigger's first three arguments as `tgargs` holds them: those of the membership
    -- table's row trigger too.
    saved_prefix bytea := convert_to(TG_ARGV[0], getdatabaseencoding()) || '\x00'::bytea
        || convert_to(TG_ARGV[1], getdatabaseencoding()) || '\x00'::bytea
        || convert_to(TG_ARGV[2], getdatabaseencoding()) || '\x00'::bytea;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        -- The rows left are read from the table this trigger fires on (its partition tree's
        -- root, which must carry the membership's row trigger: not a partition detached since),
        -- never from what its saved name resolves to now: the name could be another object's
        -- since, a view whose functions would run as this function's owner. With row security
        -- off, a policy that would hide rows from that owner fails the read instead.
        membership_table := coalesce(pg_partition_root(TG_RELID), TG_RELID::regclass);
        IF NOT EXISTS (
            SELECT FROM pg_trigger tr
            WHERE tr.tgrelid = membership_table AND tr.tgname = 'sovaria_membership' AND tr.tgparentid = 0
                AND substring(tr.tgargs FROM 1 FOR length(saved_prefix)) = saved_prefix)
        THEN
            RAISE EXCEPTION 'sovaria: %% is no longer part of the membership table %% (a partition detached from it)',
                TG_RELID::regclass, TG_ARGV[2]
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'Drop its trigger sovaria_membership_truncate.';
        END IF;
        EXECUTE format('UPDATE %2$s p SET left_at = $1 WHERE p.membership = $2 AND p.left_at IS NULL '
                       'AND NOT EXISTS (SELECT FROM %%s m WHERE to_jsonb(m.%%I) #>> ''{}''::text[] = p.member '
                       'AND to_jsonb(m.%%I) #>> ''{}''::text[] = p.team)', membership_table, TG_ARGV[0], TG_ARGV[1])
            USING horizon, TG_ARGV[2];
        GET DIAGNOSTICS ended = ROW_COUNT;
        IF ended = 0 THEN
            RETURN NULL;  -- a partition of no one, or the table's rows truncated a level up already
        END IF;
        number := number + 1;
        FOR i IN 3 .. TG_NARGS - 1 BY 2 LOOP
            INSERT INTO %1$s (position, "table", key, op, visible_to_all)
            VALUES (xact + number, TG_ARGV[i], '', 'trimmed', true);
        END LOOP;
    ELSE
        IF TG_OP <> 'INSERT' THEN old_row := to_jsonb(OLD); END IF;
        IF TG_OP <> 'DELETE' THEN new_row := to_jsonb(NEW); END IF;
        -- A user or team column renamed or dropped since publishing: every membership would look
        -- unchanged, and a member who left would go on reading the team (a review after issue
        -- 62), so the write is refused until a table is published through it again.
        IF NOT (coalesce(new_row, old_row) ? TG_ARGV[0] AND coalesce(new_row, old_row) ? TG_ARGV[1]) THEN
            RAISE EXCEPTION 'sovaria: the membership table %% has no column "%%" or "%%", which it was published with (renamed or dropped since)',
                TG_ARGV[2], TG_ARGV[0], TG_ARGV[1]
                USING ERRCODE = 'undefined_column',
                      HINT = 'Publish the tables published through it again, naming its columns as they are now.';
        END IF;
        IF old_row ->> TG_ARGV[0] IS NOT DISTINCT FROM new_row ->> TG_ARGV[0]
            AND old_row ->> TG_ARGV[1] IS NOT DISTINCT FROM new_row ->> TG_ARGV[1]
        THEN
            RETURN NULL;  -- an update that moves no one
        END IF;
        IF old_row IS NOT NULL THEN
            number := number + 1;
            who := old_row ->> TG_ARGV[0];
            UPDATE %2$s SET left_at = horizon
            WHERE membership = TG_ARGV[2] AND member = who AND team = old_row ->> TG_ARGV[1] AND left_at IS NULL;
            FOR i IN 3 .. TG_NARGS - 1 BY 2 LOOP
                INSERT INTO %1$s (position, "table", key, op, visible_to, visible_to_all)
                VALUES (xact + number, TG_ARGV[i], '', 'trimmed', who, false);
            END LOOP;
        END IF;
        IF new_row IS NOT NULL AND new_row ->> TG_ARGV[0] IS NOT NULL AND new_row ->> TG_ARGV[1] IS NOT NULL THEN
            number := number + 1;
            who := new_row ->> TG_ARGV[0];
            INSERT INTO %2$s (membership, member, team, joined)
            VALUES (TG_ARGV[2], who, new_row ->> TG_ARGV[1], xact + number);
            FOR i IN 3 .. TG_NARGS - 1 BY 2 LOOP
                INSERT INTO %1$s (position, "table", key, op, visible_to, visible_to_all)
                VALUES (xact + number, TG_ARGV[i], '', 'trimmed', who, false);
            END LOOP;
        END IF;
    END IF;
    -- Its changes set no header: marked announced, so a later statement that logs nothing
    -- does not name them either (a review after issue 62).
    IF (set_config('sovaria.change_number', number::text, true)
        || set_config('sovaria.announced_number', number::text, true) IS NULL)
        OR number NOT BETWEEN 0 AND 4194303 THEN
        RAISE EXCEPTION 'sovaria: change number %% is out of range: more than 4194303 changes to published tables in one transaction, or sovaria.change_number set by hand', number
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    FOR i IN 3 .. TG_NARGS - 1 BY 2 LOOP
        IF TG_ARGV[i + 1] = 'notify' THEN
            PERFORM pg_notify('sovaria_changes', TG_ARGV[i]);
        END IF;
    END LOOP;
    RETURN NULL;
END
$body$
$function$, log, memberships);
    -- Closed to every role but its owner in the statement that makes it: applied statement by
    -- statement, the file would leave a moment between the two in which another role could use
    -- it (a trigger of these on her own table, which would write the log as its owner).
    PERFORM sovaria_leave_to_owner(ARRAY(SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema()) AND p.proname IN ('sovaria_record_row', 'sovaria_record_statement', 'sovaria_record_membership')));
END
$do$;

-- What is published: each table with a trigger of the feed, the name the feed gives it, its key
-- and visibility columns (NULL: none), whether its writes notify, and the membership table its
-- visibility column's team is read through, with that table's user and team columns (NULL: the
-- visibility column names the owner). Read from the triggers
-- themselves, so it cannot drift. The row triggers of an earlier version of this file
-- (`sovaria_record_change`, which notified on every row) are listed too, until applying this
-- file publishes their tables again.
-- A trigger's arguments (`pg_trigger.tgargs`: each followed by a zero byte), as text.
CREATE OR REPLACE FUNCTION sovaria_trigger_arguments(tgargs bytea) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    args text[] := '{}';
    start int := 0;
BEGIN
    FOR i IN 0 .. length(tgargs) - 1 LOOP
        IF get_byte(tgargs, i) = 0 THEN
            args := args || convert_from(substring(tgargs FROM start + 1 FOR i - start),
                pg_catalog.getdatabaseencoding());
            start := i + 1;
        END IF;
    END LOOP;
    RETURN args;
END
$$;

-- The table that is the membership `name` (as published tables save it): the one whose
-- membership trigger saves that name, whatever the table is called now (it follows the table,
-- not the name); NULL if none does.
CREATE OR REPLACE FUNCTION sovaria_membership_table(name text) RETURNS regclass
LANGUAGE sql STABLE AS $$
    SELECT tr.tgrelid::regclass FROM pg_catalog.pg_trigger tr
    WHERE tr.tgname = 'sovaria_membership' AND tr.tgparentid = 0
        AND tr.tgfoid = to_regproc('sovaria_record_membership')
        AND (sovaria_trigger_arguments(tr.tgargs))[3] = name
    LIMIT 1
$$;

DROP FUNCTION IF EXISTS sovaria_published();
CREATE FUNCTION sovaria_published()
RETURNS TABLE (
    tab regclass, feed_name text, key_column text, visibility_column text, notifies boolean, membership text,
    membership_user_column text, membership_team_column text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    t record;
    args text[];
BEGIN
    FOR t IN SELECT DISTINCT ON (tr.tgrelid) tr.tgrelid, tr.tgargs, tr.tgfoid, c.relname
        FROM pg_catalog.pg_trigger tr JOIN pg_catalog.pg_class c ON c.oid = tr.tgrelid
        WHERE tr.tgfoid IN (to_regproc('sovaria_record_row'), to_regproc('sovaria_record_change'))
            AND tr.tgparentid = 0  -- not a partition's clone of its table's trigger
        ORDER BY tr.tgrelid
    LOOP
        args := sovaria_trigger_arguments(t.tgargs);
        tab := t.tgrelid;
        feed_name := coalesce(args[4], t.relname::text);
        key_column := args[1];
        visibility_column := nullif(args[2], '');
        notifies := coalesce(args[5] = 'notify', t.tgfoid = to_regproc('sovaria_record_change'));
        membership := nullif(args[6], '');
        membership_user_column := nullif(args[7], '');
        membership_team_column := nullif(args[8], '');
        RETURN NEXT;
    END LOOP;
END
$$;

-- Gives each membership table that a published table is published through its trigger, naming
-- every table published through it (what it logs a `trimmed` row of when a membership begins or
-- ends); a membership table no published table names any more loses its trigger (its periods
-- stay). A partitioned membership table's partitions get its TRUNCATE trigger too (statement
-- triggers are not cloned to partitions, and a TRUNCATE of one must end its periods); a
-- partition attached later gets it when a table is published through it again. Called by
-- `sovaria_publish`, and when this file is applied.
DROP FUNCTION IF EXISTS sovaria_refresh_membership_triggers();
CREATE OR REPLACE FUNCTION sovaria_refresh_membership_triggers(
    named regclass DEFAULT NULL, named_as text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    m record;
    old record;
    part regclass;
    target regclass;
    gone record;
    number int;
BEGIN
    -- Each membership is the table whose trigger saves its name (`sovaria_membership_table`),
    -- renamed since or not; `named` is the one `sovaria_publish` was just given, as `named_as`,
    -- which has no trigger yet the first time. A name no table's trigger saves is never looked
    -- up: a table someone made under a renamed membership table's name is not it.
    FOR m IN SELECT p.membership AS via, min(p.membership_user_column) AS user_column,
            min(p.membership_team_column) AS team_column,
            string_agg(format('%L, %L', p.feed_name, CASE WHEN p.notifies THEN 'notify' ELSE '' END), ', '
                       ORDER BY p.feed_name) AS feeds
        FROM sovaria_published() p WHERE p.membership IS NOT NULL GROUP BY p.membership
    LOOP
        target := coalesce(sovaria_membership_table(m.via), CASE WHEN m.via = named_as THEN named END);
        IF target IS NULL THEN
            -- No table is the membership any more (dropped, or its triggers dropped): no one is
            -- in its teams. Each open period ends below every running transaction, with a
            -- `trimmed` row for its member, as a membership's delete does.
            number := coalesce(nullif(current_setting('sovaria.change_number', true), ''), '0')::int;
            FOR gone IN UPDATE sovaria_memberships p SET left_at = pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304
                WHERE p.membership = m.via AND p.left_at IS NULL RETURNING p.member
            LOOP
                number := number + 1;
                INSERT INTO sovaria_changes (position, "table", key, op, visible_to, visible_to_all)
                SELECT pg_current_xact_id()::text::bigint * 4194304 + number, p.feed_name, '', 'trimmed', gone.member,
                    false
                FROM sovaria_published() p WHERE p.membership = m.via;
            END LOOP;
            PERFORM set_config('sovaria.change_number', number::text, true);
            RAISE WARNING 'sovaria: no table is the membership table % (dropped, or its triggers dropped): its periods are ended', m.via
                USING HINT = 'Publish the tables published through it again, naming the membership table.';
            CONTINUE;
        END IF;
        IF EXISTS (SELECT FROM pg_class c
                   WHERE (c.oid = target::oid OR c.oid IN (SELECT t.relid::oid FROM pg_partition_tree(target) t))
                       AND NOT pg_has_role(c.relowner, 'USAGE')) THEN
            RAISE EXCEPTION 'sovaria: % may not make the triggers of the membership table % again: only its owner may',
                current_user, target
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'Publish, and apply ChangeFeed.sql, as its owner or a member of its owner''s role.';
        END IF;
        -- Its triggers and its partitions' go, to be made again with the tables published now.
        FOR old IN SELECT tr.tgrelid::regclass AS rel, tr.tgname FROM pg_trigger tr
            WHERE tr.tgfoid = to_regproc('sovaria_record_membership') AND tr.tgparentid = 0
                AND (tr.tgrelid = target::oid OR tr.tgrelid IN (SELECT t.relid::oid FROM pg_partition_tree(target) t))
        LOOP
            EXECUTE format('DROP TRIGGER %I ON %s', old.tgname, old.rel);
        END LOOP;
        EXECUTE format('CREATE TRIGGER sovaria_membership AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW '
                       'EXECUTE FUNCTION sovaria_record_membership(%L, %L, %L, %s)',
                       target, m.user_column, m.team_column, m.via, m.feeds);
        EXECUTE format('CREATE TRIGGER sovaria_membership_truncate AFTER TRUNCATE ON %s FOR EACH STATEMENT '
                       'EXECUTE FUNCTION sovaria_record_membership(%L, %L, %L, %s)',
                       target, m.user_column, m.team_column, m.via, m.feeds);
        FOR part IN SELECT t.relid FROM pg_partition_tree(target) t WHERE t.relid::oid <> target::oid LOOP
            EXECUTE format('CREATE TRIGGER sovaria_membership_truncate AFTER TRUNCATE ON %s FOR EACH STATEMENT '
                           'EXECUTE FUNCTION sovaria_record_membership(%L, %L, %L, %s)',
                           part, m.user_column, m.team_column, m.via, m.feeds);
        END LOOP;
    END LOOP;
    -- A membership no published table names any more loses its triggers (its periods stay). A
    -- partition detached from a membership table keeps its TRUNCATE trigger: drop it by hand.
    FOR old IN SELECT tr.tgrelid AS rel, (sovaria_trigger_arguments(tr.tgargs))[3] AS name FROM pg_trigger tr
        WHERE tr.tgname = 'sovaria_membership' AND tr.tgparentid = 0
            AND tr.tgfoid = to_regproc('sovaria_record_membership')
            AND NOT EXISTS (SELECT FROM sovaria_published() p
                            WHERE p.membership = (sovaria_trigger_arguments(tr.tgargs))[3])
    LOOP
        FOR m IN SELECT tr.tgrelid::regclass AS rel, tr.tgname FROM pg_trigger tr
            WHERE tr.tgfoid = to_regproc('sovaria_record_membership') AND tr.tgparentid = 0
                AND (tr.tgrelid = old.rel OR tr.tgrelid IN (SELECT t.relid::oid FROM pg_partition_tree(old.rel::regclass) t))
        LOOP
            EXECUTE format('DROP TRIGGER %I ON %s', m.tgname, m.rel);
        END LOOP;
    END LOOP;
END
$$;

-- Brings the periods of the membership table `membership` (saved as `via`) up to its rows, with no write to it
-- until this transaction ends: a period whose row is gone ends below every running transaction,
-- with a `trimmed` row for its user; a row with no open period begins one, since position 0 the
-- first time anything is published through the table (nothing of it is logged yet), else from
-- now (what was logged meanwhile stays unseen). A user and a team are named as the triggers
-- name them, by their JSON text (`to_jsonb(…) #>> '{}'`, what `->>` gives): a `char(4)` team
-- 'c1' is 'c1  ' there, and 'c1' as `::text`. Called by `sovaria_publish`, and when this file
-- is applied.
DROP FUNCTION IF EXISTS sovaria_sync_memberships(regclass, text, text);
CREATE OR REPLACE FUNCTION sovaria_sync_memberships(
    membership regclass, via text, membership_user_column text, membership_team_column text)
RETURNS void LANGUAGE plpgsql SET row_security = off AS $$
DECLARE
    first_time boolean;
    number int;
    gone record;
BEGIN
    -- Read as the caller: a table, never a view (whose functions would run as the caller).
    IF (SELECT relkind FROM pg_class WHERE oid = membership) NOT IN ('r', 'p') THEN
        RAISE EXCEPTION 'sovaria: the membership table % is not a table', membership
            USING ERRCODE = 'wrong_object_type';
    END IF;
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', membership);
    first_time := NOT EXISTS (SELECT FROM sovaria_memberships p WHERE p.membership = via);
    number := coalesce(nullif(current_setting('sovaria.change_number', true), ''), '0')::int;
    FOR gone IN EXECUTE format(
        'UPDATE sovaria_memberships p SET left_at = %s WHERE p.membership = %L AND p.left_at IS NULL '
        'AND NOT EXISTS (SELECT FROM %s m WHERE to_jsonb(m.%I) #>> ''{}''::text[] = p.member '
        'AND to_jsonb(m.%I) #>> ''{}''::text[] = p.team) '
        'RETURNING p.member', pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304, via,
        membership, membership_user_column, membership_team_column)
    LOOP
        number := number + 1;
        INSERT INTO sovaria_changes (position, "table", key, op, visible_to, visible_to_all)
        SELECT pg_current_xact_id()::text::bigint * 4194304 + number, p.feed_name, '', 'trimmed', gone.member,
            false
        FROM sovaria_published() p WHERE p.membership = via;
    END LOOP;
    number := number + 1;
    EXECUTE format('INSERT INTO sovaria_memberships (membership, member, team, joined) '
                   'SELECT DISTINCT %L, to_jsonb(m.%I) #>> ''{}''::text[], to_jsonb(m.%I) #>> ''{}''::text[], %s FROM %s m '
                   'WHERE m.%2$I IS NOT NULL AND m.%3$I IS NOT NULL AND NOT EXISTS ('
                   'SELECT FROM sovaria_memberships p WHERE p.membership = %1$L '
                   'AND p.member = to_jsonb(m.%2$I) #>> ''{}''::text[] AND p.team = to_jsonb(m.%3$I) #>> ''{}''::text[] '
                   'AND p.left_at IS NULL)',
                   via, membership_user_column, membership_team_column,
                   CASE WHEN first_time THEN 0 ELSE pg_current_xact_id()::text::bigint * 4194304 + number END,
                   membership);
    PERFORM set_config('sovaria.change_number', number::text, true);
END
$$;

-- Why the triggers of `rel` (a table to publish, or a membership table) may not run as this
-- log's owner, or NULL:
-- - Publishing again replaces a table's triggers, and so does applying this file (a membership
--   table's), and only its owner may drop one: the role publishing, and the log's owner (who
--   applies the file), each have its owner's rights (own it, or are a member of its owner's
--   role), for its partitions too. With the TRIGGER privilege alone a role published once, then
--   failed to publish again, and so did every application of the file.
-- - The triggers run as the log's owner and write each row as `to_jsonb` does, which runs a
--   type's cast to `json` where it has one: the function of whoever may make that cast (the
--   type's owner) or replace it (the function's owner). So each type a row's JSON reaches
--   (through arrays, composite types and their attributes; a domain's casts are never used)
--   belongs to someone trusted as that owner: a superuser, the log's owner or the table's owner
--   (whom the log's owner trusts by publishing the table), or a member of either's role, as
--   does each such cast's function.
--   Another role's type could be given a cast later, to run as the log's owner on the next
--   write (a review after issue 62).
CREATE OR REPLACE FUNCTION sovaria_untrusted(rel regclass) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    log_owner oid := (SELECT p.proowner FROM pg_proc p WHERE p.oid = 'sovaria_record_row'::regproc::oid);
    reason text;
BEGIN
    SELECT format('%s is owned by %s, whose rights %s does not have: only its owner may replace its triggers',
                  c.oid::regclass, c.relowner::regrole,
                  format('%s (%s)', who.role::regrole, CASE WHEN who.turn = 2 THEN 'the log''s owner, who applies ChangeFeed.sql'
                                                       WHEN who.role = log_owner THEN 'publishing, and the log''s owner'
                                                       ELSE 'publishing' END))
    INTO reason
    FROM pg_class c,
        (VALUES (1, (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user)), (2, log_owner)) who(turn, role)
    WHERE (c.oid = rel::oid OR c.oid IN (SELECT t.relid::oid FROM pg_partition_tree(rel) t))
        AND NOT pg_has_role(who.role, c.relowner, 'USAGE')
    ORDER BY who.turn
    LIMIT 1;
    IF reason IS NOT NULL THEN
        RETURN reason;
    END IF;
    SELECT CASE WHEN reached.cast_function IS NULL
               THEN format('%s.%I is of the type %s, owned by %s, who could give it a cast to json that the'
                           ' triggers would run as the log''s owner', c.oid::regclass, reached.via, t.oid::regtype,
                           reached.owner::regrole)
               ELSE format('%s.%I is of the type %s, whose cast to json (%s) is owned by %s, who could make it'
                           ' run code of theirs as the log''s owner', c.oid::regclass, reached.via, t.oid::regtype,
                           reached.cast_function, reached.owner::regrole) END
    INTO reason
    FROM pg_class c
    CROSS JOIN LATERAL (
        WITH RECURSIVE types(typ, via) AS (
            SELECT a.atttypid, a.attname::text FROM pg_attribute a
            WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
          UNION
            SELECT n.typ, r.via FROM types r JOIN pg_type t ON t.oid = r.typ
            CROSS JOIN LATERAL (
                SELECT t.typbasetype WHERE t.typtype = 'd'
                UNION ALL SELECT t.typelem WHERE t.typsubscript = 'array_subscript_handler'::regproc::oid
                UNION ALL SELECT a.atttypid FROM pg_attribute a
                    WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
            ) n(typ)
        )
        SELECT r.typ, r.via, t.typowner AS owner, NULL::regproc AS cast_function
        FROM types r JOIN pg_type t ON t.oid = r.typ WHERE t.typtype <> 'd'
        UNION ALL
        SELECT r.typ, r.via, p.proowner, p.oid::regproc
        FROM types r JOIN pg_cast k ON k.castsource = r.typ AND k.casttarget = 'json'::regtype::oid
            JOIN pg_proc p ON p.oid = k.castfunc
    ) reached
    JOIN pg_type t ON t.oid = reached.typ
    WHERE c.oid = rel::oid AND reached.typ >= 16384
        -- A member of the table owner's role, or of the log owner's, may act as that owner
        -- already (add a column of her type, say): trusted as much.
        AND NOT pg_has_role(reached.owner, c.relowner, 'MEMBER') AND NOT pg_has_role(reached.owner, log_owner, 'MEMBER')
        AND NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.oid = reached.owner)
    LIMIT 1;
    RETURN reason;
END
$$;

-- Why `rel`'s changes may not be served whole, or NULL: a role that may read the feed may read
-- only some of its columns (column privileges, `GRANT SELECT (id, name) ON …`), and the feed
-- serves every column of each row a reader may see, so a column hidden from her would reach her
-- (a review after issue 62). A role that may not read the feed is no matter.
CREATE OR REPLACE FUNCTION sovaria_hidden_columns(rel regclass) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT format('%s may read the feed and only some of the columns of %s: the feed serves a row''s every column',
                  r.oid::regrole, rel)
    FROM pg_roles r
    WHERE NOT r.rolsuper AND NOT r.rolbypassrls
        AND has_table_privilege(r.oid, 'sovaria_changes', 'SELECT') AND has_table_privilege(r.oid, 'sovaria_feed', 'SELECT')
        AND NOT has_table_privilege(r.oid, rel, 'SELECT') AND has_any_column_privilege(r.oid, rel, 'SELECT')
    ORDER BY r.rolname
    LIMIT 1
$$;

-- The roles that may read the feed and not `rel` (NULL: none), the first five by name (a
-- database with a role per user has many): what the feed serves them of it is the rows its
-- visibility column gives them, or, published without one, every row. Said by a warning, not
-- refused: a table is often published before it is granted.
CREATE OR REPLACE FUNCTION sovaria_unread_by(rel regclass) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT array_to_string((array_agg(r.oid::regrole::text ORDER BY r.rolname))[1:5], ', ')
        || CASE WHEN count(*) > 5 THEN format(' and %s more', count(*) - 5) ELSE '' END
    FROM pg_roles r
    WHERE NOT r.rolsuper AND NOT r.rolbypassrls
        AND has_table_privilege(r.oid, 'sovaria_changes', 'SELECT') AND has_table_privilege(r.oid, 'sovaria_feed', 'SELECT')
        AND NOT has_any_column_privilege(r.oid, rel, 'SELECT')
$$;


-- Publishes `tab`: its changes go to the log from now on, under `feed_name` (default: the table's
-- name in `public`, `schema.name` elsewhere). Publishing again replaces the table's triggers
-- (those of an older version of this file included).
--
-- `notify => true`: each transaction that changes the table sends one NOTIFY on the channel
-- `sovaria_changes` (its payload the feed name), for a server that holds a reader until a change
-- comes (Sovaria's test server's long poll). Off by default: PostgREST and Supabase listen to no
-- such channel, and a NOTIFY costs writers their group commit (see the function above).
DROP FUNCTION IF EXISTS sovaria_publish(regclass, text, text);
DROP FUNCTION IF EXISTS sovaria_publish(regclass, text, text, text);
DROP FUNCTION IF EXISTS sovaria_publish(regclass, text, text, text, boolean);
DO $do$
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    EXECUTE $function$
CREATE OR REPLACE FUNCTION sovaria_publish(
    tab regclass, key_column text, visibility_column text DEFAULT NULL, feed_name text DEFAULT NULL,
    notify boolean DEFAULT false, membership regclass DEFAULT NULL, membership_user_column text DEFAULT NULL,
    membership_team_column text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    via text := (SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = membership);
    feed text := coalesce(feed_name, (
        SELECT CASE WHEN n.nspname = 'public' THEN c.relname::text ELSE n.nspname || '.' || c.relname END
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tab));
    log text := (SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = 'sovaria_changes'::regclass);
    other regclass;
    args text;
    runs text;
    array_column text;
    col record;
    domain_of record;
    team_types text[] := '{}';
    team_padded int[] := '{}';
    part regclass;
    stale record;
    untrusted text;
    settings_typed regtype;
BEGIN
    IF feed IS NULL OR feed = '' THEN
        RAISE EXCEPTION 'sovaria: a feed name may not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Only a table's writes can be logged (a view's are its tables').
    IF (SELECT relkind FROM pg_class WHERE oid = tab) NOT IN ('r', 'p') THEN
        RAISE EXCEPTION 'sovaria: % is not a table', tab
            USING ERRCODE = 'wrong_object_type', HINT = 'Publish the table its rows are written to.';
    END IF;
    -- A column that is not there would log every key or owner as NULL: every row nobody's.
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = tab AND attname = key_column
                   AND attnum > 0 AND NOT attisdropped) THEN
        RAISE EXCEPTION 'sovaria: % has no column "%" (key_column)', tab, key_column
            USING ERRCODE = 'undefined_column';
    END IF;
    -- A key two rows may share would make them one row in the feed: each change carries its
    -- key's newest state, which could be the other row's. So the key is a unique index's one
    -- column (the primary key's, as a rule), of every row (no predicate), checked at each
    -- statement (not deferred: an UPDATE that shifts keys would log a key's delete after the
    -- upsert of the row that took it). And NOT NULL: a row without a key cannot be logged.
    IF NOT EXISTS (SELECT FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                   WHERE i.indrelid = tab AND i.indisunique AND i.indimmediate AND i.indnkeyatts = 1
                       AND i.indpred IS NULL AND a.attname = key_column) THEN
        RAISE EXCEPTION 'sovaria: % has no unique index on "%" alone, checked at each statement (key_column): two of its rows could share a key',
            tab, key_column
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Publish the column of the table''s primary key, or make the column UNIQUE (not DEFERRABLE).';
    END IF;
    IF visibility_column IS NOT NULL AND NOT EXISTS (
        SELECT FROM pg_attribute WHERE attrelid = tab AND attname = visibility_column
        AND attnum > 0 AND NOT attisdropped)
    THEN
        RAISE EXCEPTION 'sovaria: % has no column "%" (visibility_column)', tab, visibility_column
            USING ERRCODE = 'undefined_column';
    END IF;
    -- A row shared with several users or teams (an array of them) is not followed: its changes
    -- would name the array, which is no user's name and which no membership names, so no one
    -- would ever see them.
    SELECT format('%s.%I', a.attrelid::regclass, a.attname) INTO array_column
    FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
    WHERE (a.attrelid = tab AND a.attname = visibility_column
           OR a.attrelid = membership AND a.attname IN (membership_user_column, membership_team_column))
        AND a.attnum > 0 AND NOT a.attisdropped AND t.typcategory = 'A'
    LIMIT 1;
    IF array_column IS NOT NULL THEN
        RAISE EXCEPTION 'sovaria: % is an array: a row shared with several users or teams is not followed', array_column
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Name one owner or team per row (and one user and one team per membership row).';
    END IF;
    -- The type under each named column's domains (however deep), with the length or precision
    -- its text is written with, and whether it (or a domain of it) refuses NULL.
    FOR col IN SELECT a.attrelid, a.attname, a.atttypid AS base, a.atttypmod AS mod, a.attnotnull AS notnull
        FROM pg_attribute a
        WHERE (a.attrelid = tab AND a.attname IN (key_column, visibility_column)
               OR a.attrelid = membership AND a.attname IN (membership_user_column, membership_team_column))
            AND a.attnum > 0 AND NOT a.attisdropped
    LOOP
        LOOP
            SELECT t.typbasetype, t.typtypmod, t.typnotnull INTO domain_of FROM pg_type t WHERE t.oid = col.base;
            EXIT WHEN domain_of.typbasetype = 0;
            col.base := domain_of.typbasetype;
            col.mod := CASE WHEN col.mod = -1 THEN domain_of.typtypmod ELSE col.mod END;
            col.notnull := col.notnull OR domain_of.typnotnull;
        END LOOP;
        IF col.attrelid = tab AND col.attname = key_column THEN
            -- A row without a key cannot be logged.
            IF NOT col.notnull THEN
                RAISE EXCEPTION 'sovaria: % column "%" may be NULL (key_column): a row without a key cannot be logged',
                    tab, key_column
                    USING ERRCODE = 'invalid_parameter_value', HINT = 'Make the column NOT NULL.';
            END IF;
            -- A key is its JSON text (`->>`): a json or jsonb key's string "1" and number 1 are one
            -- text, two rows one key (a review after issue 62).
            IF col.base IN ('json'::regtype, 'jsonb'::regtype) THEN
                RAISE EXCEPTION 'sovaria: % column "%" is %, whose values "1" and 1 would be one key (key_column)',
                    tab, key_column, format_type(col.base, col.mod)
                    USING ERRCODE = 'invalid_parameter_value',
                          HINT = 'Publish a key of a text, integer, numeric or uuid type.';
            END IF;
            -- A key is matched by its JSON text: of these types that text depends on a session's
            -- settings (TimeZone, IntervalStyle, extra_float_digits, lc_monetary, bytea_output),
            -- so one key could be written two ways; in an array, a composite type or a range too
            -- (a key `{0.5}` of `float8[]`: a review after issue 62).
            SELECT t.oid::regtype INTO settings_typed
            FROM (WITH RECURSIVE types(typ) AS (
                    SELECT col.base
                  UNION
                    SELECT n.typ FROM types r JOIN pg_type t ON t.oid = r.typ
                    CROSS JOIN LATERAL (
                        SELECT t.typbasetype WHERE t.typtype = 'd'
                        UNION ALL SELECT t.typelem WHERE t.typsubscript = 'array_subscript_handler'::regproc::oid
                        UNION ALL SELECT a.atttypid FROM pg_attribute a
                            WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
                        UNION ALL SELECT g.rngsubtype FROM pg_range g WHERE g.rngtypid = t.oid
                        UNION ALL SELECT g.rngtypid FROM pg_range g WHERE g.rngmultitypid = t.oid
                    ) n(typ))
                SELECT typ FROM types) reached
            JOIN pg_type t ON t.oid = reached.typ
            WHERE t.oid IN ('timestamptz'::regtype, 'interval'::regtype, 'float4'::regtype, 'float8'::regtype,
                            'money'::regtype, 'bytea'::regtype)
            LIMIT 1;
            IF settings_typed IS NOT NULL THEN
                RAISE EXCEPTION 'sovaria: % column "%" is %, whose text depends on a session''s settings (key_column)',
                    tab, key_column, CASE WHEN settings_typed = col.base THEN format_type(col.base, col.mod)
                                          ELSE format('%s, of %s', format_type(col.base, col.mod), settings_typed) END
                    USING ERRCODE = 'invalid_parameter_value',
                          HINT = 'Publish a key of a text, integer, numeric or uuid type.';
            END IF;
        END IF;
        -- A user's name is compared with `current_user` as text: a char(n) column's text is
        -- padded ('alice   '), and would never equal it.
        IF col.base = 'bpchar'::regtype AND col.mod <> -1
            AND (col.attrelid = tab AND col.attname = visibility_column AND membership IS NULL
                 OR col.attrelid = membership AND col.attname = membership_user_column) THEN
            RAISE EXCEPTION 'sovaria: %.% names users as char(n), whose text is padded and never equals a user''s name',
                col.attrelid::regclass, quote_ident(col.attname)
                USING ERRCODE = 'invalid_parameter_value', HINT = 'Make the column text or varchar.';
        END IF;
        IF membership IS NOT NULL AND (col.attrelid = tab AND col.attname = visibility_column
                                       OR col.attrelid = membership AND col.attname = membership_team_column) THEN
            team_types := array_append(team_types, format('%s.%I is %s', col.attrelid::regclass, col.attname,
                                                          format_type(col.base, col.mod)));
            team_padded := array_append(team_padded, CASE WHEN col.base = 'bpchar'::regtype AND col.mod <> -1
                                                          THEN col.mod END);
        END IF;
    END LOOP;
    IF membership IS NOT NULL THEN
        IF (SELECT relkind FROM pg_class WHERE oid = membership) NOT IN ('r', 'p') THEN
            RAISE EXCEPTION 'sovaria: the membership table % is not a table', membership
                USING ERRCODE = 'wrong_object_type';
        END IF;
        -- A partition's rows are its table's too: the membership is the partitioned table (one
        -- membership per partition tree, whose TRUNCATE triggers it owns).
        IF (SELECT relispartition FROM pg_class WHERE oid = membership) THEN
            RAISE EXCEPTION 'sovaria: the membership table % is a partition', membership
                USING ERRCODE = 'invalid_parameter_value', HINT = 'Publish through its partitioned table.';
        END IF;
        -- A table published through before keeps the name it was first published under (its
        -- trigger saves it, and so do its periods and the log): renamed since, it is that
        -- membership still. A name another table is the membership of is not taken.
        via := coalesce((SELECT (sovaria_trigger_arguments(tr.tgargs))[3] FROM pg_trigger tr
                         WHERE tr.tgrelid = membership AND tr.tgname = 'sovaria_membership' AND tr.tgparentid = 0
                             AND tr.tgfoid = to_regproc('sovaria_record_membership')), via);
        IF sovaria_membership_table(via) IS DISTINCT FROM membership AND sovaria_membership_table(via) IS NOT NULL THEN
            RAISE EXCEPTION 'sovaria: % is the membership table %, renamed since it was published', sovaria_membership_table(via), via
                USING ERRCODE = 'duplicate_object',
                      HINT = 'Publish through that table (it keeps the name), or drop its sovaria_membership triggers first.';
        END IF;
        IF visibility_column IS NULL THEN
            RAISE EXCEPTION 'sovaria: publishing % through %: name its team column (visibility_column)', tab, membership
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF membership_user_column IS NULL OR membership_team_column IS NULL OR EXISTS (
            SELECT FROM unnest(ARRAY[membership_user_column, membership_team_column]) needed(name)
            WHERE NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = membership AND attname = needed.name
                              AND attnum > 0 AND NOT attisdropped))
        THEN
            RAISE EXCEPTION 'sovaria: % has no column "%" or "%" (membership_user_column, membership_team_column)',
                membership, membership_user_column, membership_team_column
                USING ERRCODE = 'undefined_column';
        END IF;
        -- A team is compared by its text on both sides. A char(n) team is padded to its length
        -- ('c1  '), so beside any other type, or another length, one team is named two ways.
        -- (Other types whose texts differ, numeric(10,2) beside int, are the publisher's to
        -- avoid: most pairs write the same text, integers of any size, text and varchar, uuid
        -- and a lowercase uuid in text, an enum and its labels in text.)
        IF cardinality(team_types) = 2 AND (team_padded[1] IS NOT NULL OR team_padded[2] IS NOT NULL)
            AND team_padded[1] IS DISTINCT FROM team_padded[2] THEN
            RAISE EXCEPTION 'sovaria: %: a team''s text would differ between them', array_to_string(team_types, ' and ')
                USING ERRCODE = 'datatype_mismatch', HINT = 'Give the two team columns one type.';
        END IF;
        SELECT p.tab INTO other FROM sovaria_published() p
        WHERE p.membership = via AND p.tab <> sovaria_publish.tab
            AND (p.membership_user_column, p.membership_team_column)
                IS DISTINCT FROM (sovaria_publish.membership_user_column, sovaria_publish.membership_team_column)
        LIMIT 1;
        IF other IS NOT NULL THEN
            RAISE EXCEPTION 'sovaria: % is published through % with other columns', other, membership
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSIF membership_user_column IS NOT NULL OR membership_team_column IS NOT NULL THEN
        RAISE EXCEPTION 'sovaria: membership columns without a membership table'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    untrusted := sovaria_hidden_columns(tab);
    IF untrusted IS NOT NULL THEN
        RAISE EXCEPTION 'sovaria: %', untrusted
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Grant SELECT on the whole table, or keep the hidden columns in a table of their own.';
    END IF;
    -- Inheritance children (not partitions) are read with their parent and written apart: their
    -- writes fire their own triggers, which publishing does not give them, and their keys are
    -- not in the parent's unique index (a review after issue 62).
    SELECT i.inhrelid::regclass INTO other FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent IN (tab, membership) AND NOT c.relispartition
    LIMIT 1;
    IF other IS NOT NULL THEN
        RAISE EXCEPTION 'sovaria: % inherits from %: an inheritance child''s writes are not followed', other,
            (SELECT i.inhparent::regclass FROM pg_inherits i WHERE i.inhrelid = other LIMIT 1)
            USING ERRCODE = 'feature_not_supported', HINT = 'Make the table partitioned, or publish each table apart.';
    END IF;
    FOR other IN SELECT r FROM unnest(ARRAY[tab, membership]) r WHERE r IS NOT NULL LOOP
        untrusted := sovaria_untrusted(other);
        IF untrusted IS NOT NULL THEN
            RAISE EXCEPTION 'sovaria: % may not be published through this log: %', other, untrusted
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'Publish as the table''s owner, with a log whose owner has the table owner''s rights, '
                             'and give each type its rows hold to the table''s owner or the log''s.';
        END IF;
    END LOOP;
    -- A partition published on its own would be published twice, and publishing the table
    -- would drop the partition's own triggers.
    SELECT p.tab INTO other FROM sovaria_published() p
    WHERE p.tab IN (SELECT t.relid FROM pg_partition_tree(sovaria_publish.tab) t WHERE t.relid <> sovaria_publish.tab)
    LIMIT 1;
    IF other IS NOT NULL THEN
        RAISE EXCEPTION 'sovaria: %, a partition of %, is published on its own', other, tab
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Unpublish the partition (drop its sovaria_changes triggers), then publish the table.';
    END IF;
    SELECT p.tab INTO other FROM sovaria_published() p
    WHERE p.feed_name = feed AND p.tab <> sovaria_publish.tab LIMIT 1;
    IF other IS NOT NULL THEN
        RAISE EXCEPTION 'sovaria: % is already published as "%"', other, feed
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Publish this table under another name: sovaria_publish(..., feed_name => ''...'').';
    END IF;
    -- The table's triggers, and its partitions' own TRUNCATE triggers (below); a partition's
    -- clones of the table's row trigger go with it.
    FOR stale IN SELECT tgrelid::regclass AS rel, tgname FROM pg_trigger
        WHERE (tgrelid = tab OR tgrelid IN (SELECT relid FROM pg_partition_tree(tab))) AND tgparentid = 0
            AND tgfoid IN (to_regproc('sovaria_record_row'), to_regproc('sovaria_record_statement'),
                           to_regproc('sovaria_record_change'), to_regproc('sovaria_record_truncate'))
    LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', stale.tgname, stale.rel);
    END LOOP;
    -- Names of their own, not derived from the table's (trigger names are per table): no table
    -- name is too long for them. Each trigger carries the table's arguments (what
    -- `sovaria_published` reads back).
    args := format('%L, %L, %L, %L, %L, %L, %L, %L', key_column, coalesce(visibility_column, ''), log, feed,
                   CASE WHEN notify THEN 'notify' ELSE '' END, coalesce(via, ''),
                   coalesce(membership_user_column, ''), coalesce(membership_team_column, ''));
    EXECUTE format('CREATE TRIGGER sovaria_changes AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW '
                   'EXECUTE FUNCTION sovaria_record_row(%s)', tab, args);
    EXECUTE format('CREATE TRIGGER sovaria_changes_statement AFTER INSERT OR UPDATE OR DELETE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION sovaria_record_statement(%s)', tab, args);
    EXECUTE format('CREATE TRIGGER sovaria_changes_truncate AFTER TRUNCATE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION sovaria_record_statement(%s)', tab, args);
    -- A statement on one partition (a TRUNCATE, or a write naming the partition) fires that
    -- partition's statement triggers alone (row triggers are cloned to partitions, statement
    -- triggers are not): each partition gets the table's two, or a write to it would set no
    -- write-position header and send no NOTIFY (a review after issue 62). A partition attached
    -- later gets them when the table is published again, or this file applied.
    FOR part IN SELECT relid FROM pg_partition_tree(tab) WHERE relid <> tab LOOP
        EXECUTE format('CREATE TRIGGER sovaria_changes_truncate AFTER TRUNCATE ON %s '
                       'FOR EACH STATEMENT EXECUTE FUNCTION sovaria_record_statement(%s)', part, args);
        EXECUTE format('CREATE TRIGGER sovaria_changes_statement AFTER INSERT OR UPDATE OR DELETE ON %s '
                       'FOR EACH STATEMENT EXECUTE FUNCTION sovaria_record_statement(%s)', part, args);
    END LOOP;
    IF membership IS NOT NULL THEN
        PERFORM sovaria_sync_memberships(membership, via, membership_user_column, membership_team_column);
    END IF;
    PERFORM sovaria_refresh_membership_triggers(membership, via);
    -- Two setups the feed serves otherwise than the table's policy would (a review after issue
    -- 62), said by warnings, since each has uses that are meant: a table under row-level
    -- security published without a visibility column (its every row is every reader's: meant
    -- where its policy shows every row to every reader), and a membership table a reader may
    -- write (her own row, a join request, makes her a member to the feed; so does every row the
    -- table's policies keep, an `accepted` or `removed_at` column notwithstanding).
    IF visibility_column IS NULL AND EXISTS (
        SELECT FROM pg_class c WHERE c.relrowsecurity
            AND (c.oid = tab OR c.oid IN (SELECT t.relid FROM pg_partition_tree(tab) t)))
        -- (Not where a policy shows every row to whoever reads it: `FOR SELECT USING (true)`.)
        AND NOT EXISTS (SELECT FROM pg_policy p WHERE p.polrelid = tab AND p.polpermissive AND p.polcmd IN ('r', '*')
                        AND pg_get_expr(p.polqual, p.polrelid) = 'true') THEN
        RAISE WARNING 'sovaria: % has row-level security and is published without a visibility column: the feed shows every reader its every row',
            tab
            USING HINT = 'Publish it with the column its policy reads (visibility_column), or through its membership table.';
    END IF;
    IF membership IS NOT NULL THEN
        -- (The first five by name: a database with a role per user has many.)
        SELECT array_to_string((array_agg(r.oid::regrole::text ORDER BY r.rolname))[1:5], ', ')
            || CASE WHEN count(*) > 5 THEN format(' and %s more', count(*) - 5) ELSE '' END INTO runs
        FROM pg_roles r
        WHERE NOT r.rolsuper AND NOT r.rolbypassrls  -- (they read every change already)
            AND has_table_privilege(r.oid, 'sovaria_changes', 'SELECT')
            AND has_table_privilege(r.oid, membership, 'INSERT, UPDATE');
        IF runs IS NOT NULL THEN
            RAISE WARNING 'sovaria: % may read the feed and write the membership table %: each of its rows is a membership to the feed, whatever its other columns say',
                runs, membership
                USING HINT = 'Keep in the membership table only the memberships that grant access (not requests, not removed ones).';
        END IF;
    END IF;
    runs := sovaria_unread_by(tab);
    IF runs IS NOT NULL THEN
        RAISE WARNING 'sovaria: % may read the feed and not %: the feed shows them its rows their visibility column gives them (every row, published without one)',
            runs, tab
            USING HINT = 'Grant them SELECT on the table, or take the feed from them.';
    END IF;
    -- Publishing, trimming and compacting are the owner's: say so if a role has been given them since.
    SELECT string_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END, ', ')
    INTO runs
    FROM pg_proc p, aclexplode(p.proacl) a
    WHERE p.oid IN ('sovaria_publish'::regproc, 'sovaria_trim_changes'::regproc, 'sovaria_published'::regproc,
                    'sovaria_compact_changes'::regproc)
        AND a.privilege_type = 'EXECUTE' AND a.grantee <> p.proowner;
    IF runs IS NOT NULL THEN
        RAISE WARNING 'sovaria: % may run sovaria_publish, sovaria_published, sovaria_trim_changes or sovaria_compact_changes', runs
            USING HINT = 'An API role would be offered them as /rpc/...: apply ChangeFeed.sql again, or REVOKE EXECUTE.';
    END IF;
    -- And the log's writes and triggers are its owner's: a trigger on it runs as its owner with
    -- every logged row (`GRANT ALL ON ALL TABLES IN SCHEMA …` gives TRIGGER).
    SELECT string_agg(DISTINCT format('%s (%s on %s)', CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                                            ELSE a.grantee::regrole::text END,
                                      a.privilege_type, c.oid::regclass), ', ')
    INTO runs
    FROM pg_class c, aclexplode(c.relacl) a
    WHERE c.oid IN ('sovaria_changes'::regclass, 'sovaria_memberships'::regclass) AND a.grantee <> c.relowner
        AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'TRIGGER');
    IF runs IS NOT NULL THEN
        RAISE WARNING 'sovaria: % may write the log or put a trigger on it, which would run as its owner', runs
            USING HINT = 'Apply ChangeFeed.sql again (it takes them back), or REVOKE them.';
    END IF;
END
$$;
$function$;
    -- Closed to every role but its owner in the statement that makes it: applied statement by
    -- statement, the file would leave a moment between the two in which another role could use
    -- it (a trigger of these on her own table, which would write the log as its owner).
    PERFORM sovaria_leave_to_owner(ARRAY(SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema()) AND p.proname IN ('sovaria_publish')));
END
$do$;

-- An upgrade from a log without `visible_to_all`: the `trimmed` markers, and the changes of a
-- table published without a visibility column, are every reader's; any other NULL owner is
-- nobody's (a name published both ways, in two schemas, is taken as the stricter).
DO $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'sovaria_changes'::regclass
                   AND attname = 'visible_to_all' AND NOT attisdropped) THEN
        ALTER TABLE sovaria_changes ADD COLUMN visible_to_all boolean NOT NULL DEFAULT false;
        UPDATE sovaria_changes SET visible_to_all = true
        WHERE op = 'trimmed' OR (visible_to IS NULL
            AND "table" IN (SELECT feed_name FROM sovaria_published() WHERE visibility_column IS NULL)
            AND "table" NOT IN (SELECT feed_name FROM sovaria_published() WHERE visibility_column IS NOT NULL));
    END IF;
END
$$;


-- The feed: the log up to the oldest running transaction. security_invoker: the reader's
-- row-level security applies. Each change carries its row's newest state the reader may see (the
-- last change of its key by `seq`), not the state it logged: a transaction that took its id early
-- can change a row after a later one did and commit after it, so its position comes first, and a
-- reader that applied the logged states in position order would keep the older one. A change the
-- view holds back (above the horizon) can lend its state early; its own turn brings it again.
-- A change superseded by a later one of its key (a later `seq` at a higher position, below the
-- horizon, that the reader may see) is not served: the later one brings the same newest state at
-- its own turn, and a reader's position passes this one's only by reading it. So a backlog costs
-- a reader one change per row changed, not one per write: a row written ten times while a device
-- was away comes back once. (Not one at a lower position: a device whose own write it would hide
-- could wait for a position it never reads.) The read probes the `(table, key, seq)` index for
-- each change it meets, served or stepped over; `sovaria_compact_changes()` deletes most of those
-- it steps over.
-- (Made in a DO block, after the path is set: "Search path", above.)
DO $do$
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    EXECUTE $view$
CREATE OR REPLACE VIEW sovaria_feed WITH (security_invoker = true) AS
    SELECT c.position, c."table", c.key, coalesce(newest.op, c.op) AS op,
        CASE WHEN newest.op IS NULL THEN c.row ELSE newest.row END AS row
    FROM sovaria_changes c
    LEFT JOIN LATERAL (
        SELECT l.op, l.row FROM sovaria_changes l
        WHERE c.op <> 'trimmed' AND l."table" = c."table" AND l.key = c.key AND l.op <> 'trimmed'
        ORDER BY l.seq DESC LIMIT 1
    ) newest ON true
    WHERE c.position < pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304
        AND (c.op = 'trimmed' OR NOT EXISTS (
            SELECT FROM sovaria_changes later
            WHERE later."table" = c."table" AND later.key = c.key AND later.seq > c.seq AND later.op <> 'trimmed'
                AND later.position > c.position
                AND later.position < pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304))
$view$;
END
$do$;

-- The position a read is current to: every change at or below it belongs to a transaction that
-- ended before the reader's snapshot, so the read holds it (it may hold later ones too). A device
-- applies to that answer only the feed's changes after it: an older one would set a row back.
DO $do$
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    EXECUTE $function$
CREATE OR REPLACE FUNCTION sovaria_position() RETURNS bigint
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304 - 1;
END
$function$;
END
$do$;

-- For PostgREST's `db-pre-request` (set it to "sovaria_pre_request", or call this first from your
-- own pre-request function: it sets `response.headers` whole, and a function that sets them
-- later in the request replaces it): every answer gets a `Sovaria-Position` header. It runs
-- before the read, in its transaction: the read's snapshot is as new or newer, so the position
-- holds.
-- VOLATILE: it sets a setting (a STABLE function may not change anything).
DO $do$
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    EXECUTE $function$
CREATE OR REPLACE FUNCTION sovaria_pre_request() RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT set_config('response.headers', json_build_array(json_build_object('Sovaria-Position',
        (pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304 - 1)::text))::text, true);
END
$function$;
END
$do$;

-- Deletes the served changes older than `keep`, leaving per table a `trimmed` row at the highest
-- position deleted (the earlier `trimmed` row included, so it is never lost). Returns the number
-- of changes deleted.
CREATE OR REPLACE FUNCTION sovaria_trim_changes(keep interval) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    horizon bigint := pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304;
    deleted bigint;
BEGIN
    WITH gone AS (
        DELETE FROM sovaria_changes
        WHERE position < horizon AND changed_at < clock_timestamp() - keep
        RETURNING position, "table", op
    ), marks AS (
        INSERT INTO sovaria_changes (position, "table", key, op, visible_to_all)
        SELECT max(position), "table", '', 'trimmed', true FROM gone GROUP BY "table"
        RETURNING 1
    )
    SELECT count(*) FILTER (WHERE op <> 'trimmed') INTO deleted FROM gone;
    RETURN deleted;
END
$$;

-- Deletes up to `max_changes` of the changes `sovaria_feed` serves to no one: each change c that a
-- later change l of its key supersedes (a later `seq`, at a higher position, below the horizon)
-- where every reader who may see c may see l too. That holds where the two have the same
-- `visible_to_all`, `visible_to` and `visible_via` and, for a team's change, no member left the
-- team between them (one who did may see c and not l). So deleting c leaves every reader's feed
-- as it was, under the policy this file creates or one that decides by those three columns as
-- step 6's do (a policy that reads other columns of the log: do not compact). A member who
-- leaves while it runs meets her leave's marker later and fetches again. What changes is the
-- reads' cost: a page read far behind steps over only what was superseded since the last run.
-- One call is one transaction: while it runs the feed holds back the commits made after it
-- began, as behind any transaction, so keep `max_changes` small and run it often. Returns the
-- number of changes deleted.
DROP FUNCTION IF EXISTS sovaria_compact_changes();
CREATE OR REPLACE FUNCTION sovaria_compact_changes(max_changes integer DEFAULT 10000) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    horizon bigint := pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304;
    deleted bigint;
BEGIN
    DELETE FROM sovaria_changes gone WHERE gone.ctid IN (
        SELECT c.ctid FROM sovaria_changes c
        WHERE c.op <> 'trimmed' AND c.position < horizon AND EXISTS (
            SELECT FROM sovaria_changes later
            WHERE later."table" = c."table" AND later.key = c.key AND later.seq > c.seq
                AND later.op <> 'trimmed' AND later.position > c.position AND later.position < horizon
                AND later.visible_to_all = c.visible_to_all AND later.visible_to IS NOT DISTINCT FROM c.visible_to
                AND later.visible_via IS NOT DISTINCT FROM c.visible_via
                AND (c.visible_via IS NULL OR NOT EXISTS (
                    SELECT FROM sovaria_memberships m
                    WHERE m.membership = c.visible_via AND m.team = c.visible_to
                        AND m.left_at > c.position AND m.left_at <= later.position)))
        LIMIT greatest(max_changes, 0));
    GET DIAGNOSTICS deleted = ROW_COUNT;
    RETURN deleted;
END
$$;

-- The functions its owner runs resolve names in this file's schema and pg_catalog, whatever the
-- caller's search path ("Search path", above). Made again each time the file is applied, since
-- `CREATE OR REPLACE FUNCTION` drops a function's settings.
DO $$
DECLARE
    f regprocedure;
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema())
            AND p.proname IN ('sovaria_trigger_arguments', 'sovaria_membership_table', 'sovaria_published',
                              'sovaria_refresh_membership_triggers', 'sovaria_sync_memberships', 'sovaria_untrusted',
                              'sovaria_publish', 'sovaria_trim_changes', 'sovaria_compact_changes',
                              'sovaria_leave_to_owner', 'sovaria_leave_writes_to_owner', 'sovaria_hidden_columns',
                              'sovaria_unread_by')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;

DO $do$
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    DROP POLICY IF EXISTS sovaria_changes_select ON sovaria_changes;
    -- Every reader's changes, those of rows the reader owns (a NULL owner matches nobody), and
    -- those of a team's rows made while the reader was in the team: the tables' own policies,
    -- as they were at each change's position.
    EXECUTE $policy$
CREATE POLICY sovaria_changes_select ON sovaria_changes FOR SELECT
    USING (visible_to_all OR CASE WHEN visible_via IS NULL THEN visible_to = current_user ELSE EXISTS (
        SELECT FROM sovaria_memberships m
        WHERE m.member = current_user AND m.membership = sovaria_changes.visible_via
            AND m.team = sovaria_changes.visible_to AND m.joined < sovaria_changes.position
            AND (m.left_at IS NULL OR sovaria_changes.position < m.left_at)) END)
$policy$;
END
$do$;

-- Publishing, trimming and compacting are the schema owner's (the position and the pre-request
-- function are read-only, and every API role runs them): PostgREST would offer every function a
-- role may run as /rpc/…, and a table published by an API user with no visibility column would
-- show its rows to everyone. Not only from PUBLIC: a role given EXECUTE by name keeps it after that, and
-- `ALTER DEFAULT PRIVILEGES … GRANT EXECUTE ON FUNCTIONS TO anon, authenticated` (Supabase's
-- projects have it) gives it so to every function created here. So applying this file leaves
-- EXECUTE on these to their owner alone; grant it again afterwards if you meant a role to have it.
-- Likewise the log is written by the trigger alone: no other role keeps a write privilege on it
-- or its view (TRUNCATE ignores row-level security). SELECT, which readers need, is yours to
-- grant, and to revoke from a role that must not read the feed (Supabase's default privileges
-- give it to `anon`).
DO $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    PERFORM sovaria_leave_to_owner(ARRAY[
        'sovaria_publish'::regproc, 'sovaria_published'::regproc, 'sovaria_trim_changes'::regproc,
        'sovaria_compact_changes'::regproc, 'sovaria_record_row'::regproc, 'sovaria_record_statement'::regproc,
        'sovaria_record_membership'::regproc, 'sovaria_refresh_membership_triggers'::regproc,
        'sovaria_sync_memberships'::regproc, 'sovaria_trigger_arguments'::regproc,
        'sovaria_membership_table'::regproc, 'sovaria_untrusted'::regproc,
        'sovaria_leave_to_owner'::regproc, 'sovaria_leave_writes_to_owner'::regproc,
        'sovaria_hidden_columns'::regproc, 'sovaria_unread_by'::regproc]::regprocedure[]);
    PERFORM sovaria_leave_writes_to_owner(
        ARRAY['sovaria_changes'::regclass, 'sovaria_feed'::regclass, 'sovaria_memberships'::regclass]);
END
$$;

-- An upgrade from the row triggers of an earlier version of this file: each table they publish is
-- published again, as it was (it notified, so it still does: publish it again with
-- `notify => false` where nothing listens), and their functions go.
DO $$
DECLARE
    p record;
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    FOR p IN SELECT * FROM sovaria_published() published WHERE EXISTS (
        SELECT FROM pg_trigger WHERE tgrelid = published.tab AND tgfoid = to_regproc('sovaria_record_change'))
    LOOP
        PERFORM sovaria_publish(p.tab, p.key_column, p.visibility_column, p.feed_name, notify => p.notifies,
            membership => p.membership::regclass, membership_user_column => p.membership_user_column,
            membership_team_column => p.membership_team_column);
    END LOOP;
END
$$;
DROP FUNCTION IF EXISTS sovaria_record_change();
DROP FUNCTION IF EXISTS sovaria_record_truncate();

-- What an earlier version of this file left and this one makes otherwise: the membership
-- tables' triggers are made again (they named each partition of a partitioned table as a table
-- of its own), their periods brought up to their rows (they named a char(n) team without its
-- padding), and each partition of a published table gets the table's TRUNCATE trigger. Nothing
-- else is published again (publishing takes each table's lock): publish a table again to have
-- its key and columns checked as `sovaria_publish` checks them now.
DO $$
DECLARE
    p record;
    part regclass;
    trigger_name text;
    events text;
    log text;
    reason text;
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    log := format('%I.sovaria_changes', current_schema());
    -- A table published before `sovaria_publish` refused what it refuses now: a warning, its
    -- feed going on (publish it again to have it checked, or refused).
    FOR p IN SELECT DISTINCT r.rel FROM sovaria_published() pub
        CROSS JOIN LATERAL (VALUES (pub.tab), (sovaria_membership_table(pub.membership))) r(rel)
        WHERE r.rel IS NOT NULL
    LOOP
        reason := coalesce(sovaria_untrusted(p.rel),
                           (SELECT sovaria_hidden_columns(p.rel) WHERE p.rel IN (SELECT tab FROM sovaria_published())));
        IF reason IS NOT NULL THEN
            RAISE WARNING 'sovaria: % is published, and publishing would refuse it now: %', p.rel, reason
                USING HINT = 'Make it publishable (see sovaria_publish), then publish it again; or drop its sovaria_ triggers.';
        ELSIF p.rel IN (SELECT tab FROM sovaria_published()) AND sovaria_unread_by(p.rel) IS NOT NULL THEN
            RAISE WARNING 'sovaria: % may read the feed and not %, which is published', sovaria_unread_by(p.rel), p.rel
                USING HINT = 'Grant them SELECT on the table, or take the feed from them.';
        END IF;
    END LOOP;
    PERFORM sovaria_refresh_membership_triggers();
    -- Each membership a table is (by its trigger, renamed or not): never a table someone made
    -- under a renamed one's name.
    FOR p IN SELECT DISTINCT ON (membership) * FROM sovaria_published() pub
        WHERE sovaria_membership_table(membership) IS NOT NULL
            -- Never read as the applier where a type's cast could run code of another role's
            -- (warned of above).
            AND sovaria_untrusted(sovaria_membership_table(membership)) IS NULL
        ORDER BY membership
    LOOP
        BEGIN
            PERFORM sovaria_sync_memberships(sovaria_membership_table(p.membership), p.membership,
                                             p.membership_user_column, p.membership_team_column);
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'sovaria: the periods of % were left as they were: %', p.membership, SQLERRM
                USING HINT = 'Publish the tables published through it again.';
        END;
    END LOOP;
    -- Each partition of a published table carries the table's two statement triggers, with the
    -- table's arguments: one missing is made, one naming another feed (a partition detached from
    -- one published table and attached to another) made again.
    FOR p IN SELECT * FROM sovaria_published() pub WHERE (SELECT relkind FROM pg_class WHERE oid = pub.tab) = 'p' LOOP
        FOR part, trigger_name, events IN
            SELECT t.relid, made.name, made.events FROM pg_partition_tree(p.tab) t,
                (VALUES ('sovaria_changes_truncate', 'TRUNCATE'),
                        ('sovaria_changes_statement', 'INSERT OR UPDATE OR DELETE')) made(name, events)
            WHERE t.relid <> p.tab AND NOT EXISTS (
                SELECT FROM pg_trigger tr, pg_trigger own
                WHERE tr.tgrelid = t.relid AND tr.tgname = made.name
                    AND own.tgrelid = p.tab AND own.tgname = made.name
                    AND tr.tgfoid = own.tgfoid AND tr.tgargs = own.tgargs)
        LOOP
            EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', trigger_name, part);
            -- The arguments `sovaria_publish` gives the table's triggers.
            EXECUTE format('CREATE TRIGGER %I AFTER %s ON %s '
                           'FOR EACH STATEMENT EXECUTE FUNCTION sovaria_record_statement(%L, %L, %L, %L, %L, %L, %L, %L)',
                           trigger_name, events, part, p.key_column, coalesce(p.visibility_column, ''), log, p.feed_name,
                           CASE WHEN p.notifies THEN 'notify' ELSE '' END, coalesce(p.membership, ''),
                           coalesce(p.membership_user_column, ''), coalesce(p.membership_team_column, ''));
        END LOOP;
    END LOOP;
END
$$;

-- The functions above resolve names in this schema (and pg_catalog): a role that may create
-- objects here could put an operator or function of hers where they run as their caller.
DO $$
DECLARE
    others text;
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    SELECT string_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END, ', ')
    INTO others
    FROM pg_namespace n, aclexplode(n.nspacl) a
    WHERE n.nspname = current_schema() AND a.privilege_type = 'CREATE' AND a.grantee <> n.nspowner;
    IF others IS NOT NULL THEN
        RAISE WARNING 'sovaria: % may create objects in the schema %, where the feed''s functions resolve names',
            others, current_schema()
            USING HINT = 'Apply ChangeFeed.sql in a schema only trusted roles may create objects in, or REVOKE CREATE.';
    END IF;
END
$$;

-- The applier's search path, where the file set its own for the rest of its transaction (applied
-- in one); applied statement by statement, each block's ended with its statement.
DO $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', pg_catalog.format('%I, pg_temp', pg_catalog.current_schema()), true);
    IF nullif(current_setting('sovaria.applier_search_path', true), '') IS NOT NULL THEN
        PERFORM set_config('search_path', current_setting('sovaria.applier_search_path'), true);
    END IF;
END
$$;
