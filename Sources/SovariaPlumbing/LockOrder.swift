/// The package's lock order: every ranked lock, in one numbering, the one place it is written.
///
/// A thread that holds a ranked lock may take only a lock of a higher rank (``RankedMutex``
/// checks it in debug builds, across types: a lock of one type taken inside a lock of another is
/// checked too). Ranks follow the layers: a caller's lock ranks below the locks of what it calls,
/// so a layer may read a lower layer while it holds its own state, never the other way round.
/// Each hundred is one type. Locks that nest with nothing (leaf `Mutex`es
/// such as `QueryCache.flights`, `WriteQueue.knownPending`, `GroupCommit`'s line) are not ranked.
///
/// | rank | lock | guards | may be taken while holding |
/// |---|---|---|---|
/// | 0 | `MemoryCache` | a memory cache no type owns (tests, the bench) | nothing ranked |
/// | 100 | `SovariaOffline.state` | the controller's fields | nothing ranked |
/// | 110 | `WriteQueue.state` | the queue's index of key names | `SovariaOffline.state` (to read counts) |
/// | 120 | `SovariaOffline.sessions` | the overlay sessions' memory cache | nothing ranked |
/// | 200 | `QueryCache.state` | the index, passes, records, background tasks | nothing ranked |
/// | 210 | `QueryCache.memory` | the memory layer | `QueryCache.state` |
/// | 300 | `FileCache.flights` | the downloads and their waiters | nothing ranked |
/// | 310 | `FileCache.state` | the file index, counters, pending use records | `FileCache.flights` |
/// | 400 | `LMDBEnvironment.writer` | the `Writer` proof, for a whole write transaction | nothing ranked |
/// | 410 | `LMDBEnvironment.handles` | the C handles (a readers-writer lock, either side) | `writer` |
/// | 420 | `LMDBEnvironment.readTransactions` | the idle read transactions | `writer`, `handles` |
extension LockRank {
    /// A ``RankedMutex`` no type owns: taken alone.
    package static let standaloneMemoryCache = LockRank(0, "MemoryCache")

    /// `SovariaOffline`'s fields that change after init: taken first.
    package static let offlineState = LockRank(100, "SovariaOffline.state")
    /// The write queue's index: inside ``offlineState`` (to read its counts) or alone.
    package static let writeQueueState = LockRank(110, "WriteQueue.state")
    /// The overlay sessions' memory cache: taken alone.
    package static let overlaySessions = LockRank(120, "SovariaOffline.sessions")

    /// The query cache's index and the state that changes with it: taken first.
    package static let queryCacheState = LockRank(200, "QueryCache.state")
    /// The query cache's memory layer: inside ``queryCacheState`` or alone.
    package static let queryCacheMemory = LockRank(210, "QueryCache.memory")

    /// The file cache's downloads: taken first (a caller joining one looks for the file inside it).
    package static let fileCacheFlights = LockRank(300, "FileCache.flights")
    /// The file cache's index: inside ``fileCacheFlights`` or alone.
    package static let fileCacheState = LockRank(310, "FileCache.state")

    /// The LMDB environment's writer, held for a whole write transaction: taken first.
    package static let lmdbWriter = LockRank(400, "LMDBEnvironment.writer")
    /// The LMDB environment's handles: inside ``lmdbWriter`` or alone.
    package static let lmdbHandles = LockRank(410, "LMDBEnvironment.handles")
    /// The LMDB environment's pool of read transactions: inside ``lmdbHandles`` or alone.
    package static let lmdbReadTransactions = LockRank(420, "LMDBEnvironment.readTransactions")

    /// Every rank above, in the order a thread may take them.
    package static let order: [LockRank] = [
        standaloneMemoryCache,
        offlineState, writeQueueState, overlaySessions,
        queryCacheState, queryCacheMemory,
        fileCacheFlights, fileCacheState,
        lmdbWriter, lmdbHandles, lmdbReadTransactions,
    ]
}
