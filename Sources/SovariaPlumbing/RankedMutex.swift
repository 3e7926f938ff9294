import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `Mutex` with a place in its type's lock order: a thread that holds a ranked lock may take
/// only locks of a higher rank. Debug builds check the order on every acquisition and stop at
/// the first inversion, naming both locks; release builds compile to the plain `Mutex`.
///
/// A type that keeps two locks declares their ranks once, next to the locks:
///
///     let index = RankedMutex(LockRank(1, "QueryCache.index"), CacheIndex())
///     let memory = RankedMutex(LockRank(2, "QueryCache.memory"), …)  // taken inside index only
public struct RankedMutex<Value: ~Copyable>: ~Copyable, Sendable {
    @usableFromInline let mutex: Mutex<Value>
    /// Where this lock stands in its type's order.
    @usableFromInline package let rank: LockRank

    /// Creates a lock at `rank` guarding `value`.
    package init(_ rank: LockRank, _ value: consuming sending Value) {
        self.rank = rank
        mutex = Mutex(value)
    }

    /// Runs `body` with the guarded value, holding the lock.
    ///
    /// - Precondition (debug builds): the thread holds no lock of this rank or a higher one.
    @inlinable @inline(__always) package borrowing func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        #if DEBUG
            LockRank.willAcquire(rank)
            defer { LockRank.didRelease(rank) }
        #endif
        return try mutex.withLock(body)
    }

    /// Runs `body` with the guarded value if the lock is free, else returns `nil` without waiting.
    ///
    /// - Precondition (debug builds): the thread holds no lock of this rank or a higher one.
    @inlinable @inline(__always) package borrowing func withLockIfAvailable<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result? {
        #if DEBUG
            LockRank.willAcquire(rank)
            defer { LockRank.didRelease(rank) }
        #endif
        return try mutex.withLockIfAvailable(body)
    }
}

/// A lock's place in the order its type takes its locks in; see ``RankedMutex``.
public struct LockRank: Sendable, CustomStringConvertible {
    /// Higher ranks are taken later: inside lower ones, never around them.
    package let level: Int
    /// The lock's name in a failed check.
    package let name: String

    /// A rank at `level`, named `name` when a check fails.
    package init(_ level: Int, _ name: String) {
        self.level = level
        self.name = name
    }

    /// The lock's name and level.
    public var description: String { "\(name) (rank \(level))" }

    #if DEBUG
        /// Checks `rank` against the ranks this thread holds, then records it as held: for a lock
        /// kept in a type of its own (``ReadersWriterLock``) that takes part in a ranked order.
        @usableFromInline package static func willAcquire(_ rank: LockRank) {
            let held = HeldRanks.ofThisThread
            if let last = held.ranks.last, last.level >= rank.level {
                preconditionFailure("Lock order: \(rank) taken while holding \(last)")
            }
            held.ranks.append(rank)
        }

        /// Forgets `rank`, the most recent lock this thread took.
        @usableFromInline package static func didRelease(_ rank: LockRank) {
            let held = HeldRanks.ofThisThread
            if !held.ranks.isEmpty { held.ranks.removeLast() }
        }
    #endif
}

#if DEBUG
    /// The ranks of the locks one thread holds, in the order it took them: kept in a pthread key,
    /// so the check costs a pointer load per acquisition, not a dictionary lookup that boxes the
    /// array: debug builds run the whole test suite through these locks.
    private final class HeldRanks {
        var ranks: [LockRank] = []

        private static let key: pthread_key_t = {
            var key = pthread_key_t()
            let status = pthread_key_create(&key) { pointer in
                #if canImport(Glibc)
                    guard let pointer else { return }
                #endif
                Unmanaged<HeldRanks>.fromOpaque(pointer).release()
            }
            precondition(status == 0, "pthread_key_create failed: \(status)")
            return key
        }()

        static var ofThisThread: HeldRanks {
            if let pointer = pthread_getspecific(key) {
                return Unmanaged<HeldRanks>.fromOpaque(pointer).takeUnretainedValue()
            }
            let held = HeldRanks()
            pthread_setspecific(key, Unmanaged.passRetained(held).toOpaque())
            return held
        }
    }
#endif
