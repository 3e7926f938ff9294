import CLMDB
import Foundation
import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension LMDBEnvironment {
    /// The value stored under `key`, copied out of the map, or `nil`. Runs on the calling thread.
    func value(for key: String) throws -> String? {
        var value: String?
        guard try visitValue(for: key, { bytes in value = try StoreValue.string(bytes, key: key, engine: .lmdb) })
        else { return nil }
        return value
    }

    /// Calls `visit` with the bytes of the value stored under `key`, in the map, inside the read
    /// transaction; returns whether there was one. Runs on the calling thread.
    ///
    /// The path of every `get` and `withValue`, so nothing on it is generic (a generic call the
    /// compiler did not specialize looked up type metadata on every read: a third of a get's time):
    /// the shared side of the lock taken by hand, a pooled transaction, `mdb_get`. The rare cases
    /// (a map another process grew, a closed environment) go the general way, ``withValue(for:_:)``.
    func visitValue(for key: String, _ visit: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        var failure: (any Error)?
        let outcome = key.utf8.withContiguousStorageIfAvailable { utf8 -> FastRead in
            guard let current = handles.lockShared() else {
                handles.unlockShared()
                return .general
            }
            defer { handles.unlockShared() }
            let txn: OpaquePointer
            do {
                guard let taken = try readTransactions.take(current.env) else { return .general }
                txn = taken
            } catch {
                failure = error
                return .failed
            }
            defer { readTransactions.give(txn) }
            var keyVal = MDB_val(mv_size: utf8.count, mv_data: UnsafeMutableRawPointer(mutating: utf8.baseAddress))
            var value = MDB_val()
            let rc = mdb_get(txn, current.dbi, &keyVal, &value)
            if rc == MDB_NOTFOUND { return .missing }
            do {
                guard rc == MDB_SUCCESS else { throw OfflineStoreError.lmdb(rc, "Reading from LMDB failed") }
                try visit(value.bytes)
            } catch {
                failure = (error as? OfflineStoreError)?.namingDamagedFile(path + "/data.mdb") ?? error
                return .failed
            }
            return .found
        }
        switch outcome {
        case .found: return true
        case .missing: return false
        case .failed: throw failure!
        case .general, nil: return try withValue(for: key) { bytes in try visit(bytes) } != nil
        }
    }

    /// How the read of one value on its fast path ended.
    private enum FastRead {
        case found, missing, failed
        /// The environment is closed or another process grew the map: read the general way.
        case general
    }

    /// Calls `body` with the bytes of the value stored under `key`, in the map, inside the read
    /// transaction; `nil` when there is none. Runs on the calling thread.
    func withValue<Result>(for key: String, _ body: (UnsafeRawBufferPointer) throws -> Result) throws -> Result? {
        try key.withMDBVal { keyVal in
            try read { txn, dbi in
                var value = MDB_val()
                let rc = mdb_get(txn, dbi, &keyVal, &value)
                if rc == MDB_NOTFOUND { return nil }
                guard rc == MDB_SUCCESS else { throw OfflineStoreError.lmdb(rc, "Reading from LMDB failed") }
                return try body(value.bytes)
            }
        }
    }

    /// Calls `visit` with up to `limit` keys (and their values) that start with `prefix` and sort after
    /// `after`, in byte order, from one read transaction on the calling thread, until it returns `false`.
    ///
    /// A cursor starts at `MDB_SET_RANGE` on the larger of `prefix` and `after` and steps with `MDB_NEXT`
    /// while keys have the byte prefix: LMDB's own order, nothing sorted here. `visit` must copy what it
    /// keeps.
    func scan(
        prefix: String,
        after: String?,
        limit: Int,
        _ visit: (_ key: MDB_val, _ value: MDB_val) throws -> Bool
    ) throws {
        guard limit > 0 else { return }
        let prefixBytes = Array(prefix.utf8)
        guard prefixBytes.count <= StoreKey.maxUTF8Count else { return }  // no key is that long
        let afterBytes = after.map { Array($0.utf8) }
        var start = prefixBytes
        if let afterBytes, start.lexicographicallyPrecedes(afterBytes) { start = afterBytes }
        // LMDB refuses longer search keys; every stored key past the cut is still >= it.
        start = Array(start.prefix(StoreKey.maxUTF8Count))

        try read { txn, dbi in
            var opened: OpaquePointer?
            try checkLMDB(mdb_cursor_open(txn, dbi, &opened), "Opening an LMDB cursor failed")
            guard let cursor = opened else { return }
            defer { mdb_cursor_close(cursor) }

            var key = MDB_val()
            var value = MDB_val()
            var rc: Int32
            if start.isEmpty {
                rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
            } else {
                rc = start.withMDBVal { startVal in
                    key = startVal
                    return mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE)
                }
            }
            var visited = 0
            // memcmp, not generic collection code: this loop runs once per key of a scan.
            let hasPrefix = { (key: MDB_val) -> Bool in
                prefixBytes.withUnsafeBytes { prefix in
                    guard let start = prefix.baseAddress else { return true }
                    return key.mv_size >= prefix.count && memcmp(key.mv_data, start, prefix.count) == 0
                }
            }
            // Keys come in order: once one sorts after `after`, every later one does too, so only
            // the first keys are compared with it.
            var pastAfter = afterBytes == nil
            while rc == MDB_SUCCESS {
                guard hasPrefix(key) else { break }
                if !pastAfter { pastAfter = afterBytes!.lexicographicallyPrecedes(key.bytes) }
                if pastAfter {
                    guard try visit(key, value) else { return }
                    visited += 1
                    if visited == limit { return }
                }
                rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
            }
            guard rc == MDB_SUCCESS || rc == MDB_NOTFOUND else {
                throw OfflineStoreError.lmdb(rc, "Walking LMDB keys failed")
            }
        }
    }

    /// Up to `limit` keys that start with `prefix` and sort after `after`, in byte order.
    func keys(prefix: String, after: String? = nil, limit: Int = .max) throws -> [String] {
        var keys: [String] = []
        try scan(prefix: prefix, after: after, limit: limit) { key, _ in
            keys.append(try key.string("key"))
            return true
        }
        return keys
    }

    /// Up to `limit` entries that start with `prefix` and sort after `after`, in byte order; `nil`
    /// as soon as their keys and values pass `maxBytes` (the caller reads the page elsewhere).
    func entries(prefix: String, after: String?, limit: Int, maxBytes: Int) throws -> [StoreEntry]? {
        try entries(prefix: prefix, after: after, limit: limit, maxBytes: maxBytes) { key, value in
            StoreEntry(key: key, value: try StoreValue.string(value, key: key, engine: .lmdb))
        }
    }

    /// ``entries(prefix:after:limit:maxBytes:)`` with the values copied out as bytes.
    func dataEntries(prefix: String, after: String?, limit: Int, maxBytes: Int) throws -> [StoreDataEntry]? {
        try entries(prefix: prefix, after: after, limit: limit, maxBytes: maxBytes) { key, value in
            StoreDataEntry(key: key, data: Data(value))
        }
    }

    private func entries<Entry>(
        prefix: String, after: String?, limit: Int, maxBytes: Int,
        _ entry: (String, UnsafeRawBufferPointer) throws -> Entry
    ) throws -> [Entry]? {
        var entries: [Entry] = []
        entries.reserveCapacity(min(limit, 1_024))
        var bytes = 0
        do {
            try scan(prefix: prefix, after: after, limit: limit) { key, value in
                bytes += key.mv_size + value.mv_size
                guard bytes <= maxBytes else { throw PageTooLarge() }
                entries.append(try entry(try key.string("key"), value.bytes))
                return true
            }
        } catch is PageTooLarge {
            return nil
        }
        return entries
    }

    /// Stops a page read that passed its byte bound.
    private struct PageTooLarge: Error {}
}
