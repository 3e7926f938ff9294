import CLMDB
import Sovaria
import SovariaPlumbing
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reset read-only transactions kept between reads, so a `get` costs little more than LMDB's own lookup.
///
/// A reset transaction keeps its reader slot but no snapshot, so idle ones never hold old pages against a
/// writer (in this process or another). Renewing one skips the reader-table mutex that beginning a
/// transaction takes under `MDB_NOTLS`.
///
/// - Important: With `MDB_NOTLS` a read transaction may move between threads as long as one thread uses
///   it at a time: a transaction belongs to whoever took it until it is given back.
final class ReadTransactionPool: Sendable {
    /// One idle transaction's address (0: none), taken and given back with one atomic exchange each:
    /// a caller reading alone never takes the lock. The others wait in ``idle``.
    private let ready = Atomic<UInt>(0)
    /// Idle transactions as addresses, since `OpaquePointer` is not `Sendable`.
    private let idle: RankedMutex<[UInt]>
    private let capacity: Int

    /// A pool keeping at most `capacity` idle transactions besides the ready one; more concurrent readers
    /// begin and abort their own. Its lock stands at `rank` (SovariaPlumbing/LockOrder.swift).
    init(capacity: Int, rank: LockRank) {
        self.capacity = max(1, capacity)
        idle = RankedMutex(rank, [])
    }

    /// A read transaction on the newest snapshot of `env`, or `nil` when another process grew the map
    /// (`MDB_MAP_RESIZED`) and this one must adopt its size first. Give it back with ``give(_:)``.
    func take(_ env: OpaquePointer) throws -> OpaquePointer? {
        let ready = ready.exchange(0, ordering: .acquiring)
        let address = ready != 0 ? ready : idle.withLock { $0.popLast() } ?? 0
        if let txn = OpaquePointer(bitPattern: address) {
            let rc = mdb_txn_renew(txn)
            if rc == MDB_SUCCESS { return txn }
            mdb_txn_abort(txn)
            if rc == MDB_MAP_RESIZED { return nil }
            throw OfflineStoreError.lmdb(rc, "Starting an LMDB read failed")
        }
        var begun: OpaquePointer?
        let rc = mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &begun)
        if rc == MDB_MAP_RESIZED { return nil }
        try checkLMDB(rc, "Starting an LMDB read failed")
        guard let txn = begun else { throw OfflineStoreError.lmdb(ENOMEM, "Starting an LMDB read failed") }
        return txn
    }

    /// Resets `txn` and keeps it for the next read, or aborts it when enough are idle.
    func give(_ txn: OpaquePointer) {
        mdb_txn_reset(txn)
        let address = UInt(bitPattern: txn)
        if ready.compareExchange(expected: 0, desired: address, ordering: .releasing).exchanged { return }
        let kept = idle.withLock { idle in
            guard idle.count < capacity else { return false }
            idle.append(address)
            return true
        }
        if !kept { mdb_txn_abort(txn) }
    }

    /// Aborts every idle transaction, freeing its reader slot: call with no transaction of the environment
    /// active (before `mdb_env_set_mapsize` or `mdb_env_close`).
    func abortIdle() {
        var all = idle.withLock { idle in
            let all = idle
            idle.removeAll()
            return all
        }
        let ready = ready.exchange(0, ordering: .acquiring)
        if ready != 0 { all.append(ready) }
        for txn in all.compactMap(OpaquePointer.init(bitPattern:)) { mdb_txn_abort(txn) }
    }
}
