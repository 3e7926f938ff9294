import Foundation
import Sovaria
import SovariaPlumbing
import Synchronization

/// Downloaded files on disk, bounded by size, with their metadata (size, last use,
/// state) kept in any `OfflineStore` under `sov:file:`: written once against the protocol, so
/// it runs unchanged on every engine.
///
/// The rules, fixed rather than options:
/// 1. When a download leaves the total over the bound, a pass deletes the least recently used
///    files until the total is at most 90% of it. Every such download starts the check; the
///    pass runs behind the download's answer, one at a time (``waitForPendingWork()``). The
///    caches of a device's accounts share one bound and one pass
///    (``init(directory:metadata:account:configuration:)``).
/// 2. Files with an open ``FileLease`` and files used in the last 30 seconds are kept. If that
///    leaves the total over the bound, ``FileCacheStatistics/isOverBound`` says so and the next
///    download tries again.
/// 3. A use (``open(_:)``, a lease's end, a download) is recorded in the metadata key, so it
///    survives a restart, at most once per file per second: ``open(_:)`` writes before it
///    returns when the recorded use is a second old or more, and a lease's end starts a write in
///    the background when it is. A crash loses at most the last second of a file's recency
///    (plus a lease's end whose background write had not finished); never a file or its size.
///    ``recordPendingUses()`` writes the rest, for a planned shutdown.
/// 4. ``FileCacheSize/unlimited`` turns eviction off; other negative bounds count as zero.
/// 5. Downloads are atomic: written to `tmp/`, fsynced, renamed into `files/`, the folder
///    fsynced, and only then recorded in the store and the index. The file a download replaces
///    keeps a second name in `tmp/` until then: a download whose metadata cannot be written
///    throws, and the key keeps its old file (or nothing). Temporary files a crash left are
///    counted in the total until they are more than a day old, then deleted (at open and by
///    passes).
/// 6. Opening reconciles the folder and the store: a file without metadata is adopted (size
///    from the file, last use now), metadata without a file is dropped. A store that lost the
///    metadata, or a new one given in place of a damaged one, is rebuilt from the folder; the
///    cache never deletes its files because its index broke. A file deleted behind the open cache
///    (the system purging a Caches folder, a user cleaning one) is noticed by the next open of
///    its key: its entry, its bytes in the total and its metadata key go, the open is a miss,
///    and ``open(_:orDownload:)`` downloads it again.
/// 7. Opening lists key names and file names only (no value, no file read); a pass costs
///    O(evicted × log n) with an in-memory heap, never a walk of the folder.
///
/// ```swift
/// let photos = try await FileCache(
///     directory: caches.appendingPathComponent("photos"),
///     metadata: try SQLiteOfflineStore(fileURL: support.appendingPathComponent("offline.sqlite")))
/// try await photos.download(photoURL.absoluteString) { destination in
///     let (location, _) = try await URLSession.shared.download(from: photoURL)
///     try FileManager.default.moveItem(at: location, to: destination)
/// }
/// if let lease = try await photos.open(photoURL.absoluteString) { show(lease.url) }
/// ```
///
/// - Important: Safe from any number of tasks. A folder is open in one `FileCache` at a time
///   (a lock file; a second open throws `.locked`), and the cache owns `files/` and `tmp/` in
///   it: files put there by hand are adopted or removed at the next open. Blocking file work
///   (fsync, rename, unlink, listing) runs on a Dispatch queue of its own, never on Swift's
///   cooperative threads; changes to the metadata go through one async gate, so the in-memory
///   index always matches the store. The folder is released when the last reference to the
///   cache, its last lease and its background work (``waitForPendingWork()``) are gone.
public final class FileCache: Sendable {
    /// The folder the files are in.
    public let directory: URL
    /// The store the metadata is kept in, under `sov:file:`.
    public let metadata: any OfflineStore
    /// The options the cache was opened with.
    public let configuration: Configuration
    /// The bound: ``Configuration/size``.
    public var size: FileCacheSize { configuration.size }

    // The eviction rules (see the type's documentation): constants, not options.
    /// Files used this recently are never evicted: 30 seconds.
    public static let recentUseProtection: Duration = .seconds(30)
    /// ``open(_:)`` records a use in the store at most this often per file: 1 second.
    public static let useRecordInterval: Duration = .seconds(1)
    /// Temporary files a crash left are deleted once older than this: one day.
    public static let temporaryFileMaxAge: Duration = .seconds(86_400)
    static let recentUseProtectionMillis: Int64 = 30_000
    static let useRecordIntervalMillis: Int64 = 1_000
    static let temporaryFileMaxAgeMillis: Int64 = 86_400_000
    /// Files deleted per gate hold and store batch during a pass: a download waits for at most
    /// one batch.
    static let evictionBatchFiles = 16

    let folder: CacheFolder
    let work: BlockingWorkQueue
    let clock: @Sendable () -> Date

    // Lock order: SovariaPlumbing/LockOrder.swift (`flights`, then `state`: a caller joining a
    // download looks for the cached file inside the flights' lock). `passBehind` is a leaf lock;
    // a gate is held across suspensions, a lock only in one synchronous section.

    /// The downloads ``open(_:orDownload:)`` runs, one per key, and their waiters.
    let flights = DownloadFlights(rank: .fileCacheFlights)
    /// The index of the files and everything that changes with it.
    let state: RankedMutex<State>
    /// Every change to the metadata, and the index changes that go with it, pass through here;
    /// helpers that must run inside take its ``GateToken``.
    let gate = AsyncGate<FileCache>()
    /// One pass at a time.
    let passGate = AsyncGate<EvictionPasses>()
    /// Whether a pass runs behind a download, and whether another check was asked for meanwhile.
    let passBehind = RunAgainLatch()
    /// An account's cache: its place among the account caches of the device, which share one
    /// bound (FileCache+SharedBound.swift). `nil` for a cache opened without an account.
    let sharedBound: AccountCacheGroup.Membership?

    /// What the cache keeps in memory, under one lock.
    struct State {
        /// The files, their leases and uses, and the total.
        var index: FileIndex
        /// The counts since open.
        var counters = FileCacheStatistics()
        /// Uses newer than their record (leases that ended), by id, with the key.
        var pendingUses: [FileID: String] = [:]
        /// Whether a write of ``pendingUses`` runs in the background.
        var recordingUses = false
        /// Work running behind answers already given (passes, use records), by number.
        var background: [UInt64: Task<Void, Never>] = [:]
        var nextBackgroundNumber: UInt64 = 0
    }

    /// Opens the cache in `directory` with its metadata in `metadata`, reconciling the two
    /// (rule 6). Creates the folder (0700) if needed.
    ///
    /// - Throws: `.locked` when another `FileCache` has the folder open; the store's errors.
    ///   A store that cannot list its keys is the caller's to replace: open the cache on a new,
    ///   empty store and it adopts every file in the folder.
    /// - Complexity: O(n) for n files: one listing of the metadata keys (names only), one of
    ///   `files/` and `tmp/`, a `stat` per file without metadata or temporary file.
    public convenience init(
        directory: URL, metadata: any OfflineStore, configuration: Configuration = Configuration()
    ) async throws {
        try await self.init(directory: directory, metadata: metadata, configuration: configuration, sharing: nil)
    }

    /// Opens the cache; `sharing` names the account, the parent folder and the device's store of
    /// an account's cache, which shares its bound with the other accounts' (``sharedBound``).
    init(
        directory: URL, metadata: any OfflineStore, configuration: Configuration,
        sharing: (account: AccountID, parent: URL, store: any OfflineStore)?
    ) async throws {
        self.directory = directory
        self.metadata = metadata
        self.configuration = configuration
        clock = configuration.clock
        let work = BlockingWorkQueue(label: "sovaria.file-cache")
        self.work = work
        let folder = try await CacheFolder.acquire(directory, on: work)
        self.folder = folder
        let index = try await Self.reconcile(
            folder: folder, metadata: metadata, work: work, now: FileKeys.millis(clock()))
        state = RankedMutex(LockRank.fileCacheState, State(index: index))
        // Joined after the folder's lock is held and the folder reconciled: until then a pass of
        // another account finds the folder locked and leaves it alone.
        sharedBound = sharing.map { AccountCacheGroup.join($0.account, parent: $0.parent, store: $0.store) }
        sharedBound?.attach(self)
    }

    /// Opens the cache with the given bound and clock: the short form of
    /// ``init(directory:metadata:configuration:)``.
    public convenience init(
        directory: URL, metadata: any OfflineStore, size: FileCacheSize,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws {
        try await self.init(
            directory: directory, metadata: metadata, configuration: Configuration(size: size, clock: clock))
    }

    /// The bytes the cache holds on disk: its files, and the temporary files a crash left
    /// until they are deleted. Downloads still running are not counted.
    public var totalBytes: Int { state.withLock { $0.index.totalBytes } }

    /// How many files are cached.
    public var fileCount: Int { state.withLock { $0.index.entries.count } }

    /// The counts since open and the state now.
    public var statistics: FileCacheStatistics {
        let bound = size.effectiveBytes
        // An account's cache is over its bound when the accounts together are.
        let boundTotal = sharedBound?.group.lastCountedTotalBytes
        return state.withLock { state in
            var statistics = state.counters
            statistics.totalBytes = state.index.totalBytes
            statistics.fileCount = state.index.entries.count
            statistics.leftoverTemporaryBytes = state.index.leftoverBytes
            statistics.isOverBound = bound.map { (boundTotal ?? state.index.totalBytes) > $0 } ?? false
            return statistics
        }
    }

    /// Whether a file is cached under `key`; not a use. Reads the index only: a file deleted
    /// behind the cache counts until an open of its key notices (rule 6).
    public func contains(_ key: String) -> Bool {
        let id = FileKeys.id(of: key)
        return state.withLock { $0.index.entries[id] != nil }
    }

    /// Deletes the file cached under `key` and its metadata; returns whether there was one.
    ///
    /// A lease on it keeps reading through its ``FileLease/fileHandle``.
    @discardableResult
    public func remove(_ key: String) async throws -> Bool {
        let id = FileKeys.id(of: key)
        return try await gate.withGate { gated in try await removeFile(gated, id) }
    }

    private func removeFile(_ gated: borrowing GateToken<FileCache>, _ id: FileID) async throws -> Bool {
        guard let entry = state.withLock({ $0.index.entries[id] }) else { return false }
        // File first: metadata without a file is dropped at open; a file without metadata
        // would be adopted, bringing the removed file back.
        try await work.runConcurrently { [folder] in try folder.remove(folder.filePath(id)) }
        state.withLock { _ = $0.index.remove(id) }
        try await metadata.delete(
            FileKeys.metadataKey(id: id, sizeBytes: entry.sizeBytes, lastUseMillis: entry.storedUseMillis))
        return true
    }

    /// Deletes every cached file, the temporary files a crash left, and all metadata under
    /// `sov:file:`. Downloads running now still complete. Leases keep reading through their
    /// handles.
    public func removeAll() async throws {
        try await gate.withGate { _ in
            let (ids, leftovers) = state.withLock { (Array($0.index.entries.keys), Array($0.index.leftovers.keys)) }
            try await work.runConcurrently { [folder] in
                for id in ids { try folder.remove(folder.filePath(id)) }
                for name in leftovers { try folder.remove(folder.temporaryPath + "/" + name) }
            }
            state.withLock { $0.index.removeAllFiles() }
            let keys = try await metadata.keys(FileKeys.prefix)
            for start in stride(from: 0, to: keys.count, by: 1_000) {
                try await metadata.write(keys[start..<min(keys.count, start + 1_000)].map { .delete(key: $0) })
            }
        }
    }

    /// Waits for the work calls started behind their answers: eviction passes that downloads
    /// called for, and the use records that ended leases started.
    public func waitForPendingWork() async {
        while true {
            let running = state.withLock { Array($0.background.values) }
            if running.isEmpty { return }
            for task in running { await task.value }
        }
    }

    /// Runs `work` in a task of its own, which ``waitForPendingWork()`` waits for.
    func runInBackground(_ work: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            state.nextBackgroundNumber += 1
            let number = state.nextBackgroundNumber
            state.background[number] = Task {
                await work()
                _ = self.state.withLock { $0.background.removeValue(forKey: number) }
            }
        }
    }

    var now: Int64 { FileKeys.millis(clock()) }
}

/// Names the file cache's pass gate: one eviction pass at a time.
enum EvictionPasses {}
