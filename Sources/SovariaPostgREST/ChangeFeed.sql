-- Sovaria's change feed for PostgREST: what changed in the tables you publish, in commit order,
-- read by `PostgRESTChangeFeed` with a plain GET:
--
--     GET /rest/v1/sovaria_feed?select=p:position,k:key,o:op,r:row&table=eq.notes&position=gt.N&order=position&limit=500
--
-- Apply it once, as the owner of your schema (it is idempotent), then publish each table:
--
--     SELECT sovaria_publish('public.notes', key_column => 'id', visibility_column => 'owner');
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
-- new one, so a row that leaves a user's sight leaves their answers. If your tables' policies are
-- not "owner = current_user", change the policy `sovaria_changes_select` to match them.
--
-- Retention. `sovaria_trim_changes(keep)` deletes the changes older than `keep` and leaves, per
-- table, one `trimmed` row at the highest position it deleted: a reader whose checkpoint is below
-- it reads that row first and knows it must fetch the table's answers again. A TRUNCATE of a
-- published table leaves a `trimmed` row too.

CREATE TABLE IF NOT EXISTS sovaria_changes (
    position   bigint PRIMARY KEY,
    "table"    text NOT NULL,
    key        text NOT NULL,
    op         text NOT NULL CHECK (op IN ('upsert', 'delete', 'trimmed')),
    row        jsonb,
    visible_to text,
    changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    seq        bigint GENERATED ALWAYS AS IDENTITY
);
-- `seq`: the order the changes were made in. Two writes of one row are made in the order they
-- commit (the second waits for the first's row lock), which positions need not follow.
ALTER TABLE sovaria_changes ADD COLUMN IF NOT EXISTS seq bigint GENERATED ALWAYS AS IDENTITY;
CREATE INDEX IF NOT EXISTS sovaria_changes_by_table ON sovaria_changes ("table", position);
CREATE INDEX IF NOT EXISTS sovaria_changes_by_key ON sovaria_changes ("table", key, seq);

-- The trigger every published table gets: records each changed row's key, operation and new row.
-- SECURITY DEFINER: writers need no privilege on the log.
CREATE OR REPLACE FUNCTION sovaria_record_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    key_column text := TG_ARGV[0];
    visibility_column text := nullif(TG_ARGV[1], '');
    log regclass := TG_ARGV[2]::regclass;
    old_row jsonb := CASE WHEN TG_OP IN ('UPDATE', 'DELETE') THEN to_jsonb(OLD) END;
    new_row jsonb := CASE WHEN TG_OP IN ('INSERT', 'UPDATE') THEN to_jsonb(NEW) END;
    base bigint := pg_current_xact_id()::text::bigint * 4194304;
    number int := coalesce(nullif(current_setting('sovaria.change_number', true), ''), '0')::int;
BEGIN
    -- A delete, or an update that moves the row to another key or another owner: the old row
    -- leaves first.
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (
        old_row ->> key_column IS DISTINCT FROM new_row ->> key_column
        OR old_row ->> visibility_column IS DISTINCT FROM new_row ->> visibility_column))
    THEN
        number := number + 1;
        EXECUTE format('INSERT INTO %s (position, "table", key, op, visible_to) VALUES ($1, $2, $3, $4, $5)', log)
            USING base + number, TG_TABLE_NAME::text, old_row ->> key_column, 'delete',
                  old_row ->> visibility_column;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        number := number + 1;
        EXECUTE format('INSERT INTO %s (position, "table", key, op, row, visible_to) VALUES ($1, $2, $3, $4, $5, $6)', log)
            USING base + number, TG_TABLE_NAME::text, new_row ->> key_column, 'upsert', new_row,
                  new_row ->> visibility_column;
    END IF;
    -- Numbers the transaction's changes: a local setting ends with the transaction. Past 2^22 a
    -- position would reach the next transaction id's: refuse the write instead.
    IF number < 1 OR number >= 4194304 THEN
        RAISE EXCEPTION 'sovaria: more than 4194303 changes to published tables in one transaction'
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    PERFORM set_config('sovaria.change_number', number::text, true);
    -- The writer learns the position of its change (PostgREST sends `response.headers`): its
    -- device stops showing the write over its answers once the feed has brought it there.
    PERFORM set_config('response.headers', (
        SELECT coalesce(jsonb_agg(header), '[]'::jsonb)
            || jsonb_build_array(jsonb_build_object('Sovaria-Write-Position', (base + number)::text))
        FROM jsonb_array_elements(coalesce(nullif(current_setting('response.headers', true), ''), '[]')::jsonb) header
        WHERE NOT header ? 'Sovaria-Write-Position')::text, true);
    PERFORM pg_notify('sovaria_changes', TG_TABLE_NAME);
    RETURN NULL;
END
$$;

-- A TRUNCATE of a published table logs no row: it leaves a `trimmed` row, so every reader
-- fetches the table's answers again.
CREATE OR REPLACE FUNCTION sovaria_record_truncate() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    log regclass := TG_ARGV[2]::regclass;
    number int := coalesce(nullif(current_setting('sovaria.change_number', true), ''), '0')::int + 1;
BEGIN
    IF number < 1 OR number >= 4194304 THEN
        RAISE EXCEPTION 'sovaria: more than 4194303 changes to published tables in one transaction'
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    EXECUTE format('INSERT INTO %s (position, "table", key, op) VALUES ($1, $2, $3, $4)', log)
        USING pg_current_xact_id()::text::bigint * 4194304 + number, TG_TABLE_NAME::text, '', 'trimmed';
    PERFORM set_config('sovaria.change_number', number::text, true);
    PERFORM pg_notify('sovaria_changes', TG_TABLE_NAME);
    RETURN NULL;
END
$$;

-- Publishes `tab`: its changes go to the log from now on.
CREATE OR REPLACE FUNCTION sovaria_publish(tab regclass, key_column text, visibility_column text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    trigger_name text := 'sovaria_changes_' || (SELECT relname FROM pg_class WHERE oid = tab);
    log text := (SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = 'sovaria_changes'::regclass);
BEGIN
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', trigger_name, tab);
    EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', trigger_name || '_truncate', tab);
    EXECUTE format(
        'CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW '
        'EXECUTE FUNCTION sovaria_record_change(%L, %L, %L)',
        trigger_name, tab, key_column, coalesce(visibility_column, ''), log);
    EXECUTE format(
        'CREATE TRIGGER %I AFTER TRUNCATE ON %s FOR EACH STATEMENT '
        'EXECUTE FUNCTION sovaria_record_truncate(%L, %L, %L)',
        trigger_name || '_truncate', tab, key_column, coalesce(visibility_column, ''), log);
END
$$;

-- The feed: the log up to the oldest running transaction. security_invoker: the reader's
-- row-level security applies. Each change carries its row's newest state the reader may see (the
-- last change of its key by `seq`), not the state it logged: a transaction that took its id early
-- can change a row after a later one did and commit after it, so its position comes first, and a
-- reader that applied the logged states in position order would keep the older one. A change the
-- view holds back (above the horizon) can lend its state early; its own turn brings it again.
CREATE OR REPLACE VIEW sovaria_feed WITH (security_invoker = true) AS
    SELECT c.position, c."table", c.key, coalesce(newest.op, c.op) AS op,
        CASE WHEN newest.op IS NULL THEN c.row ELSE newest.row END AS row
    FROM sovaria_changes c
    LEFT JOIN LATERAL (
        SELECT l.op, l.row FROM sovaria_changes l
        WHERE c.op <> 'trimmed' AND l."table" = c."table" AND l.key = c.key AND l.op <> 'trimmed'
        ORDER BY l.seq DESC LIMIT 1
    ) newest ON true
    WHERE c.position < pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304;

-- The position a read is current to: every change at or below it belongs to a transaction that
-- ended before the reader's snapshot, so the read holds it (it may hold later ones too). A device
-- applies to that answer only the feed's changes after it: an older one would set a row back.
CREATE OR REPLACE FUNCTION sovaria_position() RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint * 4194304 - 1
$$;

-- For PostgREST's `db-pre-request` (set it to "sovaria_pre_request", or call this first from your
-- own pre-request function: it sets `response.headers` whole, and a function that sets them
-- later in the request replaces it): every answer gets a `Sovaria-Position` header. It runs
-- before the read, in its transaction: the read's snapshot is as new or newer, so the position
-- holds.
CREATE OR REPLACE FUNCTION sovaria_pre_request() RETURNS void
LANGUAGE sql STABLE AS $$
    SELECT set_config('response.headers',
        json_build_array(json_build_object('Sovaria-Position', sovaria_position()::text))::text, true)
$$;

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
        INSERT INTO sovaria_changes (position, "table", key, op)
        SELECT max(position), "table", '', 'trimmed' FROM gone GROUP BY "table"
        RETURNING 1
    )
    SELECT count(*) FILTER (WHERE op <> 'trimmed') INTO deleted FROM gone;
    RETURN deleted;
END
$$;

ALTER TABLE sovaria_changes ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS sovaria_changes_select ON sovaria_changes;
CREATE POLICY sovaria_changes_select ON sovaria_changes FOR SELECT
    USING (visible_to IS NULL OR visible_to = current_user);

-- Publishing and trimming are the schema owner's (the position and the pre-request function are
-- read-only, and every API role runs them): PostgREST would offer every function a role may
-- run as /rpc/…, and a table published by an API user with no visibility column would show its
-- rows to everyone.
REVOKE EXECUTE ON FUNCTION sovaria_publish(regclass, text, text), sovaria_trim_changes(interval),
    sovaria_record_change(), sovaria_record_truncate() FROM PUBLIC;
