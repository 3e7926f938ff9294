/*
 * sovaria_c_replay: replays a Sovaria trace (.sovtrace, issue 36) on the raw C library of an
 * engine, with the schema, settings and durability the Sovaria engine uses, so every workload
 * row of sovaria-bench has a ratio to the library itself.
 *
 *   sovaria-c-replay ENGINE FOLDER TRACE [--durability synced|flushed]
 *     ENGINE   sqlite | lmdb | leveldb
 *     FOLDER   where the store lives (created when missing): FOLDER/store.sqlite for SQLite, the
 *              folder itself for LMDB (data.mdb) and LevelDB, as SQLiteOfflineStore(fileURL:),
 *              LMDBOfflineStore(directory:) and LevelDBOfflineStore(directory:) open them
 *     TRACE    the trace file, read as a stream (a 1 MiB buffer; never held whole)
 *     --durability  synced (default, Sovaria's default) or flushed
 *
 * The trace format is TraceCodec's (Sources/Sovaria/Internal/TraceCodec.swift): the 16-byte header
 * "SOVTRACE", u32 LE version 1, u32 LE flags; then records: u8 opcode, uvarint nanoseconds since
 * the previous record, then 1 read key | 2 update key size | 3 insert key size | 4 delete key |
 * 5 scan prefix u8-hasAfter [after] limit | 6 readModifyWrite key size | 7 keys prefix |
 * 8 batch count × (u8 opcode 2|3|4, key, [size]) | 9 compact | 10 phase u8 (1 load, 2 run) |
 * 11 fetch key size; a string is a uvarint length and its bytes. A truncated last record is
 * ignored (and counted); an unknown opcode or a bad header ends the program naming the offset.
 *
 * What each record runs (closed loop, as fast as the library goes), like the Swift replay:
 *   read: get (a miss is counted in "misses")   update, insert: set   delete: delete
 *   scan: up to `limit` entries under `prefix` after `after` (keys and values copied out, each to
 *   a place of its own, as the Swift stores make a String of each)
 *   readModifyWrite: get, then set             keys: every key under `prefix` (copied out)
 *   batch: its writes in one transaction (LevelDB: one write batch)   compact: the engine's
 *   compaction (SQLite: checkpoint + VACUUM + checkpoint; LMDB: MDB_CP_COMPACT copy swapped in;
 *   LevelDB: leveldb_compact_range over everything)   fetch: get, and on a miss set
 * A written value is TraceValue.bytes(count: size, index: i): `size` bytes of 'a'..'z' repeated
 * from letter i % 26, where i is the record's position in the trace counting every record from 0
 * (phase records too); a batch's writes share their batch's i. Keys must have 1 to 511 bytes, as
 * in every Sovaria store: a call with another key is not run and counts as a failure (a batch
 * with one such key writes nothing). An engine error counts as a failure too (its message on
 * standard error, the first 10) and the replay goes on.
 *
 * Output: JSON lines on standard output, after the whole trace ran.
 *   One line per phase and operation kind that ran:
 *     {"line":"operation","engine":"sqlite","durability":"synced","phase":"run","operation":"read",
 *      "count":N,"failures":F,"misses":M,"p50Nanoseconds":..,"p95Nanoseconds":..,
 *      "p99Nanoseconds":..,"p999Nanoseconds":..,"maxNanoseconds":..,"elapsedNanoseconds":..,
 *      "opsPerSecond":..}
 *   operation: read update insert delete scan readModifyWrite keys batch compact fetch, and "all"
 *   (every operation of the phase). elapsedNanoseconds: the sum of the operations' own times;
 *   for "all", the phase's wall time from its first operation's start to its last one's end.
 *   opsPerSecond = count / elapsed. misses: gets that found nothing (read, readModifyWrite,
 *   fetch; 0 for the others). Latencies come from a log-linear histogram (64 linear buckets per
 *   power of two: within 1.6%), a percentile reports its bucket's upper bound, never above max.
 *   Records before the trace's first phase record belong to "run".
 *   Then one line for the trace:
 *     {"line":"trace","engine":"sqlite","durability":"synced","records":R,"operations":N,
 *      "ignoredTrailingBytes":B,"keysHashed":false,"elapsedNanoseconds":..}
 * Errors: a message on standard error, exit status 1 (2 for a bad command line).
 *
 * Built by `make c-baseline` into .build/sovaria-c-replay:
 *   cc -O2 -std=c11 -Wall sovaria_c_replay.c -lsqlite3 -llmdb -lleveldb -lm
 *
 * The engine setup repeats sovaria_c_baseline.c's (which mirrors the Swift engines) rather than
 * sharing it: that program's setup reads its own workload globals (the map sized for its key
 * count, its statements for its fixed operations).
 */
#define _DEFAULT_SOURCE /* O_CLOEXEC, fsync, mkdtemp-era POSIX in strict C11 mode */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <leveldb/c.h>
#include <lmdb.h>
#include <sqlite3.h>

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                      */

static const char *engine_name = "?";

static _Noreturn void die(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    fprintf(stderr, "sovaria-c-replay %s: ", engine_name);
    vfprintf(stderr, format, arguments);
    fputc('\n', stderr);
    va_end(arguments);
    exit(1);
}

static void *checked_realloc(void *memory, size_t size) {
    memory = realloc(memory, size ? size : 1);
    if (!memory) die("out of memory (%zu bytes)", size);
    return memory;
}

static unsigned long reported_failures;

/* An engine error: counted as a failure by the caller; the first few are shown. */
static void report(const char *action, const char *message) {
    if (reported_failures++ < 10) fprintf(stderr, "sovaria-c-replay %s: %s: %s\n", engine_name, action, message);
}

/* ------------------------------------------------------------------------------------------ */
/* Bytes                                                                                       */

typedef struct {
    unsigned char *data;
    size_t size, capacity;
} Bytes;

static void bytes_reserve(Bytes *bytes, size_t size) {
    if (size <= bytes->capacity) return;
    size_t capacity = bytes->capacity ? bytes->capacity : 64;
    while (capacity < size) capacity *= 2;
    bytes->data = checked_realloc(bytes->data, capacity);
    bytes->capacity = capacity;
}

static void bytes_set(Bytes *bytes, const void *data, size_t size) {
    bytes_reserve(bytes, size + 1); /* one spare byte: a page's lower bound appends a 0 */
    if (size) memcpy(bytes->data, data, size);
    bytes->size = size;
}

/* memcmp order, shorter first on a tie: the order of every engine here. */
static int compare_bytes(const void *left, size_t left_size, const void *right, size_t right_size) {
    int order = memcmp(left, right, left_size < right_size ? left_size : right_size);
    if (order != 0) return order;
    return left_size < right_size ? -1 : left_size > right_size;
}

static bool has_prefix(const void *bytes, size_t size, const Bytes *prefix) {
    return size >= prefix->size && (prefix->size == 0 || memcmp(bytes, prefix->data, prefix->size) == 0);
}

/* The first key past every key that starts with `prefix` (StoreKey.successor(ofPrefix:)): drop
 * trailing 0xFF bytes, add one to the last; false when nothing is left (no upper bound). */
static bool successor(const Bytes *prefix, Bytes *upper) {
    bytes_set(upper, prefix->data, prefix->size);
    while (upper->size > 0 && upper->data[upper->size - 1] == 0xFF) upper->size--;
    if (upper->size == 0) return false;
    upper->data[upper->size - 1]++;
    return true;
}

/* Where a scan starts: the prefix, or just after `after` (`after` + [0]) when that is later. */
static void scan_lower_bound(const Bytes *prefix, const Bytes *after, Bytes *lower) {
    bytes_set(lower, prefix->data, prefix->size);
    if (!after) return;
    Bytes just_after = {0};
    bytes_set(&just_after, after->data, after->size);
    just_after.data[just_after.size++] = 0;
    if (compare_bytes(lower->data, lower->size, just_after.data, just_after.size) < 0) {
        bytes_set(lower, just_after.data, just_after.size);
    }
    free(just_after.data);
}

static bool valid_key(const Bytes *key) { return key->size >= 1 && key->size <= 511; }

/* What a read keeps: a copy of every key and value it read, each in a place of its own in one
 * page that is emptied before each operation, as the Swift stores return a String of each (a
 * scan's 50 values are 50 copies, not one buffer written 50 times). Global, so the compiler cannot
 * drop the copies. */
static Bytes kept_page;
static size_t kept_total;

static void keep(const void *bytes, size_t size) {
    bytes_reserve(&kept_page, kept_page.size + size + 1);
    if (size) memcpy(kept_page.data + kept_page.size, bytes, size);
    kept_page.size += size;
    kept_total += size;
}

static void keep_value(const void *bytes, size_t size) { keep(bytes, size); }

static void keep_key(const void *bytes, size_t size) { keep(bytes, size); }

/* TraceValue.bytes(count:index:): 'a'..'z' repeated from letter index % 26. */
static Bytes letters;

static const unsigned char *trace_value(uint64_t size, uint64_t index) {
    if (letters.size < size + 26) {
        bytes_reserve(&letters, size + 26);
        for (size_t byte = 0; byte < size + 26; byte++) letters.data[byte] = (unsigned char)('a' + byte % 26);
        letters.size = size + 26;
    }
    return letters.data + index % 26;
}

/* ------------------------------------------------------------------------------------------ */
/* The engines: each is the calls a Sovaria store makes for one OfflineStore call.             */
/* Every function returns 0 on success (get: 1 found, 0 missing) and -1 on an engine error.    */

typedef struct {
    uint8_t opcode; /* 2 update, 3 insert, 4 delete */
    Bytes key;
    uint64_t size;
} Write;

typedef struct {
    int (*get)(const Bytes *key);
    int (*set)(const Bytes *key, const unsigned char *value, size_t size);
    int (*delete)(const Bytes *key);
    int (*batch)(const Write *writes, size_t count, uint64_t index);
    int (*scan)(const Bytes *prefix, const Bytes *after, uint64_t limit);
    int (*keys)(const Bytes *prefix);
    int (*compact)(void);
    void (*close)(void);
} Engine;

static bool synced = true;
static const char *folder;

/* --- SQLite: SQLiteSchema, SQLiteWriter and SQLiteReader's settings ------------------------ */
/*
 * FOLDER/store.sqlite: one rowid table with a BLOB primary key, incremental auto-vacuum, WAL,
 * `synchronous` FULL (synced) or NORMAL (flushed), a 64 MiB journal_size_limit, a 5 s busy
 * timeout. Writes on one read-write connection, each call one BEGIN IMMEDIATE ... COMMIT; reads
 * on a separate read-only connection; SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, statements
 * prepared once.
 */

static sqlite3 *sqlite_writer, *sqlite_reader;
static sqlite3_stmt *sqlite_begin, *sqlite_commit, *sqlite_rollback, *sqlite_upsert, *sqlite_delete_statement;
static sqlite3_stmt *sqlite_select_value, *sqlite_select_keys, *sqlite_select_keys_open;
static sqlite3_stmt *sqlite_select_entries, *sqlite_select_entries_open;

static void sqlite_check_open(sqlite3 *connection, int code, const char *action) {
    if (code != SQLITE_OK && code != SQLITE_DONE && code != SQLITE_ROW) {
        die("%s: %s (%d)", action, connection ? sqlite3_errmsg(connection) : sqlite3_errstr(code), code);
    }
}

static sqlite3 *sqlite_connect(const char *path, int access) {
    sqlite3 *connection = NULL;
    int code = sqlite3_open_v2(path, &connection, access | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, NULL);
    sqlite_check_open(connection, code, "opening the database");
    sqlite3_busy_timeout(connection, 5000);
    return connection;
}

static void sqlite_execute(const char *sql) {
    sqlite_check_open(sqlite_writer, sqlite3_exec(sqlite_writer, sql, NULL, NULL, NULL), sql);
}

static sqlite3_stmt *sqlite_prepare(sqlite3 *connection, const char *sql) {
    sqlite3_stmt *statement = NULL;
    sqlite_check_open(connection,
                      sqlite3_prepare_v3(connection, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, NULL), sql);
    return statement;
}

static void sqlite_open(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/store.sqlite", folder);
    sqlite_writer = sqlite_connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    sqlite_execute("PRAGMA auto_vacuum = INCREMENTAL");
    sqlite3_stmt *mode = sqlite_prepare(sqlite_writer, "PRAGMA journal_mode = WAL");
    if (sqlite3_step(mode) != SQLITE_ROW || sqlite3_stricmp((const char *)sqlite3_column_text(mode, 0), "wal") != 0) {
        die("the journal mode is not wal");
    }
    sqlite3_finalize(mode);
    sqlite_execute("BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS entries (key BLOB NOT NULL PRIMARY KEY, "
                   "value BLOB NOT NULL); PRAGMA user_version = 1; COMMIT");
    sqlite_execute(synced ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    sqlite_execute("PRAGMA journal_size_limit = 67108864");
    sqlite_begin = sqlite_prepare(sqlite_writer, "BEGIN IMMEDIATE");
    sqlite_commit = sqlite_prepare(sqlite_writer, "COMMIT");
    sqlite_rollback = sqlite_prepare(sqlite_writer, "ROLLBACK");
    sqlite_upsert = sqlite_prepare(sqlite_writer, "INSERT INTO entries (key, value) VALUES (?1, ?2) "
                                                  "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    sqlite_delete_statement = sqlite_prepare(sqlite_writer, "DELETE FROM entries WHERE key = ?1");
    sqlite_reader = sqlite_connect(path, SQLITE_OPEN_READONLY);
    sqlite_select_value = sqlite_prepare(sqlite_reader, "SELECT value FROM entries WHERE key = ?1");
    sqlite_select_keys =
        sqlite_prepare(sqlite_reader, "SELECT key FROM entries WHERE key >= ?1 AND key < ?2 ORDER BY key");
    sqlite_select_keys_open = sqlite_prepare(sqlite_reader, "SELECT key FROM entries WHERE key >= ?1 ORDER BY key");
    sqlite_select_entries = sqlite_prepare(
        sqlite_reader, "SELECT key, value FROM entries WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3");
    sqlite_select_entries_open =
        sqlite_prepare(sqlite_reader, "SELECT key, value FROM entries WHERE key >= ?1 ORDER BY key LIMIT ?3");
}

/* Binds bytes with their length (a NULL pointer would bind SQL NULL: an empty blob is a zeroblob). */
static int sqlite_bind(sqlite3_stmt *statement, int index, const void *bytes, size_t size) {
    return size ? sqlite3_bind_blob64(statement, index, bytes, size, SQLITE_STATIC)
                : sqlite3_bind_zeroblob(statement, index, 0);
}

/* Ends a use of a statement as SQLiteStatement.reset() does: reset and drop the bindings. */
static void sqlite_finish(sqlite3_stmt *statement) {
    sqlite3_reset(statement);
    sqlite3_clear_bindings(statement);
}

static int sqlite_fail(sqlite3 *connection, const char *action) {
    report(action, sqlite3_errmsg(connection));
    return -1;
}

static int sqlite_step_done(sqlite3_stmt *statement, const char *action) {
    int code = sqlite3_step(statement);
    sqlite_finish(statement);
    return code == SQLITE_DONE ? 0 : sqlite_fail(sqlite_writer, action);
}

static int sqlite_write_one(uint8_t opcode, const Bytes *key, const unsigned char *value, size_t size) {
    if (opcode == 4) {
        sqlite_bind(sqlite_delete_statement, 1, key->data, key->size);
        return sqlite_step_done(sqlite_delete_statement, "deleting a key");
    }
    sqlite_bind(sqlite_upsert, 1, key->data, key->size);
    sqlite_bind(sqlite_upsert, 2, value, size);
    return sqlite_step_done(sqlite_upsert, "storing a value");
}

static int sqlite_end(int result) {
    if (result == 0) return sqlite_step_done(sqlite_commit, "committing a write");
    sqlite3_step(sqlite_rollback);
    sqlite3_reset(sqlite_rollback);
    return -1;
}

static int sqlite_set(const Bytes *key, const unsigned char *value, size_t size) {
    if (sqlite_step_done(sqlite_begin, "beginning a write") != 0) return -1;
    return sqlite_end(sqlite_write_one(2, key, value, size));
}

static int sqlite_delete(const Bytes *key) {
    if (sqlite_step_done(sqlite_begin, "beginning a write") != 0) return -1;
    return sqlite_end(sqlite_write_one(4, key, NULL, 0));
}

static int sqlite_batch(const Write *writes, size_t count, uint64_t index) {
    if (sqlite_step_done(sqlite_begin, "beginning a write") != 0) return -1;
    int result = 0;
    for (size_t entry = 0; entry < count && result == 0; entry++) {
        const Write *write = &writes[entry];
        result = sqlite_write_one(write->opcode, &write->key, trace_value(write->size, index), write->size);
    }
    return sqlite_end(result);
}

static int sqlite_get(const Bytes *key) {
    sqlite_bind(sqlite_select_value, 1, key->data, key->size);
    int code = sqlite3_step(sqlite_select_value);
    if (code == SQLITE_ROW) {
        /* Pointer first, then length (SQLite's documented order). */
        const void *value = sqlite3_column_blob(sqlite_select_value, 0);
        keep_value(value, (size_t)sqlite3_column_bytes(sqlite_select_value, 0));
    }
    sqlite_finish(sqlite_select_value);
    if (code == SQLITE_ROW) return 1;
    return code == SQLITE_DONE ? 0 : sqlite_fail(sqlite_reader, "reading a value");
}

/* Steps a key (and value) query to its end, copying each row out. */
static int sqlite_rows(sqlite3_stmt *statement, bool values, const char *action) {
    int code;
    while ((code = sqlite3_step(statement)) == SQLITE_ROW) {
        const void *key = sqlite3_column_blob(statement, 0);
        keep_key(key, (size_t)sqlite3_column_bytes(statement, 0));
        if (values) {
            const void *value = sqlite3_column_blob(statement, 1);
            keep_value(value, (size_t)sqlite3_column_bytes(statement, 1));
        }
    }
    sqlite_finish(statement);
    return code == SQLITE_DONE ? 0 : sqlite_fail(sqlite_reader, action);
}

static Bytes lower_bound, upper_bound;

static int sqlite_scan(const Bytes *prefix, const Bytes *after, uint64_t limit) {
    if (limit == 0) return 0;
    scan_lower_bound(prefix, after, &lower_bound);
    bool bounded = successor(prefix, &upper_bound);
    sqlite3_stmt *statement = bounded ? sqlite_select_entries : sqlite_select_entries_open;
    sqlite_bind(statement, 1, lower_bound.data, lower_bound.size);
    if (bounded) sqlite_bind(statement, 2, upper_bound.data, upper_bound.size);
    sqlite3_bind_int64(statement, 3, limit > INT64_MAX ? INT64_MAX : (sqlite3_int64)limit);
    return sqlite_rows(statement, true, "reading entries");
}

static int sqlite_keys(const Bytes *prefix) {
    bool bounded = successor(prefix, &upper_bound);
    sqlite3_stmt *statement = bounded ? sqlite_select_keys : sqlite_select_keys_open;
    sqlite_bind(statement, 1, prefix->data, prefix->size);
    if (bounded) sqlite_bind(statement, 2, upper_bound.data, upper_bound.size);
    return sqlite_rows(statement, false, "listing keys");
}

static int sqlite_compact(void) {
    const char *steps[] = {"PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"};
    for (size_t step = 0; step < 3; step++) {
        if (sqlite3_exec(sqlite_writer, steps[step], NULL, NULL, NULL) != SQLITE_OK) {
            return sqlite_fail(sqlite_writer, steps[step]);
        }
    }
    return 0;
}

static void sqlite_close_all(void) {
    sqlite3_stmt *statements[] = {sqlite_begin,          sqlite_commit,
                                  sqlite_rollback,       sqlite_upsert,
                                  sqlite_delete_statement, sqlite_select_value,
                                  sqlite_select_keys,    sqlite_select_keys_open,
                                  sqlite_select_entries, sqlite_select_entries_open};
    for (size_t index = 0; index < sizeof statements / sizeof statements[0]; index++) {
        sqlite3_finalize(statements[index]);
    }
    sqlite3_close(sqlite_reader);
    sqlite3_close(sqlite_writer);
}

static const Engine sqlite_engine = {
    sqlite_get, sqlite_set, sqlite_delete, sqlite_batch, sqlite_scan, sqlite_keys, sqlite_compact, sqlite_close_all,
};

/* --- LMDB: LMDBEnvironment.openHandles ------------------------------------------------------ */
/*
 * The folder itself, mode 0600, MDB_NOTLS, plus MDB_NOSYNC when flushed (synced keeps LMDB's
 * default full sync at commit), 126 reader slots, stale readers cleared at open, the unnamed main
 * database. The map starts at 1 GiB and doubles when a write finds it full (the Swift store
 * starts smaller and doubles the same way: the map is address space, not disk). Reads renew one
 * reset read transaction; every write call is one write transaction.
 */

static MDB_env *lmdb_env;
static MDB_dbi lmdb_dbi;
static MDB_txn *lmdb_read;
static size_t lmdb_map_size = (size_t)1 << 30;

static void lmdb_check_open(int code, const char *action) {
    if (code != MDB_SUCCESS) die("%s: %s (%d)", action, mdb_strerror(code), code);
}

static void lmdb_open(void) {
    lmdb_check_open(mdb_env_create(&lmdb_env), "creating the environment");
    lmdb_check_open(mdb_env_set_maxreaders(lmdb_env, 126), "setting the reader slots");
    lmdb_check_open(mdb_env_set_mapsize(lmdb_env, lmdb_map_size), "setting the map size");
    unsigned int flags = MDB_NOTLS | (synced ? 0 : MDB_NOSYNC);
    lmdb_check_open(mdb_env_open(lmdb_env, folder, flags, 0600), "opening the environment");
    int dead = 0;
    lmdb_check_open(mdb_reader_check(lmdb_env, &dead), "clearing stale readers");
    MDB_txn *transaction;
    lmdb_check_open(mdb_txn_begin(lmdb_env, NULL, 0, &transaction), "starting the open transaction");
    lmdb_check_open(mdb_dbi_open(transaction, NULL, 0, &lmdb_dbi), "opening the main database");
    lmdb_check_open(mdb_txn_commit(transaction), "committing the open transaction");
    lmdb_check_open(mdb_txn_begin(lmdb_env, NULL, MDB_RDONLY, &lmdb_read), "starting a read");
    mdb_txn_reset(lmdb_read);
}

static int lmdb_fail(int code, const char *action) {
    report(action, mdb_strerror(code));
    return -1;
}

static MDB_val lmdb_value(const void *bytes, size_t size) {
    return (MDB_val){.mv_size = size, .mv_data = (void *)bytes};
}

/* Applies `count` writes (or the single `key`/`value` when `writes` is NULL) in one transaction;
 * on MDB_MAP_FULL doubles the map (no transaction may be active) and runs the whole batch again. */
static int lmdb_write(const Write *writes, size_t count, uint64_t index, uint8_t opcode, const Bytes *key,
                      const unsigned char *value, size_t size) {
    for (;;) {
        MDB_txn *transaction;
        int code = mdb_txn_begin(lmdb_env, NULL, 0, &transaction);
        if (code != MDB_SUCCESS) return lmdb_fail(code, "starting a write");
        for (size_t entry = 0; entry < (writes ? count : 1) && code == MDB_SUCCESS; entry++) {
            uint8_t operation = writes ? writes[entry].opcode : opcode;
            const Bytes *name = writes ? &writes[entry].key : key;
            MDB_val mdb_key = lmdb_value(name->data, name->size);
            if (operation == 4) {
                code = mdb_del(transaction, lmdb_dbi, &mdb_key, NULL);
                if (code == MDB_NOTFOUND) code = MDB_SUCCESS;
            } else {
                size_t bytes = writes ? writes[entry].size : size;
                MDB_val mdb_value = lmdb_value(writes ? trace_value(bytes, index) : value, bytes);
                code = mdb_put(transaction, lmdb_dbi, &mdb_key, &mdb_value, 0);
            }
        }
        if (code == MDB_SUCCESS) {
            code = mdb_txn_commit(transaction);
            if (code == MDB_SUCCESS) return 0;
        } else {
            mdb_txn_abort(transaction);
        }
        if (code != MDB_MAP_FULL) return lmdb_fail(code, "writing");
        mdb_txn_abort(lmdb_read);
        lmdb_map_size *= 2;
        lmdb_check_open(mdb_env_set_mapsize(lmdb_env, lmdb_map_size), "growing the map");
        lmdb_check_open(mdb_txn_begin(lmdb_env, NULL, MDB_RDONLY, &lmdb_read), "starting a read");
        mdb_txn_reset(lmdb_read);
    }
}

static int lmdb_set(const Bytes *key, const unsigned char *value, size_t size) {
    return lmdb_write(NULL, 0, 0, 2, key, value, size);
}

static int lmdb_delete(const Bytes *key) { return lmdb_write(NULL, 0, 0, 4, key, NULL, 0); }

static int lmdb_batch(const Write *writes, size_t count, uint64_t index) {
    return lmdb_write(writes, count, index, 0, NULL, NULL, 0);
}

static int lmdb_get(const Bytes *key) {
    int code = mdb_txn_renew(lmdb_read);
    if (code != MDB_SUCCESS) return lmdb_fail(code, "starting a read");
    MDB_val name = lmdb_value(key->data, key->size), value;
    code = mdb_get(lmdb_read, lmdb_dbi, &name, &value);
    /* Copied out of the map before the transaction ends. */
    if (code == MDB_SUCCESS) keep_value(value.mv_data, value.mv_size);
    mdb_txn_reset(lmdb_read);
    if (code == MDB_NOTFOUND) return 0;
    return code == MDB_SUCCESS ? 1 : lmdb_fail(code, "reading a value");
}

/* Visits up to `limit` entries from the first key at or after `start` while they start with
 * `prefix`: MDB_SET_RANGE, then MDB_NEXT, copying keys (and values) out. */
static int lmdb_walk(const Bytes *start, const Bytes *prefix, uint64_t limit, bool values) {
    int code = mdb_txn_renew(lmdb_read);
    if (code != MDB_SUCCESS) return lmdb_fail(code, "starting a read");
    MDB_cursor *walker;
    code = mdb_cursor_open(lmdb_read, lmdb_dbi, &walker);
    if (code != MDB_SUCCESS) {
        mdb_txn_reset(lmdb_read);
        return lmdb_fail(code, "opening a cursor");
    }
    MDB_val key = lmdb_value(start->data, start->size), value;
    /* An empty start is the first key (MDB_SET_RANGE refuses a zero-length key). */
    code = mdb_cursor_get(walker, &key, &value, start->size ? MDB_SET_RANGE : MDB_FIRST);
    for (uint64_t visited = 0; code == MDB_SUCCESS && visited < limit && has_prefix(key.mv_data, key.mv_size, prefix);
         visited++) {
        keep_key(key.mv_data, key.mv_size);
        if (values) keep_value(value.mv_data, value.mv_size);
        code = mdb_cursor_get(walker, &key, &value, MDB_NEXT);
    }
    mdb_cursor_close(walker);
    mdb_txn_reset(lmdb_read);
    return code == MDB_SUCCESS || code == MDB_NOTFOUND ? 0 : lmdb_fail(code, "walking keys");
}

static int lmdb_scan(const Bytes *prefix, const Bytes *after, uint64_t limit) {
    if (limit == 0) return 0;
    scan_lower_bound(prefix, after, &lower_bound);
    return lmdb_walk(&lower_bound, prefix, limit, true);
}

static int lmdb_keys(const Bytes *prefix) { return lmdb_walk(prefix, prefix, UINT64_MAX, false); }

static void lmdb_close_all(void) {
    mdb_txn_abort(lmdb_read);
    mdb_env_close(lmdb_env);
}

/* LMDBEnvironment.compact: an MDB_CP_COMPACT copy into a folder of its own, synced, renamed over
 * data.mdb with the environment closed, then opened again. */
static int lmdb_compact(void) {
    char copy_folder[4096], copied[4200], data[4200];
    snprintf(copy_folder, sizeof copy_folder, "%s/.compact-%ld", folder, (long)getpid());
    snprintf(copied, sizeof copied, "%s/data.mdb", copy_folder);
    snprintf(data, sizeof data, "%s/data.mdb", folder);
    if (mkdir(copy_folder, 0700) != 0 && errno != EEXIST) return lmdb_fail(errno, "creating the copy folder");
    unlink(copied);
    int code = mdb_env_copy2(lmdb_env, copy_folder, MDB_CP_COMPACT);
    if (code != MDB_SUCCESS) {
        rmdir(copy_folder);
        return lmdb_fail(code, "copying the environment");
    }
    int descriptor = open(copied, O_RDONLY | O_CLOEXEC);
    if (descriptor >= 0) {
        fsync(descriptor);
        close(descriptor);
    }
    lmdb_close_all();
    int renamed = rename(copied, data);
    int rename_error = errno;
    rmdir(copy_folder);
    lmdb_open();
    return renamed == 0 ? 0 : lmdb_fail(rename_error, "swapping in the compacted file");
}

static const Engine lmdb_engine = {
    lmdb_get, lmdb_set, lmdb_delete, lmdb_batch, lmdb_scan, lmdb_keys, lmdb_compact, lmdb_close_all,
};

/* --- LevelDB: LevelDBHandle ----------------------------------------------------------------- */
/*
 * The folder itself, create_if_missing, an 8 MiB LRU block cache, a bloom filter of 10 bits a
 * key, Snappy compression, default read options, `sync` on for synced and off for flushed. A
 * single set is one leveldb_put, a batch one leveldb_writebatch, each scan a new iterator.
 */

static leveldb_t *leveldb_database;
static leveldb_cache_t *leveldb_block_cache;
static leveldb_filterpolicy_t *leveldb_bloom;
static leveldb_readoptions_t *leveldb_read_options;
static leveldb_writeoptions_t *leveldb_write_options;

static int leveldb_fail(char *error, const char *action) {
    report(action, error);
    leveldb_free(error);
    return -1;
}

static void leveldb_open_database(void) {
    leveldb_block_cache = leveldb_cache_create_lru(8 << 20);
    leveldb_bloom = leveldb_filterpolicy_create_bloom(10);
    leveldb_options_t *options = leveldb_options_create();
    leveldb_options_set_create_if_missing(options, 1);
    leveldb_options_set_cache(options, leveldb_block_cache);
    leveldb_options_set_filter_policy(options, leveldb_bloom);
    leveldb_options_set_compression(options, leveldb_snappy_compression);
    char *error = NULL;
    leveldb_database = leveldb_open(options, folder, &error);
    if (error) die("opening the database: %s", error);
    leveldb_options_destroy(options);
    leveldb_read_options = leveldb_readoptions_create();
    leveldb_write_options = leveldb_writeoptions_create();
    leveldb_writeoptions_set_sync(leveldb_write_options, synced);
}

static int leveldb_set(const Bytes *key, const unsigned char *value, size_t size) {
    char *error = NULL;
    leveldb_put(leveldb_database, leveldb_write_options, (const char *)key->data, key->size, (const char *)value, size,
                &error);
    return error ? leveldb_fail(error, "storing a value") : 0;
}

static int leveldb_delete_key(const Bytes *key) {
    char *error = NULL;
    leveldb_delete(leveldb_database, leveldb_write_options, (const char *)key->data, key->size, &error);
    return error ? leveldb_fail(error, "deleting a key") : 0;
}

static int leveldb_batch(const Write *writes, size_t count, uint64_t index) {
    leveldb_writebatch_t *batch = leveldb_writebatch_create();
    for (size_t entry = 0; entry < count; entry++) {
        const Write *write = &writes[entry];
        if (write->opcode == 4) {
            leveldb_writebatch_delete(batch, (const char *)write->key.data, write->key.size);
        } else {
            leveldb_writebatch_put(batch, (const char *)write->key.data, write->key.size,
                                   (const char *)trace_value(write->size, index), write->size);
        }
    }
    char *error = NULL;
    leveldb_write(leveldb_database, leveldb_write_options, batch, &error);
    leveldb_writebatch_destroy(batch);
    return error ? leveldb_fail(error, "writing a batch") : 0;
}

static int leveldb_get_value(const Bytes *key) {
    char *error = NULL;
    size_t size = 0;
    char *found =
        leveldb_get(leveldb_database, leveldb_read_options, (const char *)key->data, key->size, &size, &error);
    if (error) return leveldb_fail(error, "reading a value");
    /* NULL without an error is "not found"; LevelDB's malloc'd copy is copied and freed. */
    if (!found) return 0;
    keep_value(found, size);
    leveldb_free(found);
    return 1;
}

static int leveldb_walk(const Bytes *start, const Bytes *prefix, uint64_t limit, bool values) {
    leveldb_iterator_t *iterator = leveldb_create_iterator(leveldb_database, leveldb_read_options);
    leveldb_iter_seek(iterator, (const char *)start->data, start->size);
    size_t key_size, value_size;
    for (uint64_t visited = 0; visited < limit && leveldb_iter_valid(iterator); visited++) {
        const char *key = leveldb_iter_key(iterator, &key_size);
        if (!has_prefix(key, key_size, prefix)) break;
        keep_key(key, key_size);
        if (values) {
            const char *value = leveldb_iter_value(iterator, &value_size);
            keep_value(value, value_size);
        }
        leveldb_iter_next(iterator);
    }
    char *error = NULL;
    leveldb_iter_get_error(iterator, &error);
    leveldb_iter_destroy(iterator);
    return error ? leveldb_fail(error, "walking keys") : 0;
}

static int leveldb_scan(const Bytes *prefix, const Bytes *after, uint64_t limit) {
    if (limit == 0) return 0;
    scan_lower_bound(prefix, after, &lower_bound);
    return leveldb_walk(&lower_bound, prefix, limit, true);
}

static int leveldb_keys(const Bytes *prefix) { return leveldb_walk(prefix, prefix, UINT64_MAX, false); }

static int leveldb_compact(void) {
    leveldb_compact_range(leveldb_database, NULL, 0, NULL, 0);
    return 0;
}

static void leveldb_close_all(void) {
    /* The database uses the cache and the filter until it is closed. */
    leveldb_close(leveldb_database);
    leveldb_writeoptions_destroy(leveldb_write_options);
    leveldb_readoptions_destroy(leveldb_read_options);
    leveldb_filterpolicy_destroy(leveldb_bloom);
    leveldb_cache_destroy(leveldb_block_cache);
}

static const Engine leveldb_engine = {
    leveldb_get_value, leveldb_set, leveldb_delete_key, leveldb_batch, leveldb_scan, leveldb_keys, leveldb_compact,
    leveldb_close_all,
};

/* ------------------------------------------------------------------------------------------ */
/* Statistics: a log-linear histogram per phase and operation kind.                            */

enum { SUB_BITS = 6, SUB_COUNT = 1 << SUB_BITS, BUCKETS = (64 - SUB_BITS + 1) * SUB_COUNT };
enum { KINDS = 11, PHASES = 2 }; /* kinds 1...10 by opcode (phase excluded), 0: all; phases: load, run */

static const char *const kind_names[KINDS + 1] = {
    "all", "read", "update", "insert", "delete", "scan", "readModifyWrite", "keys", "batch", "compact", "?", "fetch",
};

typedef struct {
    uint64_t count, failures, misses, sum, max;
    uint64_t *buckets; /* BUCKETS counters, allocated on the first operation */
} Stats;

static Stats stats[PHASES][KINDS + 1];
static uint64_t phase_start[PHASES], phase_end[PHASES];
static bool phase_seen[PHASES];

/* Values below 64 have a bucket each; above, 64 buckets per power of two. */
static size_t bucket_of(uint64_t value) {
    if (value < SUB_COUNT) return (size_t)value;
    int exponent = 63 - __builtin_clzll(value); /* >= SUB_BITS */
    uint64_t mantissa = value >> (exponent - SUB_BITS); /* SUB_COUNT ..< 2 * SUB_COUNT */
    return (size_t)(exponent - SUB_BITS + 1) * SUB_COUNT + (size_t)(mantissa - SUB_COUNT);
}

/* The largest value a bucket holds. */
static uint64_t bucket_top(size_t bucket) {
    if (bucket < SUB_COUNT) return bucket;
    size_t exponent = bucket / SUB_COUNT + SUB_BITS - 1;
    uint64_t mantissa = bucket % SUB_COUNT + SUB_COUNT;
    uint64_t width = (uint64_t)1 << (exponent - SUB_BITS);
    return mantissa * width + (width - 1);
}

static void add_sample(Stats *stat, uint64_t nanoseconds, bool failed, bool missed) {
    if (!stat->buckets) {
        stat->buckets = calloc(BUCKETS, sizeof(uint64_t));
        if (!stat->buckets) die("out of memory");
    }
    stat->count++;
    stat->failures += failed;
    stat->misses += missed;
    stat->sum += nanoseconds;
    if (nanoseconds > stat->max) stat->max = nanoseconds;
    stat->buckets[bucket_of(nanoseconds)]++;
}

static uint64_t percentile(const Stats *stat, double fraction) {
    uint64_t rank = (uint64_t)(fraction * (double)stat->count + 0.999999999);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (size_t bucket = 0; bucket < BUCKETS; bucket++) {
        seen += stat->buckets[bucket];
        if (seen >= rank) {
            uint64_t top = bucket_top(bucket);
            return top < stat->max ? top : stat->max;
        }
    }
    return stat->max;
}

static void print_stats(const char *durability, int phase, int kind, uint64_t elapsed) {
    const Stats *stat = &stats[phase][kind];
    printf("{\"line\":\"operation\",\"engine\":\"%s\",\"durability\":\"%s\",\"phase\":\"%s\",\"operation\":\"%s\","
           "\"count\":%" PRIu64 ",\"failures\":%" PRIu64 ",\"misses\":%" PRIu64 ",\"p50Nanoseconds\":%" PRIu64
           ",\"p95Nanoseconds\":%" PRIu64 ",\"p99Nanoseconds\":%" PRIu64 ",\"p999Nanoseconds\":%" PRIu64
           ",\"maxNanoseconds\":%" PRIu64 ",\"elapsedNanoseconds\":%" PRIu64 ",\"opsPerSecond\":%.3f}\n",
           engine_name, durability, phase == 0 ? "load" : "run", kind_names[kind], stat->count, stat->failures,
           stat->misses, percentile(stat, 0.50), percentile(stat, 0.95), percentile(stat, 0.99),
           percentile(stat, 0.999), stat->max, elapsed, elapsed ? (double)stat->count * 1e9 / (double)elapsed : 0.0);
}

static uint64_t now_nanoseconds(void) {
    struct timespec spec;
    clock_gettime(CLOCK_MONOTONIC, &spec);
    return (uint64_t)spec.tv_sec * 1000000000u + (uint64_t)spec.tv_nsec;
}

/* ------------------------------------------------------------------------------------------ */
/* The trace, read as a stream.                                                                */

typedef struct {
    FILE *file;
    const char *path;
    uint64_t offset; /* of the next byte */
} Reader;

/* Reading stops at the end of the file inside a record: the caller ignores that record. */
typedef enum { READ_OK, READ_END } ReadStatus;

static ReadStatus read_byte(Reader *reader, uint8_t *byte) {
    int next = getc_unlocked(reader->file);
    if (next == EOF) {
        if (ferror(reader->file)) die("reading %s: %s", reader->path, strerror(errno));
        return READ_END;
    }
    reader->offset++;
    *byte = (uint8_t)next;
    return READ_OK;
}

static ReadStatus read_varint(Reader *reader, uint64_t record_start, uint64_t *value) {
    *value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        uint8_t byte;
        if (read_byte(reader, &byte) == READ_END) return READ_END;
        if (shift == 63 && byte > 1) break;
        *value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) return READ_OK;
    }
    die("malformed record at byte %" PRIu64 " of %s (varint)", record_start, reader->path);
}

/* A size, limit, string length or batch count: past 64 MiB (TraceCodec.maxCount) the record is
 * damaged, and is refused rather than allocated. */
static ReadStatus read_count(Reader *reader, uint64_t record_start, uint64_t *value) {
    if (read_varint(reader, record_start, value) == READ_END) return READ_END;
    if (*value > ((uint64_t)64 << 20)) die("malformed record at byte %" PRIu64 " of %s (tooLarge)", record_start, reader->path);
    return READ_OK;
}

static ReadStatus read_string(Reader *reader, uint64_t record_start, Bytes *string) {
    uint64_t length;
    if (read_count(reader, record_start, &length) == READ_END) return READ_END;
    /* A length past the end of the file is a record cut short: read what is there. */
    uint64_t done = 0;
    while (done < length) {
        size_t chunk = length - done < (1u << 20) ? (size_t)(length - done) : (1u << 20);
        bytes_reserve(string, (size_t)done + chunk + 1);
        size_t got = fread(string->data + done, 1, chunk, reader->file);
        reader->offset += got;
        done += got;
        if (got < chunk) {
            if (ferror(reader->file)) die("reading %s: %s", reader->path, strerror(errno));
            return READ_END;
        }
    }
    string->size = (size_t)length;
    return READ_OK;
}

typedef struct {
    uint8_t opcode;
    uint64_t delta;
    Bytes key; /* the key, or the prefix */
    Bytes after;
    bool has_after;
    uint64_t size, limit;
    uint8_t phase;
    Write *writes;
    size_t write_count, write_capacity;
} Record;

static void header(Reader *reader, bool *keys_hashed) {
    unsigned char bytes[16];
    size_t got = fread(bytes, 1, sizeof bytes, reader->file);
    for (size_t index = 0; index < 8 && index < got; index++) {
        if (bytes[index] != (unsigned char)"SOVTRACE"[index]) die("%s: bad header at byte %zu", reader->path, index);
    }
    if (got < sizeof bytes) die("%s: bad header at byte %zu", reader->path, got);
    uint32_t version = (uint32_t)bytes[8] | (uint32_t)bytes[9] << 8 | (uint32_t)bytes[10] << 16 |
                       (uint32_t)bytes[11] << 24;
    if (version != 1) die("%s: trace version %" PRIu32 " at byte 8 is not supported", reader->path, version);
    *keys_hashed = bytes[12] & 1;
    reader->offset = 16;
}

/* Reads the next record; false at the end of the trace (and after a truncated last record). */
static bool next_record(Reader *reader, Record *record) {
    uint64_t start = reader->offset;
    if (read_byte(reader, &record->opcode) == READ_END) return false;
    if (record->opcode < 1 || record->opcode > 11) {
        die("%s: unknown opcode %u at byte %" PRIu64, reader->path, record->opcode, start);
    }
    if (read_varint(reader, start, &record->delta) == READ_END) return false;
    switch (record->opcode) {
    case 1: case 4: case 7:
        return read_string(reader, start, &record->key) == READ_OK;
    case 2: case 3: case 6: case 11:
        return read_string(reader, start, &record->key) == READ_OK &&
               read_count(reader, start, &record->size) == READ_OK;
    case 5: {
        uint8_t has_after;
        if (read_string(reader, start, &record->key) == READ_END || read_byte(reader, &has_after) == READ_END) {
            return false;
        }
        if (has_after > 1) die("malformed record at byte %" PRIu64 " of %s (hasAfter)", start, reader->path);
        record->has_after = has_after;
        if (has_after && read_string(reader, start, &record->after) == READ_END) return false;
        return read_count(reader, start, &record->limit) == READ_OK;
    }
    case 8: {
        uint64_t count;
        if (read_count(reader, start, &count) == READ_END) return false;
        record->write_count = 0;
        for (uint64_t entry = 0; entry < count; entry++) {
            if (record->write_count == record->write_capacity) {
                size_t capacity = record->write_capacity ? record->write_capacity * 2 : 64;
                record->writes = checked_realloc(record->writes, capacity * sizeof(Write));
                memset(record->writes + record->write_capacity, 0, (capacity - record->write_capacity) * sizeof(Write));
                record->write_capacity = capacity;
            }
            Write *write = &record->writes[record->write_count];
            if (read_byte(reader, &write->opcode) == READ_END) return false;
            if (write->opcode < 2 || write->opcode > 4) {
                die("malformed record at byte %" PRIu64 " of %s (batchEntry)", start, reader->path);
            }
            if (read_string(reader, start, &write->key) == READ_END) return false;
            write->size = 0;
            if (write->opcode != 4 && read_count(reader, start, &write->size) == READ_END) return false;
            record->write_count++;
        }
        return true;
    }
    case 9:
        return true;
    case 10:
        if (read_byte(reader, &record->phase) == READ_END) return false;
        if (record->phase < 1 || record->phase > 2) {
            die("malformed record at byte %" PRIu64 " of %s (phase)", start, reader->path);
        }
        return true;
    }
    return false;
}

/* ------------------------------------------------------------------------------------------ */
/* The replay                                                                                  */

/* Runs one record's operation; returns whether it failed, and sets `missed` for a get that found
 * nothing. */
static bool run(const Engine *engine, const Record *record, uint64_t index, bool *missed) {
    *missed = false;
    kept_page.size = 0;
    switch (record->opcode) {
    case 1: case 6: case 11: {
        if (!valid_key(&record->key)) return true;
        int found = engine->get(&record->key);
        if (found < 0) return true;
        *missed = found == 0;
        if (record->opcode == 1 || (record->opcode == 11 && found)) return false;
        return engine->set(&record->key, trace_value(record->size, index), (size_t)record->size) != 0;
    }
    case 2: case 3:
        if (!valid_key(&record->key)) return true;
        return engine->set(&record->key, trace_value(record->size, index), (size_t)record->size) != 0;
    case 4:
        if (!valid_key(&record->key)) return true;
        return engine->delete(&record->key) != 0;
    case 5:
        return engine->scan(&record->key, record->has_after ? &record->after : NULL, record->limit) != 0;
    case 7:
        return engine->keys(&record->key) != 0;
    case 8:
        for (size_t entry = 0; entry < record->write_count; entry++) {
            if (!valid_key(&record->writes[entry].key)) return true;
        }
        return engine->batch(record->writes, record->write_count, index) != 0;
    case 9:
        return engine->compact() != 0;
    }
    return false;
}

static _Noreturn void usage(const char *message) {
    fprintf(stderr,
            "%s\nusage: sovaria-c-replay sqlite|lmdb|leveldb FOLDER TRACE [--durability synced|flushed]\n",
            message);
    exit(2);
}

int main(int argc, char **argv) {
    const char *durability = "synced";
    const char *positional[3];
    int positional_count = 0;
    for (int index = 1; index < argc; index++) {
        if (strcmp(argv[index], "--durability") == 0 && index + 1 < argc) durability = argv[++index];
        else if (argv[index][0] == '-' && argv[index][1] == '-') usage(argv[index]);
        else if (positional_count < 3) positional[positional_count++] = argv[index];
        else usage(argv[index]);
    }
    if (positional_count != 3) usage("ENGINE, FOLDER and TRACE are required");
    if (strcmp(durability, "synced") != 0 && strcmp(durability, "flushed") != 0) usage("--durability");
    synced = strcmp(durability, "synced") == 0;
    engine_name = positional[0];
    folder = positional[1];

    Reader reader = {.path = positional[2]};
    reader.file = fopen(reader.path, "rb");
    if (!reader.file) die("opening %s: %s", reader.path, strerror(errno));
    setvbuf(reader.file, NULL, _IOFBF, 1 << 20);
    bool keys_hashed;
    header(&reader, &keys_hashed);

    if (mkdir(folder, 0700) != 0 && errno != EEXIST) die("creating %s: %s", folder, strerror(errno));
    const Engine *engine;
    if (strcmp(engine_name, "sqlite") == 0) {
        sqlite_open();
        engine = &sqlite_engine;
    } else if (strcmp(engine_name, "lmdb") == 0) {
        lmdb_open();
        engine = &lmdb_engine;
    } else if (strcmp(engine_name, "leveldb") == 0) {
        leveldb_open_database();
        engine = &leveldb_engine;
    } else usage("unknown engine");

    Record record = {0};
    uint64_t index = 0, operations = 0, started = now_nanoseconds();
    int phase = 1; /* records before any phase record are the run */
    for (;; index++) {
        uint64_t record_start = reader.offset;
        if (!next_record(&reader, &record)) {
            if (reader.offset > record_start) fprintf(stderr, "sovaria-c-replay %s: ignored a truncated last record "
                                                              "(%" PRIu64 " bytes)\n", engine_name,
                                                      reader.offset - record_start);
            reader.offset = record_start; /* for the trace line: what was ignored */
            break;
        }
        if (record.opcode == 10) {
            phase = record.phase - 1;
            continue;
        }
        bool missed;
        uint64_t begin = now_nanoseconds();
        bool failed = run(engine, &record, index, &missed);
        uint64_t end = now_nanoseconds();
        if (!phase_seen[phase]) {
            phase_seen[phase] = true;
            phase_start[phase] = begin;
        }
        phase_end[phase] = end;
        add_sample(&stats[phase][record.opcode], end - begin, failed, missed);
        add_sample(&stats[phase][0], end - begin, failed, missed);
        operations++;
    }
    uint64_t elapsed = now_nanoseconds() - started;
    struct stat info;
    uint64_t ignored = 0;
    if (fstat(fileno(reader.file), &info) == 0 && (uint64_t)info.st_size > reader.offset) {
        ignored = (uint64_t)info.st_size - reader.offset;
    }
    fclose(reader.file);
    engine->close();

    for (int each = 0; each < PHASES; each++) {
        if (!phase_seen[each]) continue;
        for (int kind = 1; kind <= KINDS; kind++) {
            if (stats[each][kind].count) print_stats(durability, each, kind, stats[each][kind].sum);
        }
        print_stats(durability, each, 0, phase_end[each] - phase_start[each]);
    }
    printf("{\"line\":\"trace\",\"engine\":\"%s\",\"durability\":\"%s\",\"records\":%" PRIu64
           ",\"operations\":%" PRIu64 ",\"ignoredTrailingBytes\":%" PRIu64 ",\"keysHashed\":%s,"
           "\"elapsedNanoseconds\":%" PRIu64 "}\n",
           engine_name, durability, index, operations, ignored, keys_hashed ? "true" : "false", elapsed);
    return 0;
}
