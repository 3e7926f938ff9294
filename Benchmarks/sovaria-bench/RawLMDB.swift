/// Registered in BenchEngines as the raw baseline of "lmdb".
import CBenchLMDB
import Foundation
import Sovaria

/// The LMDB adapter's work done straight through the C API: what `LMDBOfflineStore` costs over a
/// hand-written caller of the same environment.
///
/// Same environment as `LMDBEnvironment.openHandles`: the folder itself, mode 0600, `MDB_NOTLS`,
/// plus `MDB_NOSYNC` for `.flushed` (`.synced` keeps LMDB's default full sync at commit), 126
/// reader slots, stale readers cleared at open, the unnamed main database. The map is sized once
/// for the workload, so the adapter's grow-and-retry never happens here. Reads reuse one reset
/// read transaction (`mdb_txn_renew`), as the adapter's pool of idle ones does; every write call
/// is one write transaction of `mdb_put` (flags 0) and `mdb_del`; scans walk a cursor from
/// `MDB_SET_RANGE` while keys have the prefix.
///
/// What it leaves out is the adapter's cost: no Strings, no key validation, no locks around the
/// transactions, no hop to the write or scan queue. Results are still copied out into `[UInt8]`,
/// as the adapter copies them into Strings.
final class RawLMDBSubject: BenchSubject {
    private let workload: Workload
    private let env: OpaquePointer
    private let dbi: MDB_dbi
    /// Reset between reads, renewed for each: it keeps its reader slot.
    private let readTransaction: OpaquePointer
    private var state = RawReadState()

    init(folder: URL, durability: Durability, workload: Workload) throws {
        self.workload = workload
        var created: OpaquePointer?
        try check(mdb_env_create(&created), "creating the environment")
        guard let env = created else { throw BenchError.failed("raw lmdb: creating the environment returned NULL") }
        do {
            try check(mdb_env_set_maxreaders(env, 126), "setting the reader slots")
            try check(mdb_env_set_mapsize(env, Self.mapSize(for: workload)), "setting the map size")
            var flags = UInt32(MDB_NOTLS)
            if durability == .flushed { flags |= UInt32(MDB_NOSYNC) }
            try check(mdb_env_open(env, folder.path, flags, 0o600), "opening \(folder.path)")
            var dead: Int32 = 0
            try check(mdb_reader_check(env, &dead), "clearing stale readers")

            var begun: OpaquePointer?
            try check(mdb_txn_begin(env, nil, 0, &begun), "starting the open transaction")
            guard let txn = begun else { throw BenchError.failed("raw lmdb: mdb_txn_begin returned NULL") }
            var dbi: MDB_dbi = 0
            let rc = mdb_dbi_open(txn, nil, 0, &dbi)
            guard rc == MDB_SUCCESS else {
                mdb_txn_abort(txn)
                throw failure(rc, "opening the main database")
            }
            try check(mdb_txn_commit(txn), "committing the open transaction")

            begun = nil
            try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &begun), "starting a read")
            guard let read = begun else { throw BenchError.failed("raw lmdb: mdb_txn_begin returned NULL") }
            mdb_txn_reset(read)
            self.env = env
            self.dbi = dbi
            readTransaction = read
        } catch {
            mdb_env_close(env)
            throw error
        }
    }

    deinit {
        mdb_txn_abort(readTransaction)
        mdb_env_close(env)
    }

    /// A map that holds the workload several times over (pages are about half full after random
    /// writes, and deletes leave free pages until reused), at least 1 GiB: the adapter's map
    /// grows on demand instead, which a raw caller sizing its map up front never pays for.
    private static func mapSize(for workload: Workload) -> Int {
        let estimate = workload.count * (workload.valueBytes[0].count + 64) * 4
        let mebibyte = 1 << 20
        return max(1 << 30, (estimate + mebibyte - 1) / mebibyte * mebibyte)
    }

    func set(_ index: Int, variant: Int) async throws {
        try write { txn in try put(index, variant, txn) }
    }

    func setBatch(_ indexes: Range<Int>, variant: Int) async throws {
        try write { txn in for index in indexes { try put(index, variant, txn) } }
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
        try walk(from: prefix, prefix: prefix, skipping: nil, limit: .max) { key, _ in keys.append(copy(key)) }
        state.lastKeys = keys
        return keys.count
    }

    func nextPage(limit: Int, restart: Bool) async throws -> Int {
        if restart { state.cursor = nil }
        // Start at the larger of the prefix and the last key, as `LMDBEnvironment.scan` does.
        var start = state.pagePrefix
        if let cursor = state.cursor, start.lexicographicallyPrecedes(cursor) { start = cursor }
        var page: [(key: [UInt8], value: [UInt8])] = []
        page.reserveCapacity(limit)
        try walk(from: start, prefix: state.pagePrefix, skipping: state.cursor, limit: limit) { key, value in
            page.append((key: copy(key), value: copy(value)))
        }
        state.cursor = page.last?.key
        state.lastPage = page
        return page.count
    }

    func deleteBatch(_ indexes: Range<Int>) async throws {
        try write { txn in
            for index in indexes {
                let rc = workload.keyBytes[index].withUnsafeBytes { key in
                    var keyVal = mdbVal(key)
                    return mdb_del(txn, dbi, &keyVal, nil)
                }
                // A missing key is not an error, as in the adapter.
                guard rc == MDB_SUCCESS || rc == MDB_NOTFOUND else { throw failure(rc, "deleting a key") }
            }
        }
    }

    // MARK: - Transactions

    /// Runs `body` in one write transaction, committed (and synced as the flags say) or aborted.
    private func write(_ body: (OpaquePointer) throws -> Void) throws {
        var begun: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &begun), "starting a write")
        guard let txn = begun else { throw BenchError.failed("raw lmdb: mdb_txn_begin returned NULL") }
        do {
            try body(txn)
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        // Frees the transaction, also when it fails.
        try check(mdb_txn_commit(txn), "committing a write")
    }

    private func put(_ index: Int, _ variant: Int, _ txn: OpaquePointer) throws {
        let rc = workload.keyBytes[index].withUnsafeBytes { key in
            workload.valueBytes[variant].withUnsafeBytes { value in
                var keyVal = mdbVal(key)
                var valueVal = mdbVal(value)
                return mdb_put(txn, dbi, &keyVal, &valueVal, 0)
            }
        }
        try check(rc, "storing a value")
    }

    /// Runs `body` in the renewed read transaction, reset afterwards; `body` copies what it keeps.
    private func read<Result>(_ body: (OpaquePointer) throws -> Result) throws -> Result {
        try check(mdb_txn_renew(readTransaction), "starting a read")
        defer { mdb_txn_reset(readTransaction) }
        return try body(readTransaction)
    }

    private func get(_ key: [UInt8]) throws -> Bool {
        try read { txn in
            var value = MDB_val()
            let rc = key.withUnsafeBytes { key in
                var keyVal = mdbVal(key)
                return mdb_get(txn, dbi, &keyVal, &value)
            }
            if rc == MDB_NOTFOUND { return false }
            try check(rc, "reading a value")
            // Copied out of the map before the transaction ends (the adapter makes a String here).
            state.lastValue = copy(value)
            return true
        }
    }

    /// Calls `visit` with up to `limit` entries from the first key at or after `start`, while keys
    /// start with `prefix`, leaving out the key equal to `skipping`: a cursor from
    /// `MDB_SET_RANGE`, then `MDB_NEXT`.
    private func walk(
        from start: [UInt8], prefix: [UInt8], skipping: [UInt8]?, limit: Int,
        _ visit: (_ key: MDB_val, _ value: MDB_val) -> Void
    ) throws {
        try read { txn in
            var opened: OpaquePointer?
            try check(mdb_cursor_open(txn, dbi, &opened), "opening a cursor")
            guard let cursor = opened else { throw BenchError.failed("raw lmdb: mdb_cursor_open returned NULL") }
            defer { mdb_cursor_close(cursor) }
            var key = MDB_val()
            var value = MDB_val()
            var rc = start.withUnsafeBytes { start in
                key = mdbVal(start)
                return mdb_cursor_get(cursor, &key, &value, MDB_SET_RANGE)
            }
            // The page's `after` key itself is not part of the page; keys are unique, so only the
            // first can be it.
            if rc == MDB_SUCCESS, let skipping, equals(key, skipping) {
                rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
            }
            var visited = 0
            while rc == MDB_SUCCESS, visited < limit {
                guard hasPrefix(key, prefix) else { break }
                visit(key, value)
                visited += 1
                rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
            }
            guard rc == MDB_SUCCESS || rc == MDB_NOTFOUND else { throw failure(rc, "walking keys") }
        }
    }
}

/// An `MDB_val` over `bytes`, valid while they are; LMDB only reads through its pointer.
private func mdbVal(_ bytes: UnsafeRawBufferPointer) -> MDB_val {
    MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
}

/// A copy of the bytes `value` points at, which are valid only until their transaction ends.
private func copy(_ value: MDB_val) -> [UInt8] {
    [UInt8](UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size))
}

private func hasPrefix(_ key: MDB_val, _ prefix: [UInt8]) -> Bool {
    key.mv_size >= prefix.count && sameBytes(key.mv_data, prefix)
}

private func equals(_ key: MDB_val, _ bytes: [UInt8]) -> Bool {
    key.mv_size == bytes.count && sameBytes(key.mv_data, bytes)
}

/// Whether the `bytes.count` bytes at `start` are `bytes` (memcmp, as LMDB compares keys).
private func sameBytes(_ start: UnsafeRawPointer?, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { bytes in
        guard let start, let base = bytes.baseAddress else { return bytes.isEmpty }
        return memcmp(start, base, bytes.count) == 0
    }
}

private func check(_ rc: Int32, _ action: String) throws {
    guard rc == MDB_SUCCESS else { throw failure(rc, action) }
}

/// The error for `rc`, with LMDB's own text for it.
private func failure(_ rc: Int32, _ action: String) -> BenchError {
    let message = mdb_strerror(rc).map { String(cString: $0) } ?? "error \(rc)"
    return BenchError.failed("raw lmdb: \(action): \(message) (\(rc))")
}
