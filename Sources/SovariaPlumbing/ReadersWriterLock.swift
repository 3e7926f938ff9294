#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A readers-writer lock: many holders of the shared side at once, or one holder of the exclusive side.
///
/// Writers are preferred: once a thread waits for the exclusive side, new shared holders wait behind it,
/// so a writer (an LMDB map resize, a file-store batch) is never starved by a steady stream of reads. The lock is not recursive: a thread
/// must never take either side while it holds one.
///
/// Given a ``LockRank``, the lock takes its place in its type's lock order like a ``RankedMutex``:
/// debug builds check both sides against the ranks the thread holds (a thread holding either side
/// may take only higher ranks, so taking a side twice stops too).
public final class ReadersWriterLock: @unchecked Sendable {  // @unchecked: the pthread lock is the synchronization
    @usableFromInline let lock: UnsafeMutablePointer<pthread_rwlock_t>
    /// Where this lock stands in its type's order; `nil`: not checked.
    @usableFromInline let rank: LockRank?

    /// Creates an unlocked lock, at `rank` in its type's lock order when given.
    package init(rank: LockRank? = nil) {
        self.rank = rank
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        #if canImport(Glibc)
            // glibc prefers readers unless told otherwise; Darwin's lock already prefers writers.
            pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
        pthread_rwlock_init(lock, &attributes)
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    /// Runs `body` holding the shared side.
    @inlinable @inline(__always)
    package func withSharedLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result
    {
        #if DEBUG
            if let rank { LockRank.willAcquire(rank) }
            defer { if let rank { LockRank.didRelease(rank) } }
        #endif
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` holding the exclusive side.
    @inlinable @inline(__always)
    package func withExclusiveLock<Result, Failure: Error>(
        _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result {
        #if DEBUG
            if let rank { LockRank.willAcquire(rank) }
            defer { if let rank { LockRank.didRelease(rank) } }
        #endif
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` holding the shared side if it can be taken at once, else returns `nil` without
    /// waiting: for callers that must not park their thread (Swift's cooperative pool) behind a
    /// writer and have a slower way that may wait.
    @inlinable @inline(__always)
    package func withSharedLockIfAvailable<Result, Failure: Error>(
        _ body: () throws(Failure) -> Result
    ) throws(Failure) -> Result? {
        #if DEBUG
            if let rank { LockRank.willAcquire(rank) }
            defer { if let rank { LockRank.didRelease(rank) } }
        #endif
        guard pthread_rwlock_tryrdlock(lock) == 0 else { return nil }
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Takes the shared side; the caller releases it with ``unlockShared()`` on the same thread.
    /// For a hot path that must not be generic: ``withSharedLock(_:)`` is, and a caller it is not
    /// specialized for pays a metadata lookup per call.
    @inlinable @inline(__always)
    package func lockShared() {
        #if DEBUG
            if let rank { LockRank.willAcquire(rank) }
        #endif
        pthread_rwlock_rdlock(lock)
    }

    /// Releases the shared side ``lockShared()`` took.
    @inlinable @inline(__always)
    package func unlockShared() {
        pthread_rwlock_unlock(lock)
        #if DEBUG
            if let rank { LockRank.didRelease(rank) }
        #endif
    }
}
