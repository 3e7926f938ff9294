import Foundation
import Sovaria

extension ObjectStore {
    /// The key of the collection's schema version: `sov:meta:objects:<collection>`.
    public var versionKey: String { "sov:meta:objects:\(collection)" }

    /// The key of an unfinished migration's progress: `sov:meta:objects:<collection>:migration`.
    var migrationKey: String { "sov:meta:objects:\(collection):migration" }

    /// The collection's stored schema version: 0 when none was ever stored.
    ///
    /// - Important: Throws ``ObjectStoreError`` with code ``ObjectStoreError/Code/corruptVersion``
    ///   when the version key holds something else than a number.
    public func version() async throws -> Int {
        guard let data = try await store.data(versionKey) else { return 0 }
        let text = String(validating: data, as: UTF8.self) ?? "<\(data.count) bytes that are not UTF-8>"
        guard let version = Int(text), version >= 0 else {
            throw ObjectStoreError(
                .corruptVersion,
                "The collection's version key does not hold a version number: \(text.debugDescription)",
                key: versionKey)
        }
        return version
    }

    /// Brings the collection to schema version `version`: when the stored version is older, calls
    /// `transform` once for each stored object, then stores `version`. Returns how many objects
    /// `transform` was called for: 0 when the collection was at `version` already.
    ///
    /// ```swift
    /// try await notes.migrate(toVersion: 2) { from, data in
    ///     guard from < 2, var fields = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { return data }
    ///     fields["title"] = fields.removeValue(forKey: "name")   // version 2 renamed `name`
    ///     return try JSONSerialization.data(withJSONObject: fields)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - version: The version the app reads and writes: 0 or more.
    ///   - pageSize: How many objects are migrated per batch: more than 0. Default: 500.
    ///   - transform: Called with the stored version and an object's stored bytes; returns the
    ///     bytes to store instead (the same bytes: no write), or `nil` to remove the object.
    /// - Important: Crash-safe on a store with `StoreCapabilities.atomicBatch`: a collection of
    ///   fewer than `pageSize` objects is migrated in one batch with its new version; a larger one
    ///   in batches of `pageSize` objects, each written with the id it reached, and the version
    ///   last. Interrupted (a crash, an error, `transform` throwing), the next call resumes after
    ///   the last batch written, so every object is transformed once. On a store without atomic
    ///   batches, a crash inside a batch can leave part of it migrated: `transform` then sees
    ///   those objects again, and must recognize them. Throws ``ObjectStoreError`` with code
    ///   ``ObjectStoreError/Code/newerVersion`` when the stored version is newer than `version`,
    ///   and ``ObjectStoreError/Code/migrationInProgress`` when a migration to another version was
    ///   interrupted. Not reported to ``changes()``: migrate before anyone reads. Migrations of one
    ///   collection of one store instance run one at a time in this process (not across
    ///   processes).
    @discardableResult
    public func migrate(
        toVersion version: Int, pageSize: Int = 500, _ transform: (_ from: Int, _ data: Data) throws -> Data?
    ) async throws -> Int {
        precondition(version >= 0 && pageSize > 0, "version \(version) ≥ 0 and pageSize \(pageSize) > 0")
        // One migration of the collection at a time in this process; the version is read inside,
        // so the second of two opens finds the first's work done.
        return try await ChangeRegistry.shared.migrationGate(observed).withGate { _ in
            try await migrateNow(toVersion: version, pageSize: pageSize, transform)
        }
    }

    private func migrateNow(
        toVersion version: Int, pageSize: Int, _ transform: (_ from: Int, _ data: Data) throws -> Data?
    ) async throws -> Int {
        let stored = try await self.version()
        guard stored != version else { return 0 }
        guard stored < version else {
            throw ObjectStoreError(
                .newerVersion,
                "The collection \(collection.debugDescription) is at version \(stored), newer than \(version): "
                    + "it was written by a newer app. Update the app; nothing was changed.",
                key: versionKey)
        }
        var after = try await progress(from: stored, to: version)
        var count = 0
        while true {
            let entries = try await store.dataEntries(keyPrefix, after: after.map { keyPrefix + $0 }, limit: pageSize)
            var writes: [StoreWrite] = []
            for entry in entries {
                count += 1
                switch try transform(stored, entry.data) {
                case .some(let data) where data == entry.data: break
                case .some(let data): writes.append(.setData(key: entry.key, data: data))
                case .none: writes.append(.delete(key: entry.key))
                }
            }
            guard entries.count == pageSize, let last = entries.last else {
                writes.append(.set(key: versionKey, value: String(version)))
                writes.append(.delete(key: migrationKey))
                try await store.write(writes)
                return count
            }
            let reached = id(inKey: last.key)
            writes.append(.set(key: migrationKey, value: "\(stored):\(version):\(reached)"))
            try await store.write(writes)
            after = reached
        }
    }

    /// An object store over `store`, brought to schema version `version` with
    /// ``migrate(toVersion:pageSize:_:)`` before it is returned.
    ///
    /// - Parameters:
    ///   - store: The store the objects live in.
    ///   - collection: The collection's name: not empty, no `:`, at most 400 UTF-8 bytes.
    ///   - coder: How objects become bytes. Default: ``ObjectCoder/json``.
    ///   - id: The id of an object.
    ///   - version: The version the app reads and writes.
    ///   - migrate: Called once per stored object when the stored version is older (see
    ///     ``migrate(toVersion:pageSize:_:)``).
    public static func open(
        store: any OfflineStore, collection: String, coder: some ObjectCoder = .json,
        id: @escaping @Sendable (Object) -> String, version: Int,
        migrate: (_ from: Int, _ data: Data) throws -> Data?
    ) async throws -> ObjectStore {
        let objects = ObjectStore(store: store, collection: collection, coder: coder, id: id)
        try await objects.migrate(toVersion: version, migrate)
        return objects
    }

    /// Where an interrupted migration from `stored` to `version` stopped; `nil` when none did.
    private func progress(from stored: Int, to version: Int) async throws -> String? {
        guard let text = try await store.get(migrationKey) else { return nil }
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, Int(parts[0]) == stored, let target = Int(parts[1]) else {
            throw ObjectStoreError(
                .corruptVersion, "The collection's migration progress is not one this version wrote: \(text)",
                key: migrationKey)
        }
        guard target == version else {
            throw ObjectStoreError(
                .migrationInProgress,
                "A migration of \(collection.debugDescription) from version \(stored) to \(target) was interrupted: "
                    + "open the collection with version \(target) to finish it first.",
                key: migrationKey)
        }
        return String(parts[2])
    }
}

extension ObjectStore where Object: Identifiable, Object.ID: LosslessStringConvertible {
    /// An object store over `store` whose ids are the objects' `id`, brought to schema version
    /// `version` with ``migrate(toVersion:pageSize:_:)`` before it is returned.
    ///
    /// - Parameters:
    ///   - store: The store the objects live in.
    ///   - collection: The collection's name: not empty, no `:`, at most 400 UTF-8 bytes.
    ///   - coder: How objects become bytes. Default: ``ObjectCoder/json``.
    ///   - version: The version the app reads and writes.
    ///   - migrate: Called once per stored object when the stored version is older.
    public static func open(
        store: any OfflineStore, collection: String, coder: some ObjectCoder = .json, version: Int,
        migrate: (_ from: Int, _ data: Data) throws -> Data?
    ) async throws -> ObjectStore {
        let objects = ObjectStore(store: store, collection: collection, coder: coder)
        try await objects.migrate(toVersion: version, migrate)
        return objects
    }
}
