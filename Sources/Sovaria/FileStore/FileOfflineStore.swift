import Foundation
import Synchronization

/// Keeps entries in files, one small file per key, so cached reads and queued writes survive a
/// relaunch. The default store.
///
/// Every write goes to a temporary file that is renamed over the key's file, so a crash never
/// leaves a half-written entry; with ``Durability/synced`` the file and its folder are fsynced
/// first. A batch of several writes is journaled (written whole, then applied), so it is applied
/// all or nothing across a crash, and readers never see part of it: batches are atomic.
///
/// File names are the key's UTF-8 bytes in lowercase hex, cut into sub-folders for keys over 120
/// bytes, so every legal key up to 511 bytes has a safe name and ``keys(_:)`` lists in byte
/// order. Each file starts with a checksum of the entry bound to its key (`"SVE1"`, XXH64, the value),
/// so a damaged or misplaced file reads as ``OfflineStoreError/Code/corrupt``, never as a wrong
/// value. The folder is created with mode 0700 (an existing folder loses group and other access,
/// and keeps its owner's mode) and files with 0600; temporary files a crash left behind are
/// removed when the store opens.
///
/// If the folder can't be created or read, the store keeps working in memory for this run:
/// ``isPersistent`` turns `false` and ``fallbackReason`` says why, rather than failing the
/// app's requests. A folder that holds data is never replaced by an empty memory store: one that
/// can be read but not written opens read-only (``readOnlyReason`` says why; writes throw it), and
/// one on a full disk opens as usual (writes throw ``OfflineStoreError/Code/full`` until space is
/// freed, and a batch that failed for lack of space leaves nothing behind).
///
/// - Important: Safe from any number of tasks. File I/O runs on a private Dispatch queue, never
///   on Swift's cooperative threads; reads run in parallel, writes one at a time. Every store on
///   one folder in a process shares one handle, so batches are atomic to each other's readers.
///   Processes share a folder through its `.lock` file: writes of two processes never interleave,
///   each batch stays all or nothing, and a reader in any process sees a batch whole (a `get` that
///   finds another process's batch half applied waits for it to end).
///
/// ```swift
/// let store = FileOfflineStore()                   // FileOfflineStore.defaultDirectory()
/// try await store.set("app:notes:0001", "{}")
/// if !store.isPersistent { print(store.fallbackReason!) }
/// ```
public final class FileOfflineStore: OfflineStore {
    /// Where every default store keeps its files; set it before creating the store to choose
    /// the folder.
    public static var directoryOverride: URL? {
        get { overrideStorage.withLock { $0 } }
        set { overrideStorage.withLock { $0 = newValue } }
    }
    private static let overrideStorage = Mutex<URL?>(nil)

    /// The folder holding the files.
    public let directory: URL
    /// How far a write has gone when its call returns.
    public let durability: Durability
    /// Why the store fell back to memory (what it found: the folder could not be created or
    /// read), or `nil` when it keeps its files in ``directory``.
    public let fallbackReason: OfflineStoreError?
    /// Why the store refuses writes to a folder it can read, or `nil` when it can write.
    public var readOnlyReason: OfflineStoreError? { sharedHandle?.readOnlyReason }

    private enum Backend: Sendable {
        case files(FileStoreHandle)
        case memory(MemoryOfflineStore)
    }
    private let backend: Backend

    /// Opens the store in `directory`, or ``defaultDirectory()`` when it is `nil`.
    ///
    /// Never throws: a folder that can't be created or read makes a memory-only store (see
    /// ``fallbackReason``); one that can't be written opens read-only (see ``readOnlyReason``).
    public init(directory: URL? = nil, durability: Durability = .synced) {
        let directory = directory ?? Self.defaultDirectory()
        self.directory = directory
        self.durability = durability
        do {
            backend = .files(try FileStoreHandle.shared(path: directory.path, sync: durability == .synced))
            fallbackReason = nil
            Self.excludeFromBackup(directory)
        } catch {
            backend = .memory(MemoryOfflineStore())
            var reason = error
            reason.message = "FileOfflineStore keeps its entries in memory for this run only: " + reason.message
            fallbackReason = reason
        }
    }

    /// ``directoryOverride`` if set, else the `SOVARIA_OFFLINE_DIR` environment variable (used
    /// as the folder itself), else Application Support on Apple platforms or `$XDG_DATA_HOME`
    /// (default `~/.local/share`) on Linux, plus `sovaria/offline`.
    public static func defaultDirectory() -> URL {
        if let directoryOverride { return directoryOverride }
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["SOVARIA_OFFLINE_DIR"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        #if canImport(Darwin)
            let base = URL.applicationSupportDirectory
        #else
            let base =
                environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
                ?? URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true).appendingPathComponent(".local/share")
        #endif
        return base.appendingPathComponent("sovaria/offline", isDirectory: true)
    }

    /// Atomic batches and byte values; persistent unless the store fell back to memory (then
    /// ``fallbackReason`` says why, and ``OfflineStore/isPersistent`` is `false`).
    public var capabilities: StoreCapabilities {
        switch backend {
        case .files: [.atomicBatch, .persistent, .byteValues]
        case .memory: [.atomicBatch, .byteValues]
        }
    }

    /// The value stored under `key`, or `nil`.
    public func get(_ key: String) async throws -> String? {
        try StoreKey.validate(key)
        switch backend {
        case .memory(let store): return try await store.get(key)
        case .files(let handle):
            return try await read(key, in: handle) { (tree) throws(OfflineStoreError) in try tree.read(key) }
        }
    }

    /// The bytes stored under `key`, or `nil`.
    public func data(_ key: String) async throws -> Data? {
        try StoreKey.validate(key)
        switch backend {
        case .memory(let store): return try await store.data(key)
        case .files(let handle):
            return try await read(key, in: handle) { (tree) throws(OfflineStoreError) in try tree.readData(key) }
        }
    }

    private func read<Value: Sendable>(
        _ key: String, in handle: FileStoreHandle,
        _ read: @escaping @Sendable (FileTree) throws(OfflineStoreError) -> Value?
    ) async throws -> Value? {
        // One small file read (about 5 µs) costs less than the hop to the queue and back (about
        // 20 µs): read here unless a write of this process holds the folder, or another
        // process's batch is half applied (its journal is there), then wait for it on the queue.
        // The journal is checked before the read: a read that saw a batch's new value came after
        // its first rename, so every later read starts while the journal is there or after it.
        if !handle.tree.hasJournal,
            let inline = try handle.readers.withSharedLockIfAvailable({ () throws(OfflineStoreError) in
                try read(handle.tree)
            })
        {
            return inline
        }
        return try await handle.queue.runConcurrently { try handle.readingOneKey(read) }
    }

    /// Stores `value` under `key` atomically (temp file + rename).
    public func set(_ key: String, _ value: String) async throws {
        try await write([.set(key: key, value: value)])
    }

    /// Stores the bytes `data` under `key` atomically (temp file + rename).
    public func set(_ key: String, data: Data) async throws {
        try await write([.setData(key: key, data: data)])
    }

    /// Removes `key`'s file.
    public func delete(_ key: String) async throws {
        try await write([.delete(key: key)])
    }

    /// Applies every write or, across a crash or an invalid key, none.
    public func write(_ batch: [StoreWrite]) async throws {
        try StoreKey.validate(batch)
        guard !batch.isEmpty else { return }
        switch backend {
        case .memory(let store):
            try await store.write(batch)
        case .files(let handle) where durability == .synced:
            // Group commit: batches of other callers that arrive meanwhile share the folder syncs.
            try await handle.commits.write(FileStoreHandle.GroupItem(handle: handle, batch: batch), size: batch.count)
        case .files(let handle):
            try await handle.queue.runAlone { try handle.apply(batch, sync: false) }
        }
    }

    /// The keys that start with `prefix`, in byte order.
    ///
    /// - Complexity: The first call after a write lists every file and sorts the names,
    ///   O(n log n); later calls search that list, O(log n + m).
    public func keys(_ prefix: String) async throws -> [String] {
        switch backend {
        case .memory(let store): return try await store.keys(prefix)
        case .files(let handle):
            // The cached list (current until any process writes) is searched here; a new listing
            // reads the whole folder, on the queue.
            if let keys = handle.cachedKeysInOrder() {
                return StoreKey.range(of: prefix, after: nil, in: keys).map(\.string)
            }
            return try await handle.queue.runConcurrently {
                try handle.readingSeveralKeys { () throws(OfflineStoreError) in
                    StoreKey.range(of: prefix, after: nil, in: try handle.keysInOrder()).map(\.string)
                }
            }
        }
    }

    /// A page of entries in byte order: the keys from the sorted list, then their files.
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        guard limit > 0 else { return [] }
        switch backend {
        case .memory(let store): return try await store.entries(prefix, after: after, limit: limit)
        case .files(let handle):
            return try await page(prefix, after: after, limit: limit, in: handle) {
                (tree, key) throws(OfflineStoreError) in
                try tree.read(key).map { StoreEntry(key: key, value: $0) }
            }
        }
    }

    /// A page of entries in byte order with their values as bytes.
    public func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        guard limit > 0 else { return [] }
        switch backend {
        case .memory(let store): return try await store.dataEntries(prefix, after: after, limit: limit)
        case .files(let handle):
            return try await page(prefix, after: after, limit: limit, in: handle) {
                (tree, key) throws(OfflineStoreError) in
                try tree.readData(key).map { StoreDataEntry(key: key, data: $0) }
            }
        }
    }

    /// Hands `body` each entry of the page: the page's files are read on the store's queue into one
    /// buffer (one allocation for the page's values, not one `Data` each), then handed over on the
    /// caller's executor.
    public func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        guard limit > 0 else { return .empty }
        switch backend {
        case .memory(let store): return try await store.withEntries(prefix, after: after, limit: limit, body)
        case .files(let handle):
            let page = try await handle.queue.runConcurrently { () throws(OfflineStoreError) -> ReadPage in
                try handle.readingSeveralKeys { () throws(OfflineStoreError) in
                    var page = ReadPage()
                    for key in StoreKey.range(of: prefix, after: after, in: try handle.keysInOrder()).prefix(limit) {
                        let start = page.values.count
                        if try handle.tree.appendValue(key.string, to: &page.values) {
                            page.entries.append((key.string, start..<page.values.count))
                        }
                    }
                    return page
                }
            }
            return try EntryScan.run(limit: limit, body: body) { visit in
                page.values.withUnsafeBytes { values in
                    for (key, range) in page.entries {
                        let goesOn = key.withUTF8Bytes { key in
                            visit(UnsafeRawBufferPointer(key), UnsafeRawBufferPointer(rebasing: values[range]))
                        }
                        guard goesOn else { return }
                    }
                }
            }
        }
    }

    /// Hands `body` each key of the page from the folder's sorted key list: no file is read.
    public func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        guard limit > 0 else { return .empty }
        switch backend {
        case .memory(let store): return try await store.withKeys(prefix, after: after, limit: limit, body)
        case .files(let handle):
            let keys = try await handle.queue.runConcurrently { () throws(OfflineStoreError) -> [StoreKey.Bytes] in
                try handle.readingSeveralKeys { () throws(OfflineStoreError) in
                    Array(StoreKey.range(of: prefix, after: after, in: try handle.keysInOrder()).prefix(limit))
                }
            }
            return try EntryScan.run(limit: limit, keys: body) { visit in
                for key in keys {
                    guard key.withUTF8({ visit(UnsafeRawBufferPointer($0), EntryScan.noValue) }) else { return }
                }
            }
        }
    }

    /// A page's keys and their values' places in one buffer.
    private struct ReadPage: Sendable {
        var entries: [(key: String, range: Range<Int>)] = []
        var values: [UInt8] = []
    }

    private func page<Entry: Sendable>(
        _ prefix: String, after: String?, limit: Int, in handle: FileStoreHandle,
        _ read: @escaping @Sendable (FileTree, String) throws(OfflineStoreError) -> Entry?
    ) async throws -> [Entry] {
        // Under the folder's shared lock: no other process's batch is half applied in a page.
        try await handle.queue.runConcurrently {
            try handle.readingSeveralKeys { () throws(OfflineStoreError) in
                var page: [Entry] = []
                for key in StoreKey.range(of: prefix, after: after, in: try handle.keysInOrder()).prefix(limit) {
                    if let entry = try read(handle.tree, key.string) { page.append(entry) }
                }
                return page
            }
        }
    }

    /// The folder's handle, shared by every store on it in this process (`nil` in memory).
    var sharedHandle: FileStoreHandle? {
        if case .files(let handle) = backend { return handle }
        return nil
    }

    private static func excludeFromBackup(_ directory: URL) {
        #if canImport(Darwin)
            var values = URLResourceValues()
            values.isExcludedFromBackup = true
            var url = directory
            try? url.setResourceValues(values)
        #endif
    }
}
