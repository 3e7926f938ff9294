import CLevelDB
import Foundation
import Sovaria
import SovariaPlumbing
import Synchronization

/// One open LevelDB database, shared by every ``LevelDBOfflineStore`` on its folder in this
/// process: LevelDB's LOCK file refuses a second open of a folder, from this process too.
///
/// Owns the database, its LRU block cache, its bloom filter and the read and write options. The
/// last store or scan to let go closes the database in `deinit`, and only then frees the cache
/// and the filter, which the database uses until it is closed.
// @unchecked Sendable: LevelDB's objects are thread-safe; the pointers are set in init, freed only in deinit.
final class LevelDBHandle: @unchecked Sendable {
    /// The handles open in this process, by canonical folder path.
    static let registry = OpenOncePerPath<LevelDBHandle>()

    /// Bits per key of the bloom filter: about 1% false positives, so a `get` of a missing key
    /// rarely reads a block.
    static let bloomBitsPerKey: Int32 = 10

    /// The canonical path of the folder.
    let path: String
    /// The open database; ``LevelDBHandle/verifyEveryEntry()`` iterates it with options of its own.
    let database: OpaquePointer
    private let blockCache: OpaquePointer
    private let bloomFilter: OpaquePointer
    /// Read options: every block read is checked against its checksum, blocks read go into the cache.
    private let readOptions: OpaquePointer
    private let syncedWriteOptions: OpaquePointer
    private let flushedWriteOptions: OpaquePointer
    /// The first write that failed, after which this handle refuses writes (see ``refuseWritesAfter(_:)``).
    private let failedWrite = Mutex<OfflineStoreError?>(nil)

    /// The handle open for `path` in this process, or a newly opened one.
    static func shared(path: String, blockCacheSizeBytes: Int) throws -> LevelDBHandle {
        try registry.handle(for: path) { try LevelDBHandle(path: path, blockCacheSizeBytes: blockCacheSizeBytes) }
    }

    // The *_create functions allocate with C++ `new`, which never returns NULL (it aborts when
    // memory is exhausted), so their results are used as non-optional pointers.
    private init(path: String, blockCacheSizeBytes: Int) throws(OfflineStoreError) {
        let blockCache: OpaquePointer = leveldb_cache_create_lru(blockCacheSizeBytes)
        let bloomFilter: OpaquePointer = leveldb_filterpolicy_create_bloom(Self.bloomBitsPerKey)
        let options: OpaquePointer = leveldb_options_create()
        // The database keeps a copy of the options (but not of the cache and the filter).
        defer { leveldb_options_destroy(options) }
        leveldb_options_set_create_if_missing(options, 1)
        leveldb_options_set_cache(options, blockCache)
        leveldb_options_set_filter_policy(options, bloomFilter)
        leveldb_options_set_compression(options, Int32(leveldb_snappy_compression))
        // Damage found at open or in a compaction fails loudly instead of being skipped: a log
        // record with a bad checksum would otherwise be dropped with every write after it in its block.
        leveldb_options_set_paranoid_checks(options, 1)

        let operation = "Opening the LevelDB store at \(path)"
        var opened: OpaquePointer?
        var failure: OfflineStoreError?
        do {
            try LevelDBManifest.check(folder: path)
            opened = try checkLevelDB(operation, path: path) { leveldb_open(options, path, $0) }
        } catch {
            failure = error
        }
        guard let opened else {
            leveldb_filterpolicy_destroy(bloomFilter)
            leveldb_cache_destroy(blockCache)
            throw failure
                ?? OfflineStoreError.leveldb("IO error: no database and no error", operation: operation, path: path)
        }
        self.path = path
        database = opened
        self.blockCache = blockCache
        self.bloomFilter = bloomFilter
        readOptions = leveldb_readoptions_create()
        leveldb_readoptions_set_verify_checksums(readOptions, 1)
        syncedWriteOptions = leveldb_writeoptions_create()
        leveldb_writeoptions_set_sync(syncedWriteOptions, 1)
        flushedWriteOptions = leveldb_writeoptions_create()
        leveldb_writeoptions_set_sync(flushedWriteOptions, 0)
    }

    /// Rebuilds the database in `path` from its table and log files (`leveldb_repair_db`): what to do
    /// when open reports a damaged MANIFEST. Entries only in damaged parts of files are lost.
    static func repair(path: String) throws(OfflineStoreError) {
        guard !registry.isOpen(path) else {
            throw OfflineStoreError(
                .locked,
                "The LevelDB store at \(path) is open in this process: release every store on it, then repair.",
                engine: .leveldb)
        }
        let options: OpaquePointer = leveldb_options_create()
        defer { leveldb_options_destroy(options) }
        try checkLevelDB("Repairing the LevelDB store at \(path)", path: path) {
            leveldb_repair_db(options, path, $0)
        }
    }

    deinit {
        leveldb_close(database)
        leveldb_writeoptions_destroy(flushedWriteOptions)
        leveldb_writeoptions_destroy(syncedWriteOptions)
        leveldb_readoptions_destroy(readOptions)
        leveldb_filterpolicy_destroy(bloomFilter)
        leveldb_cache_destroy(blockCache)
        Self.registry.didClose(path)
    }

    /// The value stored under `key`, or `nil`; ``OfflineStoreError/Code/notUTF8`` when it is bytes
    /// that are not UTF-8.
    func get(_ key: UnsafeBufferPointer<UInt8>) throws(OfflineStoreError) -> String? {
        guard let (found, length) = try fetch(key) else { return nil }
        defer { leveldb_free(found) }
        return try StoreValue.string(
            UnsafeRawBufferPointer(start: found, count: length), key: Self.name(key), engine: .leveldb)
    }

    /// The bytes of the value stored under `key`, or `nil`: LevelDB's own copy, handed to `Data`
    /// without another (`Data` frees it with `leveldb_free`).
    func data(_ key: UnsafeBufferPointer<UInt8>) throws(OfflineStoreError) -> Data? {
        guard let (found, length) = try fetch(key) else { return nil }
        guard length > 0 else {
            leveldb_free(found)
            return Data()
        }
        return Data(bytesNoCopy: found, count: length, deallocator: .custom { bytes, _ in leveldb_free(bytes) })
    }

    /// Calls `visit` with the bytes of the value stored under `key` (LevelDB's copy, freed after
    /// `visit` returns); whether there was one. Not generic, so the store's `withValue`, which is,
    /// adds no generic layer below it.
    func visitValue(
        _ key: UnsafeBufferPointer<UInt8>, _ visit: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Bool {
        guard let (found, length) = try fetch(key) else { return false }
        defer { leveldb_free(found) }
        try visit(UnsafeRawBufferPointer(start: found, count: length))
        return true
    }

    /// LevelDB's copy of the value of `key` and its length, which the caller frees; `nil` when
    /// there is none.
    private func fetch(
        _ key: UnsafeBufferPointer<UInt8>
    ) throws(OfflineStoreError) -> (UnsafeMutablePointer<CChar>, Int)? {
        var length = 0
        let found = try checkLevelDB("Reading a key", path: path, key: Self.name(key)) { errorPointer in
            leveldb_get(database, readOptions, key.cChars, key.count, &length, errorPointer)
        }
        // NULL without an error is "not found"; an empty value is a non-NULL pointer and length 0.
        return found.map { ($0, length) }
    }

    /// Stores `value` under `key`; with `sync`, on stable storage before returning.
    func put(
        _ key: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, sync: Bool
    )
        throws(OfflineStoreError)
    {
        try refusingWritesAfterAFailure { () throws(OfflineStoreError) in
            try checkLevelDB("Writing a key", path: path, key: Self.name(key)) { errorPointer in
                leveldb_put(
                    database, writeOptions(sync), key.cChars, key.count, value.cChars, value.count, errorPointer)
            }
        }
    }

    /// Removes `key`; a missing key is not an error.
    func delete(_ key: UnsafeBufferPointer<UInt8>, sync: Bool) throws(OfflineStoreError) {
        try refusingWritesAfterAFailure { () throws(OfflineStoreError) in
            try checkLevelDB("Deleting a key", path: path, key: Self.name(key)) { errorPointer in
                leveldb_delete(database, writeOptions(sync), key.cChars, key.count, errorPointer)
            }
        }
    }

    /// Applies `batch` with one `leveldb_write`: all of it or, on an error, none of it.
    func write(_ batch: [StoreWrite], sync: Bool) throws(OfflineStoreError) {
        let writeBatch: OpaquePointer = leveldb_writebatch_create()
        defer { leveldb_writebatch_destroy(writeBatch) }
        for write in batch {
            switch write {
            case .set(let key, let value):
                key.withUTF8Bytes { key in
                    value.withUTF8Bytes { value in
                        leveldb_writebatch_put(writeBatch, key.cChars, key.count, value.cChars, value.count)
                    }
                }
            case .setData(let key, let data):
                key.withUTF8Bytes { key in
                    data.withUnsafeBytes { value in
                        let value = value.assumingMemoryBound(to: UInt8.self)
                        leveldb_writebatch_put(writeBatch, key.cChars, key.count, value.cChars, value.count)
                    }
                }
            case .delete(let key):
                key.withUTF8Bytes { key in leveldb_writebatch_delete(writeBatch, key.cChars, key.count) }
            }
        }
        try refusingWritesAfterAFailure { () throws(OfflineStoreError) in
            try checkLevelDB("Writing a batch of \(batch.count)", path: path) { errorPointer in
                leveldb_write(database, writeOptions(sync), writeBatch, errorPointer)
            }
        }
    }

    /// Runs the write `body`, unless an earlier write failed; a failure of `body` makes this handle
    /// refuse every later write.
    ///
    /// LevelDB does not stop writing after a failed append to its log (a full disk): the next
    /// records go behind the torn one, and recovery drops them with it — acknowledged writes lost
    /// at the next open. Reopening starts a new log, so the handle refuses writes until every store
    /// on the folder is released and the folder opened again. Reads go on meanwhile.
    private func refusingWritesAfterAFailure(_ body: () throws(OfflineStoreError) -> Void) throws(OfflineStoreError) {
        if let earlier = failedWrite.withLock({ $0 }) {
            throw OfflineStoreError(
                .reopenRequired,
                "An earlier write to the LevelDB store at \(path) failed (\(earlier.message)), which can leave a torn "
                    + "record in its log; writes behind it would be lost at the next open, so this store takes no "
                    + "more writes. Release every LevelDBOfflineStore on this folder and open it again (after "
                    + "freeing space, if the disk was full); reads work meanwhile.",
                engine: .leveldb, underlying: earlier)
        }
        do throws(OfflineStoreError) {
            try body()
        } catch {
            failedWrite.withLock { $0 = $0 ?? error }
            throw error
        }
    }

    /// Compacts every level, so deleted and overwritten entries leave the files.
    ///
    /// LevelDB reports no error here; a failed compaction makes the next write fail instead.
    func compactAll() {
        leveldb_compact_range(database, nil, 0, nil, 0)
    }

    /// A new iterator over the whole database; the caller must destroy it before releasing this
    /// handle (``LevelDBScan`` keeps the handle for that reason).
    func makeIterator() -> OpaquePointer {
        leveldb_create_iterator(database, readOptions)
    }

    private func writeOptions(_ sync: Bool) -> OpaquePointer { sync ? syncedWriteOptions : flushedWriteOptions }

    /// A key as text for an error message.
    static func name(_ key: UnsafeBufferPointer<UInt8>) -> String { String(decoding: key, as: UTF8.self) }
}
