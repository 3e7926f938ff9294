import Foundation

/// Copies offline data from one store to another: ``migrate(from:to:prefix:batchSize:)``.
///
/// The offline controller, `SovariaOffline` (module `SovariaSync`), offers the same calls as
/// `OfflineMigration.migrate(…)`; this namespace is for code that links only
/// `Sovaria` and an engine.
public enum OfflineMigration {
    /// The prefix of every key the engine writes.
    public static let keyPrefix = "sov:"

    /// What ``migrate(from:to:prefix:batchSize:onDamagedEntry:)`` does with a source entry whose
    /// value cannot be read back intact: one whose read throws ``OfflineStoreError`` with code
    /// ``OfflineStoreError/Code/corrupt`` or ``OfflineStoreError/Code/decryptionFailed``.
    public enum DamagedEntryPolicy: Sendable, Hashable {
        /// Throw that error and copy nothing more, as ``migrate(from:to:prefix:batchSize:)`` does.
        case stop
        /// Leave the entry out, copy every other one, and list it in
        /// ``MigrationReport/skipped``.
        case skip
    }

    /// What ``migrate(from:to:prefix:batchSize:onDamagedEntry:)`` did.
    public struct MigrationReport: Sendable {
        /// How many entries were copied (keys the target already had are not counted).
        public var copied: Int
        /// The damaged entries left out, in key order; always empty with
        /// ``DamagedEntryPolicy/stop``.
        public var skipped: [SkippedEntry]

        /// Creates a report.
        public init(copied: Int = 0, skipped: [SkippedEntry] = []) {
            self.copied = copied
            self.skipped = skipped
        }
    }

    /// A source entry that ``migrate(from:to:prefix:batchSize:onDamagedEntry:)`` left out.
    public struct SkippedEntry: Sendable {
        /// The entry's key; the source still holds it, unchanged.
        public var key: String
        /// Why its value could not be read (``OfflineStoreError/Code/corrupt`` or
        /// ``OfflineStoreError/Code/decryptionFailed``).
        public var error: OfflineStoreError

        /// Creates a skipped entry.
        public init(key: String, error: OfflineStoreError) {
            self.key = key
            self.error = error
        }
    }

    /// Copies the offline entries (keys starting with `"sov:" + prefix`) of `source` into
    /// `target`, keeping every key `target` already has, and returns how many it copied.
    ///
    /// Use it when an app moves its offline data from one store to another (for example from
    /// ``MemoryOfflineStore`` to a persistent one, from one engine to another, or to an
    /// encrypted store with a new key). Entries are read in pages of `batchSize` with
    /// ``OfflineStore/dataEntries(_:after:limit:)``, the target's entries under the prefix are read
    /// the same way alongside them (once each), and the entries target lacks are written as bytes
    /// (``StoreWrite/setData(key:data:)``) with ``OfflineStore/write(_:)``, so memory stays flat
    /// however many entries there are. Values move byte for byte, strings and binary values alike.
    ///
    /// ```swift
    /// let copied = try await OfflineMigration.migrate(from: fileStore, to: sqliteStore)
    /// ```
    ///
    /// - Important: Not atomic as a whole: each page is one batch. Running it again after a
    ///   failure is safe, since keys already copied are kept and not counted twice. Give migrate
    ///   the two stores to itself: a key another task adds to `target` meanwhile may be
    ///   overwritten.
    /// - Throws: The first error of either store, including a damaged source value
    ///   (``OfflineStoreError/Code/corrupt``, ``OfflineStoreError/Code/decryptionFailed``): to
    ///   copy everything else, call ``migrate(from:to:prefix:batchSize:onDamagedEntry:)`` with
    ///   ``DamagedEntryPolicy/skip``.
    public static func migrate(
        from source: any OfflineStore,
        to target: any OfflineStore,
        prefix: String = "",
        batchSize: Int = 1_000
    ) async throws -> Int {
        try await migrate(from: source, to: target, prefix: prefix, batchSize: batchSize, onDamagedEntry: .stop).copied
    }

    /// Copies the offline entries of `source` into `target` like
    /// ``migrate(from:to:prefix:batchSize:)``, and with ``DamagedEntryPolicy/skip`` leaves out
    /// each entry whose value is damaged instead of stopping there.
    ///
    /// A damaged entry is one whose read throws ``OfflineStoreError`` with code
    /// ``OfflineStoreError/Code/corrupt`` (a ``ChecksummedOfflineStore`` or an engine found it
    /// damaged) or ``OfflineStoreError/Code/decryptionFailed`` (an encrypted store could not open
    /// it). Any other error still stops the copy and is thrown, as are errors of `target`.
    ///
    /// ```swift
    /// let report = try await OfflineMigration.migrate(from: old, to: new, onDamagedEntry: .skip)
    /// for entry in report.skipped { log("not copied: \(entry.key): \(entry.error)") }
    /// ```
    ///
    /// A value that is bytes but not UTF-8 is not damaged: it is copied as it is (migrate reads
    /// bytes, never strings), so ``OfflineStoreError/Code/notUTF8`` never marks an entry damaged.
    ///
    /// - Important: A wrapper refuses a whole page of ``OfflineStore/dataEntries(_:after:limit:)``
    ///   when one of its values is damaged. For such a page only, migrate lists the source's
    ///   keys under the prefix (once per call, kept until it returns: memory for every key, not
    ///   for values) and reads the page's entries one ``OfflineStore/data(_:)`` at a time. Keys
    ///   added to the source after that listing are copied only from pages that read whole.
    /// - Important: Skipped entries stay in `source` as they are; copy them again after
    ///   repairing them, or delete them. `target` never receives a value for them.
    public static func migrate(
        from source: any OfflineStore,
        to target: any OfflineStore,
        prefix: String = "",
        batchSize: Int = 1_000,
        onDamagedEntry policy: DamagedEntryPolicy
    ) async throws -> MigrationReport {
        let fullPrefix = keyPrefix + prefix
        let pageSize = max(1, batchSize)
        var report = MigrationReport()
        var sourceKeys: [StoreKey.Bytes]?
        var targetKeys = TargetKeys(target: target, prefix: fullPrefix, pageSize: pageSize)
        var after: String?
        while true {
            let page: SourcePage
            do {
                let entries = try await source.dataEntries(fullPrefix, after: after, limit: pageSize)
                page = SourcePage(entries: entries, lastKey: entries.last?.key, isFull: entries.count == pageSize)
            } catch let error as OfflineStoreError where policy == .skip && error.marksDamagedEntry {
                page = try await readOneByOne(
                    from: source, prefix: fullPrefix, after: after, limit: pageSize, keys: &sourceKeys,
                    skipped: &report.skipped)
            }
            guard let lastKey = page.lastKey else { break }
            let writes = try await targetKeys.missingWrites(of: page.entries)
            if !writes.isEmpty {
                try await target.write(writes)
                report.copied += writes.count
            }
            after = lastKey
            if !page.isFull { break }
        }
        return report
    }

    /// A page read from the source: the entries to copy, the key the next page starts after
    /// (the last key read, even when its entry was skipped), and whether more may follow.
    private struct SourcePage {
        var entries: [StoreDataEntry]
        var lastKey: String?
        var isFull: Bool
    }

    /// The page after `after` read one key at a time, leaving out (and adding to `skipped`) each
    /// entry whose value is damaged. `keys` holds the source's keys once listed.
    private static func readOneByOne(
        from source: any OfflineStore,
        prefix: String,
        after: String?,
        limit: Int,
        keys: inout [StoreKey.Bytes]?,
        skipped: inout [SkippedEntry]
    ) async throws -> SourcePage {
        let ordered: [StoreKey.Bytes]
        if let keys {
            ordered = keys
        } else {
            // Listed in byte order by contract; sorting an ordered list is one linear pass.
            ordered = try await source.keys(prefix).map(StoreKey.Bytes.init).sorted()
            keys = ordered
        }
        let pageKeys = StoreKey.range(of: prefix, after: after, in: ordered).prefix(limit)
        var entries: [StoreDataEntry] = []
        entries.reserveCapacity(pageKeys.count)
        for keyBytes in pageKeys {
            let key = keyBytes.string
            do {
                // `nil`: deleted since the listing.
                if let data = try await source.data(key) { entries.append(StoreDataEntry(key: key, data: data)) }
            } catch let error as OfflineStoreError where error.marksDamagedEntry {
                skipped.append(SkippedEntry(key: key, error: error))
            }
        }
        return SourcePage(entries: entries, lastKey: pageKeys.last?.string, isFull: pageKeys.count == limit)
    }

    /// The target's keys under the prefix, read forward in pages of `pageSize` alongside the
    /// source's pages, so that migrate learns which keys target has without one awaited `get`
    /// per entry: an empty target costs one read in all, a full one about one read per page.
    private struct TargetKeys {
        let target: any OfflineStore
        let prefix: String
        let pageSize: Int
        /// The last page read from target, ascending; `position` is the first key not yet passed.
        private var buffered: [String] = []
        private var position = 0
        /// The last key read from target: the next page starts after it.
        private var cursor: String?
        /// Target has no key after `cursor` (keys migrate wrote itself aside).
        private var reachedEnd = false

        init(target: any OfflineStore, prefix: String, pageSize: Int) {
            self.target = target
            self.prefix = prefix
            self.pageSize = pageSize
        }

        /// Writes for the entries of `page` whose keys target does not have. Each page must
        /// follow the one before it in byte order, and be written before the next is asked
        /// about (migrate's writes then all sort before `cursor`, or target was read to its end).
        mutating func missingWrites(of page: [StoreDataEntry]) async throws -> [StoreWrite] {
            var writes: [StoreWrite] = []
            do {
                for entry in page where try await !contains(entry.key) {
                    writes.append(.setData(key: entry.key, data: entry.data))
                }
            } catch let error as OfflineStoreError where error.marksDamagedEntry {
                // A damaged value of target's refuses the page it is in: ask for each key instead,
                // which throws only when one of this page's own keys is damaged there.
                writes = []
                for entry in page where try await target.withValue(entry.key, { _ in true }) == nil {
                    writes.append(.setData(key: entry.key, data: entry.data))
                }
                buffered = []
                position = 0
                if let last = page.last?.key { cursor = last }
                reachedEnd = false
            }
            return writes
        }

        /// Whether target has `key`; keys must be asked about in ascending byte order.
        private mutating func contains(_ key: String) async throws -> Bool {
            while true {
                while position < buffered.count, precedes(buffered[position], key) { position += 1 }
                if position < buffered.count { return buffered[position].utf8.elementsEqual(key.utf8) }
                if reachedEnd { return false }
                // Byte pages: a target value that is not UTF-8 is no reason to fail (only keys matter).
                let page = try await target.dataEntries(prefix, after: cursor, limit: pageSize)
                buffered = page.map(\.key)
                position = 0
                if let last = buffered.last { cursor = last }
                reachedEnd = page.count < pageSize
            }
        }
    }

}

/// Byte order (memcmp) of two keys, without copying them.
private func precedes(_ lhs: String, _ rhs: String) -> Bool {
    lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
}

extension OfflineStoreError {
    /// Whether this error says that one entry's value cannot be read back intact; never
    /// ``OfflineStoreError/Code/notUTF8``, which a byte read does not throw and which is no damage.
    fileprivate var marksDamagedEntry: Bool { code == .corrupt || code == .decryptionFailed }
}
