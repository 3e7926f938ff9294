import CLMDB
import Sovaria
import SovariaPlumbing

/// The C handles of an open environment and the readers-writer lock that guards them, as one
/// object: the handles are reachable only holding a side of the lock.
///
/// Every transaction holds the shared side; resizing the map, reopening and swapping in a
/// compacted file hold the exclusive side, so `mdb_env_set_mapsize` and `mdb_env_close` only ever
/// run with no transaction of this process active, as LMDB requires.
// @unchecked: `handles` is read only holding `lock`'s shared side, changed only holding its exclusive side.
final class LockedHandles: @unchecked Sendable {
    /// The C handles of an open environment.
    struct Handles {
        let env: OpaquePointer
        let dbi: MDB_dbi
    }

    private let lock: ReadersWriterLock
    /// `nil` after a swap or a failed remap closed the environment (the next call reopens it).
    private var handles: Handles?

    /// `handles` guarded by a lock at `rank` (SovariaPlumbing/LockOrder.swift).
    init(_ handles: Handles?, rank: LockRank) {
        self.handles = handles
        lock = ReadersWriterLock(rank: rank)
    }

    /// Runs `body` with the handles (`nil`: closed), holding the shared side.
    func withShared<Result, Failure: Error>(_ body: (Handles?) throws(Failure) -> Result) throws(Failure) -> Result {
        try lock.withSharedLock { () throws(Failure) in try body(handles) }
    }

    /// Takes the shared side and returns the handles (`nil`: closed); the caller releases the side
    /// with ``unlockShared()`` on the same thread. Not generic, for the read of one value.
    func lockShared() -> Handles? {
        lock.lockShared()
        return handles
    }

    /// Releases the shared side ``lockShared()`` took.
    func unlockShared() {
        lock.unlockShared()
    }

    /// Runs `body` with the handles, which it may replace, holding the exclusive side: no
    /// transaction of this process is active meanwhile.
    func withExclusive<Result, Failure: Error>(
        _ body: (inout Handles?) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try lock.withExclusiveLock { () throws(Failure) in try body(&handles) }
    }
}
