/// Registered in BenchEngines as the raw baseline of "leveldb".
import CBenchLevelDB
import Foundation
import Sovaria

/// The LevelDB adapter's work done straight through the C API: what `LevelDBOfflineStore` costs
/// over a hand-written caller of the same database.
///
/// Same database as `LevelDBHandle`: the folder itself, `create_if_missing`, an 8 MiB LRU block
/// cache, a bloom filter of 10 bits a key, Snappy compression, default read options, and write
/// options with `sync` true for `.synced` and false for `.flushed`. A single set is one
/// `leveldb_put`, as in the adapter; batches are one `leveldb_writebatch` each; scans and pages
/// use a new iterator each (a consistent snapshot), seeking to the prefix, or to the last key
/// and past it.
///
/// What it leaves out is the adapter's cost: no Strings, no key validation, no hop to the
/// blocking queue for synced or large writes and long scans. Results are still copied out into
/// `[UInt8]`, as the adapter copies them into Strings.
final class RawLevelDBSubject: BenchSubject {
    private let workload: Workload
    private let database: OpaquePointer
    private let blockCache: OpaquePointer
    private let bloomFilter: OpaquePointer
    private let readOptions: OpaquePointer
    private let writeOptions: OpaquePointer
    private var state = RawReadState()

    init(folder: URL, durability: Durability, workload: Workload) throws {
        self.workload = workload
        // The *_create functions allocate with C++ `new`, which never returns NULL.
        let blockCache: OpaquePointer = leveldb_cache_create_lru(8 * 1_024 * 1_024)
        let bloomFilter: OpaquePointer = leveldb_filterpolicy_create_bloom(10)
        let options: OpaquePointer = leveldb_options_create()
        // The database keeps a copy of the options, but not of the cache and the filter.
        defer { leveldb_options_destroy(options) }
        leveldb_options_set_create_if_missing(options, 1)
        leveldb_options_set_cache(options, blockCache)
        leveldb_options_set_filter_policy(options, bloomFilter)
        leveldb_options_set_compression(options, Int32(leveldb_snappy_compression))
        var error: UnsafeMutablePointer<CChar>?
        let opened = leveldb_open(options, folder.path, &error)
        guard error == nil, let opened else {
            leveldb_filterpolicy_destroy(bloomFilter)
            leveldb_cache_destroy(blockCache)
            throw failure(&error, "opening \(folder.path)")
        }
        database = opened
        self.blockCache = blockCache
        self.bloomFilter = bloomFilter
        readOptions = leveldb_readoptions_create()
        writeOptions = leveldb_writeoptions_create()
        leveldb_writeoptions_set_sync(writeOptions, durability == .synced ? 1 : 0)
    }

    deinit {
        // The database uses the cache and the filter until it is closed.
        leveldb_close(database)
        leveldb_writeoptions_destroy(writeOptions)
        leveldb_readoptions_destroy(readOptions)
        leveldb_filterpolicy_destroy(bloomFilter)
        leveldb_cache_destroy(blockCache)
    }

    func set(_ index: Int, variant: Int) async throws {
        var error: UnsafeMutablePointer<CChar>?
        workload.keyBytes[index].withUnsafeBytes { key in
            workload.valueBytes[variant].withUnsafeBytes { value in
                leveldb_put(database, writeOptions, chars(key), key.count, chars(value), value.count, &error)
            }
        }
        if error != nil { throw failure(&error, "storing a value") }
    }

    func setBatch(_ indexes: Range<Int>, variant: Int) async throws {
        try write { batch in
            for index in indexes {
                workload.keyBytes[index].withUnsafeBytes { key in
                    workload.valueBytes[variant].withUnsafeBytes { value in
                        leveldb_writebatch_put(batch, chars(key), key.count, chars(value), value.count)
                    }
                }
            }
        }
    }

    func get(_ index: Int) async throws -> Bool {
        try get(workload.keyBytes[index])
    }

    func getMiss(_ index: Int) async throws -> Bool {
        try get(workload.missKeyBytes[index])
    }

    func scan(prefix index: Int) async throws -> Int {
        let prefix = workload.prefixBytes[index]
        var keys: [[UInt8]] = []
        try walk(from: prefix, prefix: prefix, skipping: nil, limit: .max) { iterator in
            var length = 0
            keys.append(copy(leveldb_iter_key(iterator, &length), length))
        }
        state.lastKeys = keys
        return keys.count
    }

    func nextPage(limit: Int, restart: Bool) async throws -> Int {
        if restart { state.cursor = nil }
        // Seek to the larger of the prefix and the last key, as `LevelDBScan` does.
        var start = state.pagePrefix
        if let cursor = state.cursor, !cursor.lexicographicallyPrecedes(state.pagePrefix) { start = cursor }
        var page: [(key: [UInt8], value: [UInt8])] = []
        page.reserveCapacity(limit)
        try walk(from: start, prefix: state.pagePrefix, skipping: state.cursor, limit: limit) { iterator in
            var keyLength = 0
            var valueLength = 0
            let key = copy(leveldb_iter_key(iterator, &keyLength), keyLength)
            page.append((key: key, value: copy(leveldb_iter_value(iterator, &valueLength), valueLength)))
        }
        state.cursor = page.last?.key
        state.lastPage = page
        return page.count
    }

    func deleteBatch(_ indexes: Range<Int>) async throws {
        try write { batch in
            for index in indexes {
                workload.keyBytes[index].withUnsafeBytes { key in
                    leveldb_writebatch_delete(batch, chars(key), key.count)
                }
            }
        }
    }

    /// Fills a new write batch with `fill` and applies it with one `leveldb_write`, as
    /// `LevelDBHandle.write` does.
    private func write(_ fill: (OpaquePointer) -> Void) throws {
        let batch: OpaquePointer = leveldb_writebatch_create()
        defer { leveldb_writebatch_destroy(batch) }
        fill(batch)
        var error: UnsafeMutablePointer<CChar>?
        leveldb_write(database, writeOptions, batch, &error)
        if error != nil { throw failure(&error, "writing a batch") }
    }

    private func get(_ key: [UInt8]) throws -> Bool {
        var error: UnsafeMutablePointer<CChar>?
        var length = 0
        let found = key.withUnsafeBytes { key in
            leveldb_get(database, readOptions, chars(key), key.count, &length, &error)
        }
        if error != nil { throw failure(&error, "reading a value") }
        // NULL without an error is "not found"; an empty value is a non-NULL pointer and length 0.
        guard let found else { return false }
        defer { leveldb_free(found) }
        // LevelDB's malloc'd copy is freed at once; the adapter makes a String of it here.
        state.lastValue = copy(found, length)
        return true
    }

    /// Calls `visit` on up to `limit` entries from the first key at or after `start`, while keys
    /// start with `prefix`, leaving out the key equal to `skipping`; then checks the iterator's
    /// status and destroys it.
    private func walk(
        from start: [UInt8], prefix: [UInt8], skipping: [UInt8]?, limit: Int, _ visit: (OpaquePointer) -> Void
    ) throws {
        let iterator: OpaquePointer = leveldb_create_iterator(database, readOptions)
        defer { leveldb_iter_destroy(iterator) }
        start.withUnsafeBytes { leveldb_iter_seek(iterator, chars($0), $0.count) }
        // The page's `after` key itself is not part of the page; keys are unique, so only the
        // first can be it.
        if let skipping, leveldb_iter_valid(iterator) != 0, currentKey(iterator, equals: skipping) {
            leveldb_iter_next(iterator)
        }
        var visited = 0
        while visited < limit, leveldb_iter_valid(iterator) != 0, currentKey(iterator, startsWith: prefix) {
            visit(iterator)
            visited += 1
            leveldb_iter_next(iterator)
        }
        var error: UnsafeMutablePointer<CChar>?
        leveldb_iter_get_error(iterator, &error)
        if error != nil { throw failure(&error, "walking keys") }
    }
}

/// Bytes as the `const char *` LevelDB takes with a length; never read as a C string.
private func chars(_ bytes: UnsafeRawBufferPointer) -> UnsafePointer<CChar>? {
    bytes.baseAddress?.assumingMemoryBound(to: CChar.self)
}

/// A copy of `length` bytes LevelDB owns (valid until the iterator moves, or until freed).
private func copy(_ start: UnsafePointer<CChar>?, _ length: Int) -> [UInt8] {
    [UInt8](UnsafeRawBufferPointer(start: start, count: length))
}

private func currentKey(_ iterator: OpaquePointer, startsWith prefix: [UInt8]) -> Bool {
    var length = 0
    let key = leveldb_iter_key(iterator, &length)
    return length >= prefix.count && sameBytes(key, prefix)
}

private func currentKey(_ iterator: OpaquePointer, equals bytes: [UInt8]) -> Bool {
    var length = 0
    let key = leveldb_iter_key(iterator, &length)
    return length == bytes.count && sameBytes(key, bytes)
}

/// Whether the `bytes.count` bytes at `start` are `bytes` (memcmp, as LevelDB's default
/// comparator orders keys).
private func sameBytes(_ start: UnsafePointer<CChar>?, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { bytes in
        guard let start, let base = bytes.baseAddress else { return bytes.isEmpty }
        return memcmp(start, base, bytes.count) == 0
    }
}

/// The error LevelDB stored in `error` (a `malloc`'d status string), which is freed here.
private func failure(_ error: inout UnsafeMutablePointer<CChar>?, _ action: String) -> BenchError {
    let message = error.map { String(cString: $0) } ?? "no status"
    if let pointer = error { leveldb_free(pointer) }
    error = nil
    return BenchError.failed("raw leveldb: \(action): \(message)")
}
