import Foundation
import Sovaria
import SovariaPlumbing
import Synchronization

/// The account caches of one device: every ``FileCache`` opened with an account on one parent
/// folder and one metadata store object. Their files, and the files the store records for the
/// accounts with no cache open now, share one bound (the design's "one device budget across
/// accounts", as the query cache's `SovariaOffline+CacheBudget.swift` keeps it for answers).
///
/// Alive while one of its caches is: each holds a ``Membership``, whose end (the cache's release)
/// takes the account out. The group keeps the store alive, so no other store can take its
/// identity while the group is in ``registry``.
///
/// The closed accounts' files are counted from their metadata key names (and the names in their
/// `files/` folders) once, and again only after an account's cache opens or closes
/// (``State/generation``): a download within the bound reads the totals in memory.
final class AccountCacheGroup: Sendable {
    /// The folder the account folders are in (``FileCache/accountDirectory(of:in:)``).
    let parent: URL
    /// The store every account's records are in, each under its `AccountScopedStore` prefix.
    let store: any OfflineStore
    /// One pass at a time across the group: a member's pass is the group's pass.
    let passes = AsyncGate<EvictionPasses>()
    private let state = Mutex(State())

    /// What changes together: the members and what was counted of the others.
    private struct State {
        /// The accounts with a cache open, by account.
        var members: [AccountID: Member] = [:]
        var nextMemberNumber: UInt64 = 0
        /// Moved by every join and every leave: a count of the closed accounts made at another
        /// generation may count an account that is open now, or miss one that closed.
        var generation = 0
        /// The closed accounts' files, as last counted.
        var closed: ClosedAccounts?
    }

    /// An open account's cache. `cache` is `nil` between the join and the end of the cache's
    /// initializer, and once the cache is being released: such an account is left alone.
    private struct Member {
        let number: UInt64
        weak var cache: FileCache?
    }

    /// The files of the accounts with no cache open, from their metadata keys.
    struct ClosedAccounts {
        /// ``State/generation`` when they were counted.
        let generation: Int
        /// Each account's files, most recently used first: the oldest is `last`.
        private(set) var files: [AccountID: [ClosedFile]] = [:]
        /// Each account's bytes: the sum of its ``files``.
        private(set) var bytes: [AccountID: Int] = [:]
        private(set) var totalBytes = 0

        init(generation: Int) { self.generation = generation }

        /// Adds an account's files, most recently used first.
        mutating func add(_ found: [ClosedFile], of account: AccountID) {
            let sum = found.reduce(0) { $0 + $1.sizeBytes }
            files[account] = found
            bytes[account] = sum
            totalBytes += sum
        }

        /// Takes deleted files out of the count.
        mutating func remove(_ deleted: [ClosedFile], of account: AccountID) {
            let gone = Set(deleted.map(\.id))
            guard var left = files[account] else { return }
            let before = left.count
            left.removeAll { gone.contains($0.id) }
            guard left.count != before else { return }
            let sum = left.reduce(0) { $0 + $1.sizeBytes }
            totalBytes += sum - (bytes[account] ?? 0)
            files[account] = left.isEmpty ? nil : left
            bytes[account] = left.isEmpty ? nil : sum
        }
    }

    /// One file of a closed account, as its metadata key names it.
    struct ClosedFile {
        let id: FileID
        let sizeBytes: Int
        let lastUseMillis: Int64

        var metadataKey: String { FileKeys.metadataKey(id: id, sizeBytes: sizeBytes, lastUseMillis: lastUseMillis) }
    }

    private init(parent: URL, store: any OfflineStore) {
        self.parent = parent
        self.store = store
    }

    // MARK: - Joining and leaving

    /// A cache's place in its group; the account leaves the group when it is freed (with the
    /// cache).
    final class Membership: Sendable {
        let group: AccountCacheGroup
        let account: AccountID
        fileprivate let number: UInt64

        fileprivate init(group: AccountCacheGroup, account: AccountID, number: UInt64) {
            self.group = group
            self.account = account
            self.number = number
        }

        /// Records the cache that holds this membership, once it is whole.
        func attach(_ cache: FileCache) {
            group.state.withLock { state in
                if state.members[account]?.number == number { state.members[account]?.cache = cache }
            }
        }

        deinit { group.leave(account, number: number) }
    }

    /// The open groups, by store identity and the parent folder's canonical path. Holds them
    /// weakly: the memberships hold them.
    private static let registry = Mutex<[RegistryKey: WeakGroup]>([:])

    private struct RegistryKey: Hashable {
        let store: ObjectIdentifier
        let parentPath: String
    }

    private struct WeakGroup {
        weak var group: AccountCacheGroup?
    }

    /// Adds `account` to the group of `store` and `parent` (made if there is none). The caller
    /// holds the account's folder lock, so one account has one membership per group.
    static func join(_ account: AccountID, parent: URL, store: any OfflineStore) -> Membership {
        // Two spellings of one folder (a trailing slash, a symbolic link) are one group.
        let key = RegistryKey(
            store: ObjectIdentifier(store), parentPath: OpenOncePerPath<CacheFolder>.canonicalPath(parent.path))
        let group = registry.withLock { registry in
            if let group = registry[key]?.group { return group }
            registry = registry.filter { $0.value.group != nil }
            let group = AccountCacheGroup(parent: parent, store: store)
            registry[key] = WeakGroup(group: group)
            return group
        }
        let number = group.state.withLock { state in
            state.nextMemberNumber += 1
            state.members[account] = Member(number: state.nextMemberNumber)
            state.generation += 1
            return state.nextMemberNumber
        }
        return Membership(group: group, account: account, number: number)
    }

    private func leave(_ account: AccountID, number: UInt64) {
        state.withLock { state in
            guard state.members[account]?.number == number else { return }
            state.members[account] = nil
            state.generation += 1
        }
    }

    /// The open caches, by account. Their totals are read after the group's lock is let go.
    func openCaches() -> [(account: AccountID, cache: FileCache)] {
        state.withLock { state in
            state.members.compactMap { account, member in member.cache.map { (account, $0) } }
        }
    }

    // MARK: - The total

    /// Every account's bytes: the open caches' totals now, the closed accounts' as counted; `nil`
    /// when the closed accounts must be counted again (an account opened or closed since).
    /// Memory only: what a download checks.
    var currentTotalBytes: Int? {
        let (closedBytes, caches) = state.withLock { state in
            (
                state.closed.flatMap { $0.generation == state.generation ? $0.totalBytes : nil },
                state.members.values.compactMap(\.cache)
            )
        }
        guard let closedBytes else { return nil }
        return caches.reduce(closedBytes) { $0 + $1.totalBytes }
    }

    /// ``currentTotalBytes``, with the closed accounts as last counted even when that count is
    /// out of date (none yet: none counted).
    var lastCountedTotalBytes: Int {
        let (closedBytes, caches) = state.withLock { state in
            // An account counted closed and open since counts as its cache says.
            let closed = state.closed?.bytes.reduce(0) { $0 + (state.members[$1.key] == nil ? $1.value : 0) } ?? 0
            return (closed, state.members.values.compactMap(\.cache))
        }
        return caches.reduce(closedBytes) { $0 + $1.totalBytes }
    }

    /// The closed accounts' files: the count in memory when it is current, else a new count from
    /// the store's key names and each account's `files/` folder, kept for the next calls.
    ///
    /// Only records whose file is on disk are counted. The others (a file deleted behind the
    /// cache, a pass that deleted a file and failed to delete its record, an account folder that
    /// is gone) name no byte: their keys are deleted here, holding the account's folder lock, as
    /// the account's next open would (left alone when a cache of it holds the lock).
    func closedAccounts(on work: BlockingWorkQueue) async throws -> ClosedAccounts {
        let (generation, open, counted) = state.withLock { ($0.generation, Set($0.members.keys), $0.closed) }
        if let counted, counted.generation == generation { return counted }
        var closed = ClosedAccounts(generation: generation)
        for account in try await AccountScopedStore.accounts(in: store) where !open.contains(account) {
            let view = AccountScopedStore(wrapping: store, account: account)
            var recorded: [FileID: ClosedFile] = [:]
            var stale: [String] = []
            _ = try await view.withKeys(FileKeys.prefix, after: nil, limit: .max) { key in
                guard let parsed = FileKeys.parse(key) else { return true }  // the account's open deletes it
                let file = ClosedFile(id: parsed.id, sizeBytes: parsed.sizeBytes, lastUseMillis: parsed.lastUseMillis)
                // Two keys for one file (a crash of a store without atomic batches): the newer use.
                if let other = recorded[file.id] {
                    let (keep, drop) = other.lastUseMillis >= file.lastUseMillis ? (other, file) : (file, other)
                    recorded[file.id] = keep
                    stale.append(drop.metadataKey)
                } else {
                    recorded[file.id] = file
                }
                return true
            }
            guard !recorded.isEmpty else { continue }
            let root = FileCache.accountDirectory(of: account, in: parent)
            let filesPath = root.path + "/files"
            // The account's folder lock while its folder is listed and its stale records go, so
            // no cache of it opens meanwhile; `nil` when a cache of it is open in another process
            // (or opening here): its records are counted and left alone.
            let lock = try? await work.runConcurrently { try CacheFolder(root: root) }
            // A folder that is gone lists as empty: none of its records names a file.
            let names = try await work.runConcurrently { try POSIXFile.listDirectory(filesPath) }
            let onDisk = Set(names.lazy.filter { !$0.isDirectory }.compactMap { FileKeys.id(fileName: $0.name) })
            var found: [ClosedFile] = []
            for file in recorded.values {
                if onDisk.contains(file.id) { found.append(file) } else { stale.append(file.metadataKey) }
            }
            for start in stride(from: 0, to: lock == nil ? 0 : stale.count, by: 1_000) {
                try await view.write(stale[start..<min(stale.count, start + 1_000)].map { .delete(key: $0) })
            }
            withExtendedLifetime(lock) {}
            guard !found.isEmpty else { continue }
            found.sort { ($0.lastUseMillis, $0.id.hex) > ($1.lastUseMillis, $1.id.hex) }
            closed.add(found, of: account)
        }
        state.withLock { state in
            if state.generation == generation { state.closed = closed }
        }
        return closed
    }

    /// Deletes `evicted` (the oldest of `account`'s files, none open) from the count in memory,
    /// if that count is still the one they came from.
    func forget(_ evicted: [ClosedFile], of account: AccountID, countedAt generation: Int) {
        state.withLock { state in
            guard state.closed?.generation == generation else { return }
            state.closed?.remove(evicted, of: account)
        }
    }

    /// Forgets the count of the closed accounts: the next pass counts them again (a deletion
    /// failed halfway, so the count no longer says what the store and the folders hold).
    func recountClosedAccounts() {
        state.withLock { $0.closed = nil }
    }

    // MARK: - Deleting a closed account's files

    /// What ``deleteClosedFiles(_:of:on:)`` did.
    enum ClosedDeletion {
        /// The files and their records are gone.
        case deleted
        /// The account's folder is locked: its cache is open (in another process, or opening
        /// here). Its files stay; the pass leaves the account alone.
        case locked
    }

    /// Deletes files of `account`, which has no cache open here, and then their records, holding
    /// the account's folder lock meanwhile, so that no cache of it opens (here or in another
    /// process) while they go.
    ///
    /// Files first, as an open cache's pass does: a crash or a failure between the two leaves
    /// records naming no file, which the account's next open drops and the next count deletes; a
    /// record is never deleted while its file stays, which would leave the bytes counted by no
    /// one until the account opens again.
    ///
    /// - Throws: the store's error (the files are gone, their records stay: count again); `.io`
    ///   when a file could not be deleted (its record stays, and so does its count).
    func deleteClosedFiles(
        _ files: [ClosedFile], of account: AccountID, on work: BlockingWorkQueue
    ) async throws -> ClosedDeletion {
        let root = FileCache.accountDirectory(of: account, in: parent)
        let folder: CacheFolder
        do {
            folder = try await work.runConcurrently { try CacheFolder(root: root) }
        } catch let error as OfflineStoreError where error.code == .locked {
            return .locked
        }
        // The count may be older than the files: a cache of the account that opened and closed
        // since may have used a file or downloaded it again, under a new record. Only files whose
        // counted record is still there go; finding one that is not, the count is redone.
        let view = AccountScopedStore(wrapping: store, account: account)
        var files = files
        var current: [ClosedFile] = []
        for file in files {
            if try await view.data(file.metadataKey) != nil { current.append(file) }
        }
        if current.count != files.count {
            recountClosedAccounts()
            files = current
        }
        let paths = files.map { folder.filePath($0.id) }
        let failed: [Int] = try await work.runConcurrently { [folder] in
            paths.indices.filter { (try? folder.remove(paths[$0])) == nil }
        }
        let failedSet = Set(failed)
        let deleted = files.indices.filter { !failedSet.contains($0) }.map { files[$0] }
        if !deleted.isEmpty {
            try await view.writeLearningOutcome(
                deleted.map { .delete(key: $0.metadataKey) })
        }
        withExtendedLifetime(folder) {}  // the lock is held until the records are gone
        guard failed.isEmpty else {
            throw OfflineStoreError(
                .io,
                "An eviction pass could not delete \(failed.count) file(s) of account \(account) in "
                    + "\(folder.filesPath); they stay cached. Check the folder's permissions and the disk.")
        }
        return .deleted
    }
}
