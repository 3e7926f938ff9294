/*
 * sovaria_c_baseline: the store section of sovaria-bench, written in plain C against the
 * engines' C APIs (issue 15).
 *
 * sovaria-bench's own raw baselines (Benchmarks/sovaria-bench/Raw*.swift) are Swift code calling
 * the same C APIs, so they pay the Swift-side costs the adapters pay too (arrays, closures,
 * exclusivity checks, async calls) and cannot show them. This program runs the same workload as
 * `StoreOperations.swift` on the same keys, values and random order (the Swift `Workload`,
 * rebuilt here bit for bit from the same SplitMix64 seed; the `fingerprint` it prints lets the
 * bench check that), with the same engine settings as the Swift raw baselines, and times it the
 * way `Stopwatch` does. sovaria-bench runs it once per engine and durability and prints the ratio
 * of each adapter figure against it.
 *
 *   sovaria_c_baseline --engine file|sqlite|lmdb|leveldb|postgres|sodium
 *                      [--durability synced|flushed] [--count N] [--value-size BYTES]
 *                      [--repeats N] [--single-sets N] --dir FOLDER
 *   (postgres: the server's libpq conninfo in the environment, SOVARIA_C_BASELINE_CONNINFO)
 *
 * Output: one JSON object a line, one line per operation, on standard output; errors on standard
 * error with exit status 1 (2 for a bad command line).
 *
 * Built by `make bench` with the system C compiler:
 *   cc -O2 -std=c11 -I/usr/include/postgresql sovaria_c_baseline.c -lsqlite3 -llmdb -lleveldb -lsodium -lpq
 */
#define _DEFAULT_SOURCE /* d_type, O_CLOEXEC, fsync in strict C11 mode */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
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
#include <libpq-fe.h>
#include <lmdb.h>
#include <sodium.h>
#include <sqlite3.h>

/* ------------------------------------------------------------------------------------------ */
/* Errors: a benchmark has nothing to recover, so every failure ends the run with a message.   */

static const char *engine_name = "?";

static _Noreturn void usage(const char *message);

static _Noreturn void die(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    fprintf(stderr, "sovaria_c_baseline %s: ", engine_name);
    vfprintf(stderr, format, arguments);
    fputc('\n', stderr);
    va_end(arguments);
    exit(1);
}

static void *checked_malloc(size_t size) {
    void *memory = malloc(size ? size : 1);
    if (!memory) die("out of memory (%zu bytes)", size);
    return memory;
}

/* ------------------------------------------------------------------------------------------ */
/* The workload: Workload.swift, byte for byte.                                                */

#define KEY_PREFIX "sov:bench:"
#define BATCH_SIZE 1000
#define MAX_KEY 64 /* the workload's keys are 19 bytes ("sov:bench:" + 8 digits + "~") */

/* A key or value as bytes and a length; never read as a C string by the engines. */
typedef struct {
    size_t size;
    unsigned char bytes[MAX_KEY];
} Key;

typedef struct {
    int count;
    Key *keys;      /* "sov:bench:%08d" */
    Key *miss_keys; /* the same with "~" appended: sorts right after its key, never stored */
    int prefix_count;
    Key *prefixes; /* "sov:bench:%06d": each matches 100 keys (fewer at the end) */
    size_t value_size;
    unsigned char *values[2]; /* two values of the same size with different bytes */
    int *shuffled;            /* a fixed random order of 0..<count */
    uint64_t fingerprint;
} Workload;

/* Vigna's SplitMix64, as `SplitMix64` in Workload.swift. */
static uint64_t splitmix_next(uint64_t *state) {
    *state += 0x9E3779B97F4A7C15ULL;
    uint64_t mixed = *state;
    mixed = (mixed ^ (mixed >> 30)) * 0xBF58476D1CE4E5B9ULL;
    mixed = (mixed ^ (mixed >> 27)) * 0x94D049BB133111EBULL;
    return mixed ^ (mixed >> 31);
}

/* The high and low 64 bits of a * b, in plain C (no 128-bit type in ISO C11). */
static void multiply_full(uint64_t a, uint64_t b, uint64_t *high, uint64_t *low) {
    uint64_t a_low = a & 0xFFFFFFFFu, a_high = a >> 32, b_low = b & 0xFFFFFFFFu, b_high = b >> 32;
    uint64_t low_low = a_low * b_low, high_low = a_high * b_low, low_high = a_low * b_high;
    uint64_t middle = (low_low >> 32) + (high_low & 0xFFFFFFFFu) + (low_high & 0xFFFFFFFFu);
    *high = a_high * b_high + (high_low >> 32) + (low_high >> 32) + (middle >> 32);
    *low = a * b;
}

/* Swift's `RandomNumberGenerator.next(upperBound:)`: Lemire's nearly divisionless method, which
 * `Int.random(in: 0..<bound, using:)` calls, so `shuffle(using:)` gives the same order here. */
static uint64_t splitmix_below(uint64_t *state, uint64_t bound) {
    uint64_t high, low;
    multiply_full(splitmix_next(state), bound, &high, &low);
    if (low < bound) {
        uint64_t threshold = (0 - bound) % bound;
        while (low < threshold) multiply_full(splitmix_next(state), bound, &high, &low);
    }
    return high;
}

static void fnv1a(uint64_t *hash, const void *bytes, size_t size) {
    const unsigned char *byte = bytes;
    for (size_t index = 0; index < size; index++) {
        *hash ^= byte[index];
        *hash *= 0x100000001B3ULL;
    }
}

static void make_key(Key *key, const char *format, int number) {
    int written = snprintf((char *)key->bytes, sizeof key->bytes, format, number);
    if (written < 0 || (size_t)written >= sizeof key->bytes) die("key %d does not fit", number);
    key->size = (size_t)written;
}

static Workload make_workload(int count, size_t value_size) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    Workload workload = {.count = count, .value_size = value_size};
    workload.keys = checked_malloc(sizeof(Key) * (size_t)count);
    workload.miss_keys = checked_malloc(sizeof(Key) * (size_t)count);
    for (int index = 0; index < count; index++) {
        make_key(&workload.keys[index], KEY_PREFIX "%08d", index);
        make_key(&workload.miss_keys[index], KEY_PREFIX "%08d~", index);
    }
    workload.prefix_count = (count + 99) / 100 > 1 ? (count + 99) / 100 : 1;
    workload.prefixes = checked_malloc(sizeof(Key) * (size_t)workload.prefix_count);
    for (int index = 0; index < workload.prefix_count; index++) {
        make_key(&workload.prefixes[index], KEY_PREFIX "%06d", index);
    }
    uint64_t random = 0x5EED;
    for (int variant = 0; variant < 2; variant++) {
        workload.values[variant] = checked_malloc(value_size);
        for (size_t byte = 0; byte < value_size; byte++) {
            workload.values[variant][byte] = (unsigned char)alphabet[splitmix_next(&random) % 64];
        }
    }
    /* Swift's `MutableCollection.shuffle(using:)`: Fisher-Yates from the front. */
    workload.shuffled = checked_malloc(sizeof(int) * (size_t)count);
    for (int index = 0; index < count; index++) workload.shuffled[index] = index;
    for (int index = 0, amount = count; amount > 1; index++, amount--) {
        int other = index + (int)splitmix_below(&random, (uint64_t)amount);
        int swap = workload.shuffled[index];
        workload.shuffled[index] = workload.shuffled[other];
        workload.shuffled[other] = swap;
    }
    /* FNV-1a of both values, then of the order as little-endian UInt64s (`Workload.fingerprint`). */
    workload.fingerprint = 0xCBF29CE484222325ULL;
    fnv1a(&workload.fingerprint, workload.values[0], value_size);
    fnv1a(&workload.fingerprint, workload.values[1], value_size);
    for (int index = 0; index < count; index++) {
        unsigned char little[8];
        uint64_t value = (uint64_t)workload.shuffled[index];
        for (int byte = 0; byte < 8; byte++) little[byte] = (unsigned char)(value >> (8 * byte));
        fnv1a(&workload.fingerprint, little, 8);
    }
    return workload;
}

static bool has_prefix(const void *bytes, size_t size, const Key *prefix) {
    return size >= prefix->size && memcmp(bytes, prefix->bytes, prefix->size) == 0;
}

/* memcmp order, shorter first on a tie: the order of every engine here. */
static int compare_bytes(const void *left, size_t left_size, const void *right, size_t right_size) {
    int order = memcmp(left, right, left_size < right_size ? left_size : right_size);
    if (order != 0) return order;
    return left_size < right_size ? -1 : left_size > right_size;
}

/* The first key past every key that starts with `prefix` (`StoreKey.successor(ofPrefix:)`): drop
 * trailing 0xFF bytes, add one to the last; false when nothing is left (no upper bound). */
static bool successor(const Key *prefix, Key *upper) {
    *upper = *prefix;
    while (upper->size > 0 && upper->bytes[upper->size - 1] == 0xFF) upper->size--;
    if (upper->size == 0) return false;
    upper->bytes[upper->size - 1]++;
    return true;
}

/* ------------------------------------------------------------------------------------------ */
/* What a read keeps: copies of what it read, as the Swift raw baselines keep theirs in        */
/* `RawReadState` (and the adapters make Strings). Global, so the compiler cannot drop them.   */

static unsigned char *last_value;
static size_t last_value_capacity;
static size_t last_value_size;
static Key last_keys[BATCH_SIZE];   /* a scan's keys (a prefix matches at most 100) */
static unsigned char *page_values;  /* a page's values, BATCH_SIZE slots of value_size */
static Key cursor;                  /* the last key of the previous page */
static bool has_cursor;

static void keep_value(const void *bytes, size_t size) {
    if (size > last_value_capacity) {
        free(last_value);
        last_value = checked_malloc(size);
        last_value_capacity = size;
    }
    memcpy(last_value, bytes, size);
    last_value_size = size;
}

static void keep_key(Key *slot, const void *bytes, size_t size) {
    /* One byte is kept free: a page's lower bound appends a 0 to the last key read. */
    if (size >= sizeof slot->bytes) die("a key of %zu bytes is not the workload's", size);
    memcpy(slot->bytes, bytes, size);
    slot->size = size;
}

/* ------------------------------------------------------------------------------------------ */
/* The engines: each is the same seven calls as `BenchSubject`.                                */

typedef struct {
    void (*set)(int index, int variant);
    void (*set_batch)(int start, int end, int variant);
    bool (*get)(const Key *key);
    int (*scan)(const Key *prefix);
    /* Reads the next page of every entry under KEY_PREFIX (from the start when `restart`). */
    int (*next_page)(int limit, bool restart);
    void (*delete_batch)(int start, int end);
    void (*close)(void);
} Engine;

static Workload work;
static bool synced;
static const char *folder;
static const Key page_prefix = {.size = sizeof KEY_PREFIX - 1, .bytes = KEY_PREFIX};

/* Where the next page starts: the larger of the prefix and the last key of the previous page. */
static const Key *page_start(void) {
    if (has_cursor && compare_bytes(page_prefix.bytes, page_prefix.size, cursor.bytes, cursor.size) < 0) {
        return &cursor;
    }
    return &page_prefix;
}

/* --- file: one file per key, the layout of FileTree and FileNameScheme ---------------------- */
/*
 * Each key is a file `k<lowercase hex of the key>` in the folder holding "SVE1", an 8-byte
 * checksum and the value (EntryFile). This program writes a zero checksum and never checks it
 * (XXH64 of 1 KiB is ~0.1 µs): a get is open, fstat, read, close, as `POSIXFile.readFile`. A set
 * is a temp file renamed into place, fsyncing the file and the folder when synced; a batch stages
 * every file and then renames them, without the adapter's journal (so it is not atomic). The key
 * list is read once with readdir and sorted, then searched until the next write, as
 * `FileStoreHandle.keysInOrder` does.
 */

enum { FILE_HEADER = 12 };
static unsigned long file_temporary_counter;
static Key *file_sorted_keys;
static int file_sorted_count = -1; /* -1: the list must be read again */
static unsigned char *file_read_buffer;
static size_t file_read_capacity;

static void file_path(char *path, size_t size, const Key *key) {
    static const char digits[] = "0123456789abcdef";
    int written = snprintf(path, size, "%s/k", folder);
    if (written < 0 || (size_t)written + key->size * 2 + 1 > size) die("path too long");
    char *hex = path + written;
    for (size_t byte = 0; byte < key->size; byte++) {
        *hex++ = digits[key->bytes[byte] >> 4];
        *hex++ = digits[key->bytes[byte] & 0x0F];
    }
    *hex = '\0';
}

static void file_sync_folder(void) {
    int descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (descriptor < 0 || fsync(descriptor) != 0) die("syncing %s: %s", folder, strerror(errno));
    close(descriptor);
}

/* Writes an entry file of value `variant` to a new temporary file; its path goes to `temporary`. */
static void file_stage(int variant, char *temporary, size_t size) {
    snprintf(temporary, size, "%s/.tmp-%lx", folder, ++file_temporary_counter);
    int descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (descriptor < 0) die("creating %s: %s", temporary, strerror(errno));
    /* One write of header and value, as the adapter writes the encoded entry. */
    size_t total = FILE_HEADER + work.value_size;
    static unsigned char *entry;
    if (!entry) entry = checked_malloc(total);
    memcpy(entry, "SVE1\0\0\0\0\0\0\0\0", FILE_HEADER);
    memcpy(entry + FILE_HEADER, work.values[variant], work.value_size);
    for (size_t offset = 0; offset < total;) {
        ssize_t written = write(descriptor, entry + offset, total - offset);
        if (written < 0 && errno == EINTR) continue;
        if (written < 0) die("writing %s: %s", temporary, strerror(errno));
        offset += (size_t)written;
    }
    if (synced && fsync(descriptor) != 0) die("syncing %s: %s", temporary, strerror(errno));
    if (close(descriptor) != 0) die("closing %s: %s", temporary, strerror(errno));
}

static void file_rename(const char *temporary, int index) {
    char path[4096];
    file_path(path, sizeof path, &work.keys[index]);
    if (rename(temporary, path) != 0) die("renaming into %s: %s", path, strerror(errno));
}

static void file_set(int index, int variant) {
    char temporary[4096];
    file_stage(variant, temporary, sizeof temporary);
    file_rename(temporary, index);
    if (synced) file_sync_folder();
    file_sorted_count = -1;
}

static void file_set_batch(int start, int end, int variant) {
    static char temporaries[BATCH_SIZE][4096];
    for (int index = start; index < end; index++) {
        file_stage(variant, temporaries[index - start], sizeof temporaries[0]);
    }
    for (int index = start; index < end; index++) file_rename(temporaries[index - start], index);
    if (synced) file_sync_folder();
    file_sorted_count = -1;
}

/* Reads the file at `path` into file_read_buffer; its size, or -1 when there is none. */
static ssize_t file_read(const char *path) {
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) {
        if (errno == ENOENT) return -1;
        die("opening %s: %s", path, strerror(errno));
    }
    struct stat info;
    if (fstat(descriptor, &info) != 0) die("reading %s: %s", path, strerror(errno));
    size_t size = (size_t)info.st_size;
    if (size > file_read_capacity) {
        free(file_read_buffer);
        file_read_buffer = checked_malloc(size);
        file_read_capacity = size;
    }
    size_t offset = 0;
    while (offset < size) {
        ssize_t count = read(descriptor, file_read_buffer + offset, size - offset);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) die("reading %s: %s", path, strerror(errno));
        if (count == 0) break;
        offset += (size_t)count;
    }
    close(descriptor);
    if (offset < FILE_HEADER || memcmp(file_read_buffer, "SVE1", 4) != 0) die("%s is not an entry file", path);
    return (ssize_t)offset;
}

static bool file_get(const Key *key) {
    char path[4096];
    file_path(path, sizeof path, key);
    ssize_t size = file_read(path);
    if (size < 0) return false;
    keep_value(file_read_buffer + FILE_HEADER, (size_t)size - FILE_HEADER);
    return true;
}

static int hex_value(int digit) {
    if (digit >= '0' && digit <= '9') return digit - '0';
    if (digit >= 'a' && digit <= 'f') return digit - 'a' + 10;
    return -1;
}

static int compare_keys(const void *left, const void *right) {
    const Key *a = left, *b = right;
    return compare_bytes(a->bytes, a->size, b->bytes, b->size);
}

/* The range of the next page for engines that read by key range (SQLite, PostgreSQL): from the
 * page prefix, or just after the previous page's last key (`key > cursor` is
 * `key >= cursor + [0]`, as in StoreKeyRange), up to the prefix's successor. */
static void page_bounds(Key *lower, Key *upper) {
    *lower = page_prefix;
    if (has_cursor) {
        Key just_after = cursor;
        just_after.bytes[just_after.size++] = 0;
        if (compare_keys(lower, &just_after) < 0) *lower = just_after;
    }
    if (!successor(&page_prefix, upper)) die("the page prefix has no upper bound");
}

/* The folder's keys in byte order: readdir, decode each `k<hex>` name, sort. */
static void file_list_keys(void) {
    DIR *directory = opendir(folder);
    if (!directory) die("listing %s: %s", folder, strerror(errno));
    int capacity = work.count + 16, count = 0;
    free(file_sorted_keys);
    file_sorted_keys = checked_malloc(sizeof(Key) * (size_t)capacity);
    struct dirent *entry;
    while ((entry = readdir(directory)) != NULL) {
        const char *name = entry->d_name;
        size_t length = strlen(name);
        if (name[0] != 'k' || length < 3 || length % 2 == 0 || (length - 1) / 2 > MAX_KEY) continue;
        Key key = {.size = (length - 1) / 2};
        bool valid = true;
        for (size_t byte = 0; byte < key.size && valid; byte++) {
            int high = hex_value(name[1 + 2 * byte]), low = hex_value(name[2 + 2 * byte]);
            valid = high >= 0 && low >= 0;
            key.bytes[byte] = (unsigned char)(high << 4 | low);
        }
        if (!valid) continue;
        if (count == capacity) {
            capacity *= 2;
            file_sorted_keys = realloc(file_sorted_keys, sizeof(Key) * (size_t)capacity);
            if (!file_sorted_keys) die("out of memory listing keys");
        }
        file_sorted_keys[count++] = key;
    }
    closedir(directory);
    qsort(file_sorted_keys, (size_t)count, sizeof(Key), compare_keys);
    file_sorted_count = count;
}

/* The position of the first listed key at or after `key` (binary search). */
static int file_lower_bound(const Key *key) {
    if (file_sorted_count < 0) file_list_keys();
    int low = 0, high = file_sorted_count;
    while (low < high) {
        int middle = low + (high - low) / 2;
        if (compare_keys(&file_sorted_keys[middle], key) < 0) low = middle + 1;
        else high = middle;
    }
    return low;
}

static int file_scan(const Key *prefix) {
    int found = 0;
    for (int position = file_lower_bound(prefix); position < file_sorted_count; position++) {
        const Key *key = &file_sorted_keys[position];
        if (!has_prefix(key->bytes, key->size, prefix)) break;
        if (found == BATCH_SIZE) die("a prefix matched more than %d keys", BATCH_SIZE);
        last_keys[found++] = *key;
    }
    return found;
}

static int file_next_page(int limit, bool restart) {
    if (restart) has_cursor = false;
    int position = file_lower_bound(page_start());
    if (has_cursor && position < file_sorted_count && compare_keys(&file_sorted_keys[position], &cursor) == 0) {
        position++;
    }
    int read = 0;
    for (; position < file_sorted_count && read < limit; position++) {
        const Key *key = &file_sorted_keys[position];
        if (!has_prefix(key->bytes, key->size, &page_prefix)) break;
        char path[4096];
        file_path(path, sizeof path, key);
        ssize_t size = file_read(path);
        if (size < 0) continue; /* removed since the listing, as the adapter skips it */
        size_t value_size = (size_t)size - FILE_HEADER;
        if (value_size > work.value_size) die("a value of %zu bytes is not the workload's", value_size);
        memcpy(page_values + (size_t)read * work.value_size, file_read_buffer + FILE_HEADER, value_size);
        last_keys[read++] = *key;
    }
    if (read > 0) {
        cursor = last_keys[read - 1];
        has_cursor = true;
    }
    return read;
}

static void file_delete_batch(int start, int end) {
    for (int index = start; index < end; index++) {
        char path[4096];
        file_path(path, sizeof path, &work.keys[index]);
        if (unlink(path) != 0 && errno != ENOENT) die("removing %s: %s", path, strerror(errno));
    }
    if (synced) file_sync_folder();
    file_sorted_count = -1;
}

static void file_close(void) { free(file_sorted_keys); }

static const Engine file_engine = {
    file_set, file_set_batch, file_get, file_scan, file_next_page, file_delete_batch, file_close,
};

/* --- SQLite: the layout and settings of SQLiteSchema and SQLiteWriter ------------------------ */
/*
 * One rowid table with a BLOB primary key, incremental auto-vacuum, WAL, `synchronous` FULL
 * (synced) or NORMAL (flushed), a 64 MiB journal_size_limit, a 5 s busy timeout. Writes on one
 * read-write connection, each call one BEGIN IMMEDIATE ... COMMIT; reads on a separate read-only
 * connection; both SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, statements prepared once.
 */

static sqlite3 *sqlite_writer, *sqlite_reader;
static sqlite3_stmt *sqlite_begin, *sqlite_commit, *sqlite_upsert, *sqlite_delete;
static sqlite3_stmt *sqlite_select_value, *sqlite_select_keys, *sqlite_select_entries;

static void sqlite_check(sqlite3 *connection, int code, const char *action) {
    if (code != SQLITE_OK && code != SQLITE_DONE && code != SQLITE_ROW) {
        die("%s: %s (%d)", action, connection ? sqlite3_errmsg(connection) : sqlite3_errstr(code), code);
    }
}

static sqlite3 *sqlite_connect(const char *path, int access) {
    sqlite3 *connection = NULL;
    int code = sqlite3_open_v2(path, &connection, access | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, NULL);
    sqlite_check(connection, code, "opening the database");
    sqlite3_busy_timeout(connection, 5000);
    return connection;
}

static void sqlite_execute(const char *sql) {
    sqlite_check(sqlite_writer, sqlite3_exec(sqlite_writer, sql, NULL, NULL, NULL), sql);
}

static sqlite3_stmt *sqlite_prepare(sqlite3 *connection, const char *sql) {
    sqlite3_stmt *statement = NULL;
    sqlite_check(connection, sqlite3_prepare_v3(connection, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, NULL),
                 sql);
    return statement;
}

/* Steps a statement that returns no rows, then resets it. */
static void sqlite_run(sqlite3_stmt *statement, const char *action) {
    int code = sqlite3_step(statement);
    sqlite3_reset(statement);
    if (code != SQLITE_DONE) sqlite_check(sqlite_writer, code, action);
}

/* Ends a use of a statement as `SQLiteStatement.reset()` does: reset and drop the bindings. */
static void sqlite_finish(sqlite3_stmt *statement) {
    sqlite3_reset(statement);
    sqlite3_clear_bindings(statement);
}

static void sqlite_bind(sqlite3_stmt *statement, int index, const void *bytes, size_t size) {
    /* SQLITE_STATIC: the bytes outlive the step; a NULL pointer would bind SQL NULL. */
    int code = size ? sqlite3_bind_blob64(statement, index, bytes, size, SQLITE_STATIC)
                    : sqlite3_bind_zeroblob(statement, index, 0);
    sqlite_check(sqlite3_db_handle(statement), code, "binding");
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
    sqlite_upsert = sqlite_prepare(sqlite_writer, "INSERT INTO entries (key, value) VALUES (?1, ?2) "
                                                  "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    sqlite_delete = sqlite_prepare(sqlite_writer, "DELETE FROM entries WHERE key = ?1");
    sqlite_reader = sqlite_connect(path, SQLITE_OPEN_READONLY);
    sqlite_select_value = sqlite_prepare(sqlite_reader, "SELECT value FROM entries WHERE key = ?1");
    sqlite_select_keys =
        sqlite_prepare(sqlite_reader, "SELECT key FROM entries WHERE key >= ?1 AND key < ?2 ORDER BY key");
    sqlite_select_entries = sqlite_prepare(
        sqlite_reader, "SELECT key, value FROM entries WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3");
}

static void sqlite_upsert_one(int index, int variant) {
    sqlite_bind(sqlite_upsert, 1, work.keys[index].bytes, work.keys[index].size);
    sqlite_bind(sqlite_upsert, 2, work.values[variant], work.value_size);
    int code = sqlite3_step(sqlite_upsert);
    sqlite_finish(sqlite_upsert);
    if (code != SQLITE_DONE) sqlite_check(sqlite_writer, code, "storing a value");
}

static void sqlite_set(int index, int variant) {
    sqlite_run(sqlite_begin, "beginning a write");
    sqlite_upsert_one(index, variant);
    sqlite_run(sqlite_commit, "committing a write");
}

static void sqlite_set_batch(int start, int end, int variant) {
    sqlite_run(sqlite_begin, "beginning a write");
    for (int index = start; index < end; index++) sqlite_upsert_one(index, variant);
    sqlite_run(sqlite_commit, "committing a write");
}

static bool sqlite_get(const Key *key) {
    sqlite_bind(sqlite_select_value, 1, key->bytes, key->size);
    int code = sqlite3_step(sqlite_select_value);
    if (code == SQLITE_ROW) {
        /* Pointer first, then length (SQLite's documented order). */
        const void *value = sqlite3_column_blob(sqlite_select_value, 0);
        keep_value(value, (size_t)sqlite3_column_bytes(sqlite_select_value, 0));
    }
    sqlite_finish(sqlite_select_value);
    if (code != SQLITE_ROW && code != SQLITE_DONE) sqlite_check(sqlite_reader, code, "reading a value");
    return code == SQLITE_ROW;
}

static int sqlite_scan(const Key *prefix) {
    Key upper;
    /* The workload's prefixes always have a successor; with none the range has no upper bound. */
    if (!successor(prefix, &upper)) die("a prefix without an upper bound");
    sqlite_bind(sqlite_select_keys, 1, prefix->bytes, prefix->size);
    sqlite_bind(sqlite_select_keys, 2, upper.bytes, upper.size);
    int found = 0, code;
    while ((code = sqlite3_step(sqlite_select_keys)) == SQLITE_ROW) {
        if (found == BATCH_SIZE) die("a prefix matched more than %d keys", BATCH_SIZE);
        const void *key = sqlite3_column_blob(sqlite_select_keys, 0);
        keep_key(&last_keys[found++], key, (size_t)sqlite3_column_bytes(sqlite_select_keys, 0));
    }
    sqlite_finish(sqlite_select_keys);
    if (code != SQLITE_DONE) sqlite_check(sqlite_reader, code, "listing keys");
    return found;
}

static int sqlite_next_page(int limit, bool restart) {
    if (restart) has_cursor = false;
    Key lower, upper;
    page_bounds(&lower, &upper);
    sqlite_bind(sqlite_select_entries, 1, lower.bytes, lower.size);
    sqlite_bind(sqlite_select_entries, 2, upper.bytes, upper.size);
    sqlite3_bind_int64(sqlite_select_entries, 3, limit);
    int read = 0, code;
    while ((code = sqlite3_step(sqlite_select_entries)) == SQLITE_ROW) {
        const void *key = sqlite3_column_blob(sqlite_select_entries, 0);
        keep_key(&last_keys[read], key, (size_t)sqlite3_column_bytes(sqlite_select_entries, 0));
        const void *value = sqlite3_column_blob(sqlite_select_entries, 1);
        size_t value_size = (size_t)sqlite3_column_bytes(sqlite_select_entries, 1);
        if (value_size > work.value_size) die("a value of %zu bytes is not the workload's", value_size);
        if (value_size) memcpy(page_values + (size_t)read * work.value_size, value, value_size);
        read++;
    }
    sqlite_finish(sqlite_select_entries);
    if (code != SQLITE_DONE) sqlite_check(sqlite_reader, code, "reading entries");
    if (read > 0) {
        cursor = last_keys[read - 1];
        has_cursor = true;
    }
    return read;
}

static void sqlite_delete_batch(int start, int end) {
    sqlite_run(sqlite_begin, "beginning a write");
    for (int index = start; index < end; index++) {
        sqlite_bind(sqlite_delete, 1, work.keys[index].bytes, work.keys[index].size);
        int code = sqlite3_step(sqlite_delete);
        sqlite_finish(sqlite_delete);
        if (code != SQLITE_DONE) sqlite_check(sqlite_writer, code, "deleting a key");
    }
    sqlite_run(sqlite_commit, "committing a write");
}

static void sqlite_close_all(void) {
    sqlite3_stmt *statements[] = {sqlite_begin,        sqlite_commit,      sqlite_upsert,        sqlite_delete,
                                  sqlite_select_value, sqlite_select_keys, sqlite_select_entries};
    for (size_t index = 0; index < sizeof statements / sizeof statements[0]; index++) {
        sqlite3_finalize(statements[index]);
    }
    sqlite3_close(sqlite_reader);
    sqlite3_close(sqlite_writer);
}

static const Engine sqlite_engine = {
    sqlite_set, sqlite_set_batch, sqlite_get, sqlite_scan, sqlite_next_page, sqlite_delete_batch, sqlite_close_all,
};

/* --- LMDB: the environment of LMDBEnvironment.openHandles ---------------------------------- */
/*
 * The folder itself, mode 0600, MDB_NOTLS, plus MDB_NOSYNC when flushed (synced keeps LMDB's
 * default full sync at commit), 126 reader slots, stale readers cleared at open, the unnamed
 * main database. The map is sized once for the workload, as RawLMDB.swift does. Reads renew one
 * reset read transaction; every write call is one write transaction.
 */

static MDB_env *lmdb_env;
static MDB_dbi lmdb_dbi;
static MDB_txn *lmdb_read;

static void lmdb_check(int code, const char *action) {
    if (code != MDB_SUCCESS) die("%s: %s (%d)", action, mdb_strerror(code), code);
}

static void lmdb_open(void) {
    lmdb_check(mdb_env_create(&lmdb_env), "creating the environment");
    lmdb_check(mdb_env_set_maxreaders(lmdb_env, 126), "setting the reader slots");
    /* Several times the workload (pages half full after random writes), at least 1 GiB. */
    size_t estimate = (size_t)work.count * (work.value_size + 64) * 4, mebibyte = 1 << 20;
    size_t map = (estimate + mebibyte - 1) / mebibyte * mebibyte;
    lmdb_check(mdb_env_set_mapsize(lmdb_env, map > ((size_t)1 << 30) ? map : (size_t)1 << 30), "setting the map size");
    unsigned int flags = MDB_NOTLS | (synced ? 0 : MDB_NOSYNC);
    lmdb_check(mdb_env_open(lmdb_env, folder, flags, 0600), "opening the environment");
    int dead = 0;
    lmdb_check(mdb_reader_check(lmdb_env, &dead), "clearing stale readers");
    MDB_txn *transaction;
    lmdb_check(mdb_txn_begin(lmdb_env, NULL, 0, &transaction), "starting the open transaction");
    lmdb_check(mdb_dbi_open(transaction, NULL, 0, &lmdb_dbi), "opening the main database");
    lmdb_check(mdb_txn_commit(transaction), "committing the open transaction");
    lmdb_check(mdb_txn_begin(lmdb_env, NULL, MDB_RDONLY, &lmdb_read), "starting a read");
    mdb_txn_reset(lmdb_read);
}

static MDB_val lmdb_value(const void *bytes, size_t size) {
    return (MDB_val){.mv_size = size, .mv_data = (void *)bytes};
}

static MDB_txn *lmdb_begin_write(void) {
    MDB_txn *transaction;
    lmdb_check(mdb_txn_begin(lmdb_env, NULL, 0, &transaction), "starting a write");
    return transaction;
}

static void lmdb_put(MDB_txn *transaction, int index, int variant) {
    MDB_val key = lmdb_value(work.keys[index].bytes, work.keys[index].size);
    MDB_val value = lmdb_value(work.values[variant], work.value_size);
    lmdb_check(mdb_put(transaction, lmdb_dbi, &key, &value, 0), "storing a value");
}

static void lmdb_set(int index, int variant) {
    MDB_txn *transaction = lmdb_begin_write();
    lmdb_put(transaction, index, variant);
    lmdb_check(mdb_txn_commit(transaction), "committing a write");
}

static void lmdb_set_batch(int start, int end, int variant) {
    MDB_txn *transaction = lmdb_begin_write();
    for (int index = start; index < end; index++) lmdb_put(transaction, index, variant);
    lmdb_check(mdb_txn_commit(transaction), "committing a write");
}

static bool lmdb_get(const Key *key) {
    lmdb_check(mdb_txn_renew(lmdb_read), "starting a read");
    MDB_val name = lmdb_value(key->bytes, key->size), value;
    int code = mdb_get(lmdb_read, lmdb_dbi, &name, &value);
    /* Copied out of the map before the transaction ends. */
    if (code == MDB_SUCCESS) keep_value(value.mv_data, value.mv_size);
    mdb_txn_reset(lmdb_read);
    if (code == MDB_NOTFOUND) return false;
    lmdb_check(code, "reading a value");
    return true;
}

/* Visits up to `limit` entries from the first key at or after `start` while they start with
 * `prefix`, leaving out a first key equal to `skipping`: MDB_SET_RANGE, then MDB_NEXT. With
 * `values` it copies each value into page_values too. */
static int lmdb_walk(const Key *start, const Key *prefix, const Key *skipping, int limit, bool values) {
    lmdb_check(mdb_txn_renew(lmdb_read), "starting a read");
    MDB_cursor *walker;
    lmdb_check(mdb_cursor_open(lmdb_read, lmdb_dbi, &walker), "opening a cursor");
    MDB_val key = lmdb_value(start->bytes, start->size), value;
    int code = mdb_cursor_get(walker, &key, &value, MDB_SET_RANGE);
    if (code == MDB_SUCCESS && skipping &&
        compare_bytes(key.mv_data, key.mv_size, skipping->bytes, skipping->size) == 0) {
        code = mdb_cursor_get(walker, &key, &value, MDB_NEXT);
    }
    int visited = 0;
    while (code == MDB_SUCCESS && visited < limit && has_prefix(key.mv_data, key.mv_size, prefix)) {
        if (visited == BATCH_SIZE) die("more than %d keys in one walk", BATCH_SIZE);
        keep_key(&last_keys[visited], key.mv_data, key.mv_size);
        if (values) {
            if (value.mv_size > work.value_size) die("a value of %zu bytes is not the workload's", value.mv_size);
            memcpy(page_values + (size_t)visited * work.value_size, value.mv_data, value.mv_size);
        }
        visited++;
        code = mdb_cursor_get(walker, &key, &value, MDB_NEXT);
    }
    mdb_cursor_close(walker);
    mdb_txn_reset(lmdb_read);
    if (code != MDB_SUCCESS && code != MDB_NOTFOUND) lmdb_check(code, "walking keys");
    return visited;
}

static int lmdb_scan(const Key *prefix) { return lmdb_walk(prefix, prefix, NULL, BATCH_SIZE, false); }

static int lmdb_next_page(int limit, bool restart) {
    if (restart) has_cursor = false;
    int read = lmdb_walk(page_start(), &page_prefix, has_cursor ? &cursor : NULL, limit, true);
    if (read > 0) {
        cursor = last_keys[read - 1];
        has_cursor = true;
    }
    return read;
}

static void lmdb_delete_batch(int start, int end) {
    MDB_txn *transaction = lmdb_begin_write();
    for (int index = start; index < end; index++) {
        MDB_val key = lmdb_value(work.keys[index].bytes, work.keys[index].size);
        int code = mdb_del(transaction, lmdb_dbi, &key, NULL);
        if (code != MDB_NOTFOUND) lmdb_check(code, "deleting a key");
    }
    lmdb_check(mdb_txn_commit(transaction), "committing a write");
}

static void lmdb_close_all(void) {
    mdb_txn_abort(lmdb_read);
    mdb_env_close(lmdb_env);
}

static const Engine lmdb_engine = {
    lmdb_set, lmdb_set_batch, lmdb_get, lmdb_scan, lmdb_next_page, lmdb_delete_batch, lmdb_close_all,
};

/* --- LevelDB: the database of LevelDBHandle ------------------------------------------------- */
/*
 * The folder itself, create_if_missing, an 8 MiB LRU block cache, a bloom filter of 10 bits a
 * key, Snappy compression, default read options, `sync` on for synced and off for flushed. A
 * single set is one leveldb_put, a batch one leveldb_writebatch, each scan and page a new
 * iterator.
 */

static leveldb_t *leveldb_database;
static leveldb_cache_t *leveldb_block_cache;
static const leveldb_filterpolicy_t *leveldb_bloom;
static leveldb_readoptions_t *leveldb_read_options;
static leveldb_writeoptions_t *leveldb_write_options;

/* LevelDB reports errors as a malloc'd string in `error`. */
static void leveldb_check(char *error, const char *action) {
    if (error) die("%s: %s", action, error);
}

static void leveldb_open_database(void) {
    leveldb_block_cache = leveldb_cache_create_lru(8 << 20);
    leveldb_bloom = leveldb_filterpolicy_create_bloom(10);
    leveldb_options_t *options = leveldb_options_create();
    leveldb_options_set_create_if_missing(options, 1);
    leveldb_options_set_cache(options, leveldb_block_cache);
    leveldb_options_set_filter_policy(options, (leveldb_filterpolicy_t *)leveldb_bloom);
    leveldb_options_set_compression(options, leveldb_snappy_compression);
    char *error = NULL;
    leveldb_database = leveldb_open(options, folder, &error);
    leveldb_check(error, "opening the database");
    leveldb_options_destroy(options);
    leveldb_read_options = leveldb_readoptions_create();
    leveldb_write_options = leveldb_writeoptions_create();
    leveldb_writeoptions_set_sync(leveldb_write_options, synced);
}

static void leveldb_set(int index, int variant) {
    char *error = NULL;
    leveldb_put(leveldb_database, leveldb_write_options, (const char *)work.keys[index].bytes, work.keys[index].size,
                (const char *)work.values[variant], work.value_size, &error);
    leveldb_check(error, "storing a value");
}

static void leveldb_apply(leveldb_writebatch_t *batch) {
    char *error = NULL;
    leveldb_write(leveldb_database, leveldb_write_options, batch, &error);
    leveldb_writebatch_destroy(batch);
    leveldb_check(error, "writing a batch");
}

static void leveldb_set_batch(int start, int end, int variant) {
    leveldb_writebatch_t *batch = leveldb_writebatch_create();
    for (int index = start; index < end; index++) {
        leveldb_writebatch_put(batch, (const char *)work.keys[index].bytes, work.keys[index].size,
                               (const char *)work.values[variant], work.value_size);
    }
    leveldb_apply(batch);
}

static bool leveldb_get_value(const Key *key) {
    char *error = NULL;
    size_t size = 0;
    char *found = leveldb_get(leveldb_database, leveldb_read_options, (const char *)key->bytes, key->size, &size,
                              &error);
    leveldb_check(error, "reading a value");
    /* NULL without an error is "not found"; LevelDB's malloc'd copy is copied and freed. */
    if (!found) return false;
    keep_value(found, size);
    leveldb_free(found);
    return true;
}

static int leveldb_walk(const Key *start, const Key *prefix, const Key *skipping, int limit, bool values) {
    leveldb_iterator_t *iterator = leveldb_create_iterator(leveldb_database, leveldb_read_options);
    leveldb_iter_seek(iterator, (const char *)start->bytes, start->size);
    size_t key_size, value_size;
    if (skipping && leveldb_iter_valid(iterator)) {
        const char *key = leveldb_iter_key(iterator, &key_size);
        if (compare_bytes(key, key_size, skipping->bytes, skipping->size) == 0) leveldb_iter_next(iterator);
    }
    int visited = 0;
    while (visited < limit && leveldb_iter_valid(iterator)) {
        const char *key = leveldb_iter_key(iterator, &key_size);
        if (!has_prefix(key, key_size, prefix)) break;
        if (visited == BATCH_SIZE) die("more than %d keys in one walk", BATCH_SIZE);
        keep_key(&last_keys[visited], key, key_size);
        if (values) {
            const char *value = leveldb_iter_value(iterator, &value_size);
            if (value_size > work.value_size) die("a value of %zu bytes is not the workload's", value_size);
            memcpy(page_values + (size_t)visited * work.value_size, value, value_size);
        }
        visited++;
        leveldb_iter_next(iterator);
    }
    char *error = NULL;
    leveldb_iter_get_error(iterator, &error);
    leveldb_iter_destroy(iterator);
    leveldb_check(error, "walking keys");
    return visited;
}

static int leveldb_scan(const Key *prefix) { return leveldb_walk(prefix, prefix, NULL, BATCH_SIZE, false); }

static int leveldb_next_page(int limit, bool restart) {
    if (restart) has_cursor = false;
    int read = leveldb_walk(page_start(), &page_prefix, has_cursor ? &cursor : NULL, limit, true);
    if (read > 0) {
        cursor = last_keys[read - 1];
        has_cursor = true;
    }
    return read;
}

static void leveldb_delete_batch(int start, int end) {
    leveldb_writebatch_t *batch = leveldb_writebatch_create();
    for (int index = start; index < end; index++) {
        leveldb_writebatch_delete(batch, (const char *)work.keys[index].bytes, work.keys[index].size);
    }
    leveldb_apply(batch);
}

static void leveldb_close_all(void) {
    /* The database uses the cache and the filter until it is closed. */
    leveldb_close(leveldb_database);
    leveldb_writeoptions_destroy(leveldb_write_options);
    leveldb_readoptions_destroy(leveldb_read_options);
    leveldb_filterpolicy_destroy((leveldb_filterpolicy_t *)leveldb_bloom);
    leveldb_cache_destroy(leveldb_block_cache);
}

static const Engine leveldb_engine = {
    leveldb_set, leveldb_set_batch, leveldb_get_value, leveldb_scan, leveldb_next_page, leveldb_delete_batch,
    leveldb_close_all,
};

/* ------------------------------------------------------------------------------------------ */
/* Timing: `Stopwatch.measure` and `Sample.measurement` in Measurement.swift.                 */

static int repeats = 3;
static const char *variant_name = "flushed";

static uint64_t now_nanoseconds(void) {
    struct timespec spec;
    clock_gettime(CLOCK_MONOTONIC, &spec);
    return (uint64_t)spec.tv_sec * 1000000000u + (uint64_t)spec.tv_nsec;
}

static int compare_doubles(const void *left, const void *right) {
    double a = *(const double *)left, b = *(const double *)right;
    return (a > b) - (a < b);
}

/* `Sample.percentile`: the value at round((n - 1) * fraction) of the sorted values. */
static double percentile(const double *sorted, size_t count, double fraction) {
    if (count == 0) return 0;
    return sorted[(size_t)round((double)(count - 1) * fraction)];
}

/* What one measured operation calls: the repeat (-1 for the warm-up) and the call's index. */
typedef void (*Body)(int round, int call);
typedef void (*Prepare)(int round);

static void print_json_string(const char *text) {
    putchar('"');
    for (; *text; text++) {
        if (*text == '"' || *text == '\\') putchar('\\');
        putchar(*text);
    }
    putchar('"');
}

/* Times `calls` calls of `body` per repeat (after an untimed `prepare`, and a warm-up repeat when
 * `warm_up`), then prints the operation's line: the median repeat's time per item and the
 * latency distribution of single calls over every timed repeat. */
static void measure(const char *operation, int calls, int items_per_call, bool warm_up, Prepare prepare, Body body) {
    double *per_item = checked_malloc(sizeof(double) * (size_t)repeats);
    double *latencies = checked_malloc(sizeof(double) * (size_t)calls * (size_t)repeats);
    size_t latency_count = 0;
    for (int round = warm_up ? -1 : 0; round < repeats; round++) {
        if (prepare) prepare(round);
        uint64_t total = 0;
        for (int call = 0; call < calls; call++) {
            uint64_t start = now_nanoseconds();
            body(round, call);
            uint64_t elapsed = now_nanoseconds() - start;
            total += elapsed;
            if (round >= 0) latencies[latency_count++] = (double)elapsed;
        }
        int items = calls * items_per_call;
        if (round >= 0) per_item[round] = (double)total / (double)(items > 1 ? items : 1);
    }
    qsort(latencies, latency_count, sizeof(double), compare_doubles);
    double *sorted_items = checked_malloc(sizeof(double) * (size_t)repeats);
    memcpy(sorted_items, per_item, sizeof(double) * (size_t)repeats);
    qsort(sorted_items, (size_t)repeats, sizeof(double), compare_doubles);
    double median = percentile(sorted_items, (size_t)repeats, 0.5);
    double spread = sorted_items[repeats - 1] - sorted_items[0];

    printf("{\"engine\":");
    print_json_string(engine_name);
    printf(",\"variant\":");
    print_json_string(variant_name);
    printf(",\"count\":%d,\"valueBytes\":%zu,\"fingerprint\":\"%016" PRIx64 "\",\"operation\":", work.count,
           work.value_size, work.fingerprint);
    print_json_string(operation);
    printf(",\"opsPerSecond\":%.3f,\"nanosecondsPerOp\":%.3f,\"p50Nanoseconds\":%.0f,\"p99Nanoseconds\":%.0f,"
           "\"maxNanoseconds\":%.0f,\"spreadPercent\":%.3f,\"repeats\":%d}\n",
           median > 0 ? 1e9 / median : 0, median, percentile(latencies, latency_count, 0.5),
           percentile(latencies, latency_count, 0.99), latency_count ? latencies[latency_count - 1] : 0,
           median > 0 ? 100 * spread / median : 0, repeats);
    fflush(stdout);
    free(sorted_items);
    free(latencies);
    free(per_item);
}

/* ------------------------------------------------------------------------------------------ */
/* The operations of StoreOperations.swift, in its order and with its call counts.            */

static const Engine *engine;

static int batch_count(void) { return (work.count + BATCH_SIZE - 1) / BATCH_SIZE; }
static int batch_start(int call) { return call * BATCH_SIZE; }
static int batch_end(int call) {
    int end = call * BATCH_SIZE + BATCH_SIZE;
    return end < work.count ? end : work.count;
}

static void body_set_batch(int round, int call) { engine->set_batch(batch_start(call), batch_end(call), round % 2); }

static void body_get(int round, int call) {
    (void)round;
    if (!engine->get(&work.keys[work.shuffled[call]])) die("get missed");
}

static void body_get_miss(int round, int call) {
    (void)round;
    if (engine->get(&work.miss_keys[work.shuffled[call]])) die("a miss hit");
}

static void body_scan(int round, int call) {
    (void)round;
    engine->scan(&work.prefixes[(call * 7919) % work.prefix_count]);
}

static void body_page(int round, int call) {
    (void)round;
    int expected = work.count - call * BATCH_SIZE < BATCH_SIZE ? work.count - call * BATCH_SIZE : BATCH_SIZE;
    int read = engine->next_page(BATCH_SIZE, call == 0);
    if (read != expected) die("short page: %d entries, not %d", read, expected);
}

/* Each round writes the other value than the round before (and than the fill). */
static void body_set_single(int round, int call) { engine->set(work.shuffled[call], (round + repeats) % 2); }

static void prepare_delete(int round) {
    if (round > 0) {
        for (int call = 0; call < batch_count(); call++) engine->set_batch(batch_start(call), batch_end(call), 0);
    }
}

static void body_delete_batch(int round, int call) {
    (void)round;
    engine->delete_batch(batch_start(call), batch_end(call));
}

static void run_store_operations(int single_sets) {
    char name[64];
    snprintf(name, sizeof name, "set (batch of %d)", BATCH_SIZE);
    measure(name, batch_count(), BATCH_SIZE, false, NULL, body_set_batch);
    int gets = work.count < 100000 ? work.count : 100000;
    measure("get (random hit)", gets, 1, true, NULL, body_get);
    measure("get (miss)", gets < 20000 ? gets : 20000, 1, true, NULL, body_get_miss);
    measure("keys(prefix) of 100", work.prefix_count < 1000 ? work.prefix_count : 1000, 1, true, NULL, body_scan);
    snprintf(name, sizeof name, "entries page of %d, per entry", BATCH_SIZE);
    measure(name, batch_count(), BATCH_SIZE, true, NULL, body_page);
    measure("set (single)", single_sets < work.count ? single_sets : work.count, 1, true, NULL, body_set_single);
    snprintf(name, sizeof name, "delete (batch of %d)", BATCH_SIZE);
    measure(name, batch_count(), BATCH_SIZE, false, prepare_delete, body_delete_batch);
}

/* --- PostgreSQL: the table and statements of RawPostgres.swift, over libpq ------------------ */
/*
 * A fresh table `bench_c_<pid>_<durability>` with a bytea primary key and a bytea value, on the
 * server of SOVARIA_C_BASELINE_CONNINFO (sovaria-bench passes its own: a throwaway cluster, or
 * --postgres), dropped when the program ends.
 * `synchronous_commit` on when synced, off when flushed; the adapter's statements prepared once
 * and run with binary parameters and results on one connection. A single set is one statement
 * in its own transaction; a batch is BEGIN and one statement a write, pipelined 256 at a time
 * (one round trip each), then COMMIT on its own, as the adapter and the Swift raw baseline do.
 */

static PGconn *pg;
static char pg_table[64];

/* Drops the table however the program ends (a failure too), so a server of the user's given
 * with --postgres keeps no `bench_c_*` table; on a new connection, since `pg` may be mid-pipeline. */
static void pg_drop_table(void) {
    if (!pg_table[0]) return;
    PGconn *connection = PQconnectdb(getenv("SOVARIA_C_BASELINE_CONNINFO"));
    if (connection && PQstatus(connection) == CONNECTION_OK) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", pg_table);
        PQclear(PQexec(connection, sql));
    }
    PQfinish(connection);
}

static _Noreturn void pg_die(const char *action) { die("%s: %s", action, PQerrorMessage(pg)); }

static void pg_execute(const char *sql) {
    PGresult *result = PQexec(pg, sql);
    if (PQresultStatus(result) != PGRES_COMMAND_OK) pg_die(sql);
    PQclear(result);
}

static void pg_open(void) {
    /* From the environment, not the command line, where `ps` would show a password in it. */
    const char *conninfo = getenv("SOVARIA_C_BASELINE_CONNINFO");
    if (!conninfo) usage("SOVARIA_C_BASELINE_CONNINFO (the server's libpq conninfo) is required for postgres");
    pg = PQconnectdb(conninfo);
    if (!pg || PQstatus(pg) != CONNECTION_OK) pg_die("connecting");
    char sql[512];
    const char *table = pg_table;
    snprintf(pg_table, sizeof pg_table, "bench_c_%ld_%s", (long)getpid(), variant_name);
    atexit(pg_drop_table);
    snprintf(sql, sizeof sql,
             "SET client_min_messages = warning; SET synchronous_commit = %s; DROP TABLE IF EXISTS %s; "
             "CREATE TABLE %s (key bytea PRIMARY KEY CHECK (octet_length(key) BETWEEN 1 AND 511), "
             "value bytea NOT NULL)",
             synced ? "on" : "off", table, table);
    pg_execute(sql);
    const char *statements[][2] = {
        {"get", "SELECT value FROM %s WHERE key = $1"},
        {"set", "INSERT INTO %s (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value"},
        {"delete", "DELETE FROM %s WHERE key = $1"},
        {"keys", "SELECT key FROM %s WHERE key >= $1 AND key < $2 ORDER BY key"},
        {"entries", "SELECT key, value FROM %s WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3"},
    };
    for (size_t index = 0; index < sizeof statements / sizeof statements[0]; index++) {
        snprintf(sql, sizeof sql, statements[index][1], table);
        PGresult *result = PQprepare(pg, statements[index][0], sql, 0, NULL);
        if (PQresultStatus(result) != PGRES_COMMAND_OK) pg_die("preparing a statement");
        PQclear(result);
    }
}

/* Runs prepared `name` with binary parameters and results; the caller clears the result. */
static PGresult *pg_run(const char *name, int count, const char *const *values, const int *lengths) {
    static const int formats[3] = {1, 1, 1};
    PGresult *result = PQexecPrepared(pg, name, count, values, lengths, formats, 1);
    ExecStatusType status = PQresultStatus(result);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) pg_die(name);
    return result;
}

static void pg_set(int index, int variant) {
    const char *values[2] = {(const char *)work.keys[index].bytes, (const char *)work.values[variant]};
    int lengths[2] = {(int)work.keys[index].size, (int)work.value_size};
    PQclear(pg_run("set", 2, values, lengths));
}

/* BEGIN and one prepared `name` per key of start..<end (with `variant`'s value for "set"),
 * pipelined 256 at a time, then COMMIT. */
static void pg_pipelined(const char *name, int start, int end, int variant) {
    static const int formats[2] = {1, 1};
    for (int chunk = start; chunk < end; chunk += 256) {
        int chunk_end = chunk + 256 < end ? chunk + 256 : end, sent = 0;
        if (PQenterPipelineMode(pg) != 1) pg_die("entering pipeline mode");
        if (chunk == start) {
            if (PQsendQueryParams(pg, "BEGIN", 0, NULL, NULL, NULL, NULL, 1) != 1) pg_die("BEGIN");
            sent++;
        }
        for (int index = chunk; index < chunk_end; index++) {
            const char *values[2] = {(const char *)work.keys[index].bytes, (const char *)work.values[variant]};
            int lengths[2] = {(int)work.keys[index].size, (int)work.value_size};
            int count = strcmp(name, "set") == 0 ? 2 : 1;
            if (PQsendQueryPrepared(pg, name, count, values, lengths, formats, 1) != 1) pg_die(name);
            sent++;
        }
        if (PQpipelineSync(pg) != 1) pg_die("syncing the pipeline");
        /* The first failed statement's own message: in pipeline mode the connection's may be empty. */
        char failure[512] = "";
        for (int reply = 0; reply < sent; reply++) {
            PGresult *result;
            while ((result = PQgetResult(pg)) != NULL) {
                if (PQresultStatus(result) != PGRES_COMMAND_OK && !failure[0]) {
                    snprintf(failure, sizeof failure, "%s", PQresultErrorMessage(result));
                    if (!failure[0]) snprintf(failure, sizeof failure, "%s", PQresStatus(PQresultStatus(result)));
                }
                PQclear(result);
            }
        }
        if (failure[0]) die("running a pipeline of %s: %s", name, failure);
        PGresult *sync = PQgetResult(pg);
        if (PQresultStatus(sync) != PGRES_PIPELINE_SYNC) pg_die("running a pipeline");
        PQclear(sync);
        if (PQexitPipelineMode(pg) != 1) pg_die("leaving pipeline mode");
    }
    pg_execute("COMMIT");
}

static void pg_set_batch(int start, int end, int variant) { pg_pipelined("set", start, end, variant); }

static void pg_delete_batch(int start, int end) { pg_pipelined("delete", start, end, 0); }

static bool pg_get(const Key *key) {
    const char *values[1] = {(const char *)key->bytes};
    int lengths[1] = {(int)key->size};
    PGresult *result = pg_run("get", 1, values, lengths);
    bool found = PQntuples(result) > 0;
    if (found) keep_value(PQgetvalue(result, 0, 0), (size_t)PQgetlength(result, 0, 0));
    PQclear(result);
    return found;
}

static int pg_scan(const Key *prefix) {
    Key upper;
    if (!successor(prefix, &upper)) die("a prefix without an upper bound");
    const char *values[2] = {(const char *)prefix->bytes, (const char *)upper.bytes};
    int lengths[2] = {(int)prefix->size, (int)upper.size};
    PGresult *result = pg_run("keys", 2, values, lengths);
    int found = PQntuples(result);
    if (found > BATCH_SIZE) die("a prefix matched more than %d keys", BATCH_SIZE);
    for (int row = 0; row < found; row++) {
        keep_key(&last_keys[row], PQgetvalue(result, row, 0), (size_t)PQgetlength(result, row, 0));
    }
    PQclear(result);
    return found;
}

static int pg_next_page(int limit, bool restart) {
    if (restart) has_cursor = false;
    Key lower, upper;
    page_bounds(&lower, &upper);
    /* The int8 LIMIT in binary: its 8 bytes, big-endian. */
    unsigned char limit_bytes[8];
    for (int byte = 0; byte < 8; byte++) limit_bytes[byte] = (unsigned char)((uint64_t)limit >> (56 - 8 * byte));
    const char *values[3] = {(const char *)lower.bytes, (const char *)upper.bytes, (const char *)limit_bytes};
    int lengths[3] = {(int)lower.size, (int)upper.size, 8};
    PGresult *result = pg_run("entries", 3, values, lengths);
    int read = PQntuples(result);
    if (read > BATCH_SIZE) die("a page of %d entries", read);
    for (int row = 0; row < read; row++) {
        keep_key(&last_keys[row], PQgetvalue(result, row, 0), (size_t)PQgetlength(result, row, 0));
        size_t value_size = (size_t)PQgetlength(result, row, 1);
        if (value_size > work.value_size) die("a value of %zu bytes is not the workload's", value_size);
        if (value_size) memcpy(page_values + (size_t)row * work.value_size, PQgetvalue(result, row, 1), value_size);
    }
    PQclear(result);
    if (read > 0) {
        cursor = last_keys[read - 1];
        has_cursor = true;
    }
    return read;
}

static void pg_close(void) { PQfinish(pg); }  /* the table goes at exit (pg_drop_table) */

static const Engine postgres_engine = {
    pg_set, pg_set_batch, pg_get, pg_scan, pg_next_page, pg_delete_batch, pg_close,
};

/* --- libsodium: what EncryptedOfflineStore adds to a get ----------------------------------- */
/*
 * XChaCha20-Poly1305 (IETF AEAD) of one value with the key name as associated data and a random
 * 24-byte nonce, as EncryptedOfflineStore seals each value (without its base64 and "v1:" framing).
 * Decrypt is what it adds to a get, encrypt what it adds to a set; as many calls as gets.
 */

static unsigned char sodium_key[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
static unsigned char *sodium_sealed;  /* nonce || ciphertext || tag of values[0] under each key */
static unsigned char *sodium_opened;
static size_t sodium_sealed_size;

static void seal(int index, unsigned char *sealed) {
    randombytes_buf(sealed, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
    crypto_aead_xchacha20poly1305_ietf_encrypt(sealed + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, NULL,
                                               work.values[0], work.value_size, work.keys[index].bytes,
                                               work.keys[index].size, NULL, sealed, sodium_key);
}

static void body_encrypt(int round, int call) {
    (void)round;
    seal(work.shuffled[call], sodium_sealed + (size_t)work.shuffled[call] * sodium_sealed_size);
}

static void body_decrypt(int round, int call) {
    (void)round;
    int index = work.shuffled[call];
    const unsigned char *sealed = sodium_sealed + (size_t)index * sodium_sealed_size;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(
            sodium_opened, NULL, NULL, sealed + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
            sodium_sealed_size - crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, work.keys[index].bytes,
            work.keys[index].size, sealed, sodium_key) != 0) {
        die("a value did not decrypt");
    }
}

static void run_sodium(void) {
    if (sodium_init() < 0) die("sodium_init failed");
    crypto_aead_xchacha20poly1305_ietf_keygen(sodium_key);
    sodium_sealed_size =
        crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + work.value_size + crypto_aead_xchacha20poly1305_ietf_ABYTES;
    sodium_sealed = checked_malloc(sodium_sealed_size * (size_t)work.count);
    sodium_opened = checked_malloc(work.value_size);
    int calls = work.count < 100000 ? work.count : 100000;
    char name[96];
    snprintf(name, sizeof name, "encrypt (XChaCha20-Poly1305, %zu B)", work.value_size);
    measure(name, calls, 1, true, NULL, body_encrypt);
    snprintf(name, sizeof name, "decrypt (XChaCha20-Poly1305, %zu B)", work.value_size);
    measure(name, calls, 1, true, NULL, body_decrypt);
    free(sodium_opened);
    free(sodium_sealed);
}

/* ------------------------------------------------------------------------------------------ */

static _Noreturn void usage(const char *message) {
    fprintf(stderr,
            "%s\nusage: sovaria_c_baseline --engine file|sqlite|lmdb|leveldb|postgres|sodium\n"
            "                          [--durability synced|flushed] [--count N] [--value-size BYTES]\n"
            "                          [--repeats N] [--single-sets N]\n"
            "                          --dir FOLDER   (an empty folder for the store; not needed for sodium)\n"
            "postgres reads the server's libpq conninfo from SOVARIA_C_BASELINE_CONNINFO\n",
            message);
    exit(2);
}

static int positive(const char *flag, const char *text) {
    char *end;
    long value = text ? strtol(text, &end, 10) : 0;
    if (!text || *end || value <= 0 || value > 100000000) usage(flag);
    return (int)value;
}

int main(int argc, char **argv) {
    int count = 5000, value_size = 1024, single_sets = 1000;
    const char *engine_argument = NULL;
    folder = NULL;
    for (int index = 1; index < argc; index++) {
        const char *flag = argv[index], *value = index + 1 < argc ? argv[index + 1] : NULL;
        if (strcmp(flag, "--engine") == 0 && value) engine_argument = value;
        else if (strcmp(flag, "--durability") == 0 && value) variant_name = value;
        else if (strcmp(flag, "--count") == 0) count = positive(flag, value);
        else if (strcmp(flag, "--value-size") == 0) value_size = positive(flag, value);
        else if (strcmp(flag, "--repeats") == 0) repeats = positive(flag, value);
        else if (strcmp(flag, "--single-sets") == 0) single_sets = positive(flag, value);
        else if (strcmp(flag, "--dir") == 0 && value) folder = value;
        else usage(flag);
        index++;
    }
    if (!engine_argument) usage("--engine is required");
    if (strcmp(variant_name, "synced") != 0 && strcmp(variant_name, "flushed") != 0) usage("--durability");
    synced = strcmp(variant_name, "synced") == 0;
    engine_name = engine_argument;
    work = make_workload(count, (size_t)value_size);
    page_values = checked_malloc((size_t)BATCH_SIZE * work.value_size);

    if (strcmp(engine_name, "sodium") == 0) {
        variant_name = "";
        run_sodium();
        return 0;
    }
    /* The stores are made in the folder given, never in the current one. */
    if (!folder) usage("--dir is required");
    if (strcmp(engine_name, "file") == 0) engine = &file_engine;
    else if (strcmp(engine_name, "sqlite") == 0) {
        sqlite_open();
        engine = &sqlite_engine;
    } else if (strcmp(engine_name, "lmdb") == 0) {
        lmdb_open();
        engine = &lmdb_engine;
    } else if (strcmp(engine_name, "leveldb") == 0) {
        leveldb_open_database();
        engine = &leveldb_engine;
    } else if (strcmp(engine_name, "postgres") == 0) {
        pg_open();
        engine = &postgres_engine;
    } else usage("unknown engine");
    run_store_operations(single_sets);
    engine->close();
    return 0;
}
