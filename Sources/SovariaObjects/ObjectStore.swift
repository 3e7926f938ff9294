import Foundation
import Sovaria

/// Codable objects in any `OfflineStore`: a collection of objects by id, written as bytes with a
/// coder (JSON by default), read back by id or in pages in key order, and observed.
///
/// ```swift
/// struct Note: Codable, Sendable, Identifiable {
///     var id: String
///     var title: String
/// }
/// let notes = ObjectStore<Note>(store: store, collection: "notes")
/// try await notes.insert(Note(id: "n1", title: "Milk"))
/// let first = try await notes.object("n1")   // Note(id: "n1", title: "Milk")
/// ```
///
/// Each object is one entry: its key is ``keyPrefix`` (`sov:objects:<collection>:`) followed by
/// its id, and its value the coder's bytes, stored with `set(_:data:)` (never base64). Ids are
/// ordered as keys are, by their UTF-8 bytes.
///
/// - Important: Any number of tasks may use one object store, and any number of object stores
///   may share one store instance: a write through one is seen by the ``changes()`` of every
///   other over the same instance (not over another instance on the same file, nor in another
///   process). A batch (``insert(contentsOf:)``, ``remove(contentsOf:)``) is one `write`: all or
///   nothing on a store with `StoreCapabilities.atomicBatch`, and every id is checked before
///   anything is written on any store.
public final class ObjectStore<Object: Codable & Sendable>: Sendable {
    /// The store the objects live in.
    public let store: any OfflineStore
    /// The collection's name: `notes` in `sov:objects:notes:`.
    public let collection: String
    /// The prefix of every object's key: `sov:objects:<collection>:`. All of Sovaria's data lives
    /// under `sov:`, so `SovariaOffline.migrate` copies collections with the rest.
    public let keyPrefix: String
    /// The longest id, in UTF-8 bytes, that fits in a key with ``keyPrefix``: 511 less the
    /// prefix's length.
    public let maxIDByteCount: Int
    /// The coder the objects are written and read with.
    public let coder: any ObjectCoder
    let identify: @Sendable (Object) -> String
    let observed: ChangeRegistry.Collection

    /// The largest batch ``removeAll()`` writes at once.
    static var removeAllBatchSize: Int { 10_000 }

    /// An object store of the collection `collection` in `store`, whose objects' ids `id` gives.
    ///
    /// - Parameters:
    ///   - store: The store the objects live in.
    ///   - collection: The collection's name: not empty, no `:`, at most 400 UTF-8 bytes.
    ///   - coder: How objects become bytes. Default: ``ObjectCoder/json``.
    ///   - id: The id of an object: the same object always has the same id.
    /// - Important: A collection name that is empty, has a `:` or is longer than 400 bytes is a
    ///   programming error and stops in a precondition.
    public init(
        store: any OfflineStore, collection: String, coder: some ObjectCoder = .json,
        id: @escaping @Sendable (Object) -> String
    ) {
        precondition(
            !collection.isEmpty && !collection.utf8.contains(UInt8(ascii: ":")) && collection.utf8.count <= 400,
            "An object collection's name is 1 to 400 UTF-8 bytes without ':', so that no collection's keys "
                + "fall under another's prefix: \(collection.debugDescription)")
        self.store = store
        self.collection = collection
        keyPrefix = "sov:objects:\(collection):"
        maxIDByteCount = StoreKey.maxUTF8Count - keyPrefix.utf8.count
        self.coder = coder
        identify = id
        observed = ChangeRegistry.Collection(store: ObjectIdentifier(store), prefix: StoreKey.Bytes(keyPrefix))
    }

    /// An object store of the collection `collection` in `store`, whose objects' ids are the
    /// string at `keyPath`.
    ///
    /// - Parameters:
    ///   - store: The store the objects live in.
    ///   - collection: The collection's name: not empty, no `:`, at most 400 UTF-8 bytes.
    ///   - coder: How objects become bytes. Default: ``ObjectCoder/json``.
    ///   - keyPath: Where an object keeps its id.
    public convenience init(
        store: any OfflineStore, collection: String, coder: some ObjectCoder = .json,
        idKeyPath keyPath: KeyPath<Object, String> & Sendable
    ) {
        self.init(store: store, collection: collection, coder: coder) { $0[keyPath: keyPath] }
    }

    /// The id ``ObjectStore`` gives `object`.
    ///
    /// - Parameter object: An object of the collection.
    public func id(of object: Object) -> String { identify(object) }

    /// The key of the object with id `id`, or ``ObjectStoreError/Code/invalidID`` when the id is
    /// empty or too long for a key.
    ///
    /// - Parameter id: An object's id.
    public func key(for id: String) throws(ObjectStoreError) -> String {
        let count = id.utf8.count
        guard count >= 1, count <= maxIDByteCount else {
            throw ObjectStoreError(
                .invalidID,
                "An id in the collection \(collection.debugDescription) has 1 to \(maxIDByteCount) UTF-8 bytes, "
                    + "this one has \(count): use a shorter id (a UUID, a hash of a long one).",
                id: id)
        }
        return keyPrefix + id
    }

    /// The id in `key`, a key of this collection.
    func id(inKey key: String) -> String {
        String(decoding: key.utf8.dropFirst(keyPrefix.utf8.count), as: UTF8.self)
    }

    // MARK: Writing

    /// Stores `object` under its id, replacing the object with that id if there is one.
    ///
    /// - Parameter object: The object to store.
    /// - Important: Throws ``ObjectStoreError`` with code ``ObjectStoreError/Code/invalidID`` or
    ///   ``ObjectStoreError/Code/encodingFailed``, and the store's own `OfflineStoreError`; nothing
    ///   is written then.
    public func insert(_ object: Object) async throws {
        try await insert(contentsOf: [object])
    }

    /// Stores `objects` in one `write` batch, each under its id, replacing objects with those ids.
    ///
    /// - Parameter objects: The objects to store; of two with one id, the later wins.
    /// - Important: Every object is encoded and every id checked before anything is written, so an
    ///   invalid one changes nothing on any store; the batch is all or nothing on a store with
    ///   `StoreCapabilities.atomicBatch`. While someone observes the collection, each key is read
    ///   first to tell ``ObjectChange/inserted`` from ``ObjectChange/updated``: one more read per
    ///   object, paid only then.
    public func insert(contentsOf objects: some Sequence<Object>) async throws {
        var writes: [StoreWrite] = []
        var ids: [String] = []
        for object in objects {
            let id = identify(object)
            let key = try key(for: id)
            writes.append(.setData(key: key, data: try encode(object, id: id, key: key)))
            ids.append(id)
        }
        guard !writes.isEmpty else { return }
        var existing: Set<ObjectID>?
        if ChangeRegistry.shared.hasObservers(observed) {
            // By key, not by reading the value: a damaged object (one that does not decrypt, or
            // fails its checksum) still exists, and writing it again is how an app repairs it.
            var found: Set<ObjectID> = []
            for (id, write) in zip(ids, writes)
            where try await store.keys(write.key).contains(where: { $0.utf8.elementsEqual(write.key.utf8) }) {
                found.insert(ObjectID(id))
            }
            existing = found
        }
        try await store.write(writes)
        ChangeRegistry.shared.notify(observed) {
            let written = Set(ids.map { ObjectID($0) })
            guard let existing else { return ObjectChange(updated: written) }
            return ObjectChange(inserted: written.subtracting(existing), updated: existing)
        }
    }

    /// Removes the object with id `id`; removing a missing one is not an error.
    ///
    /// - Parameter id: The id of the object to remove.
    /// - Important: The id is reported in ``ObjectChange/removed``, whether it had an object or not.
    public func remove(_ id: String) async throws {
        try await remove(contentsOf: [id])
    }

    /// Removes `object` (the object with its id).
    ///
    /// - Parameter object: The object to remove.
    public func remove(_ object: Object) async throws {
        try await remove(identify(object))
    }

    /// Removes the objects with ids `ids` in one `write` batch; missing ones are not an error.
    ///
    /// - Parameter ids: The ids of the objects to remove.
    /// - Important: Every id is checked before anything is written; the batch is all or nothing on
    ///   a store with `StoreCapabilities.atomicBatch`.
    public func remove(contentsOf ids: some Sequence<String>) async throws {
        var writes: [StoreWrite] = []
        var removed: Set<ObjectID> = []
        for id in ids {
            writes.append(.delete(key: try key(for: id)))
            removed.insert(ObjectID(id))
        }
        guard !writes.isEmpty else { return }
        try await store.write(writes)
        ChangeRegistry.shared.notify(observed) { ObjectChange(removed: removed) }
    }

    /// Removes every object of the collection, and returns how many there were.
    ///
    /// - Important: One `write` batch for up to 10,000 objects (all or nothing on a store with
    ///   `StoreCapabilities.atomicBatch`); a larger collection goes in batches of 10,000, so a
    ///   failure midway leaves the objects of the batches not yet written: call it again. Objects
    ///   inserted while it runs may stay. The collection's schema version is kept.
    @discardableResult
    public func removeAll() async throws -> Int {
        let keys = try await store.keys(keyPrefix)
        var start = 0
        while start < keys.count {
            let end = min(keys.count, start + Self.removeAllBatchSize)
            let batch = keys[start..<end]
            try await store.write(batch.map { .delete(key: $0) })
            ChangeRegistry.shared.notify(observed) { ObjectChange(removed: Set(batch.map { ObjectID(id(inKey: $0)) })) }
            start = end
        }
        return keys.count
    }

    // MARK: Changes

    /// The changes of the collection from now on, through any object store over the same store
    /// instance, as they come: the changes made while the reader has not read are merged into
    /// one event.
    ///
    /// ```swift
    /// for await change in notes.changes() {
    ///     for id in change.inserted.union(change.updated) { print(id, try await notes.object(id.string) as Any) }
    /// }
    /// ```
    ///
    /// - Important: Sees the writes of object stores in this process over this store instance
    ///   only: not direct writes to the store, nor other processes. Ends when the reading task is
    ///   cancelled or the stream is released, and its registration goes with it. A migration
    ///   (``migrate(toVersion:pageSize:_:)``) is not reported.
    public func changes() -> AsyncStream<ObjectChange> {
        ChangeRegistry.shared.observe(observed, store: store)
    }

    /// How many ``changes()`` streams follow this collection of this store instance now: visible to
    /// the tests, which check that a stream's end removes its registration.
    var observerCount: Int { ChangeRegistry.shared.count(observed) }

    private func encode(_ object: Object, id: String, key: String) throws(ObjectStoreError) -> Data {
        do {
            return try coder.encode(object)
        } catch {
            throw ObjectStoreError(
                .encodingFailed, "The coder could not encode the object: see the underlying error.", id: id,
                key: key, underlying: error)
        }
    }
}

extension ObjectStore where Object: Identifiable, Object.ID == UUID {
    /// An object store of the collection `collection` in `store`, whose objects' ids are their
    /// `UUID`s, as `uuidString`.
    ///
    /// - Parameters:
    ///   - store: The store the objects live in.
    ///   - collection: The collection's name: not empty, no `:`, at most 400 UTF-8 bytes.
    ///   - coder: How objects become bytes. Default: ``ObjectCoder/json``.
    public convenience init(store: any OfflineStore, collection: String, coder: some ObjectCoder = .json) {
        self.init(store: store, collection: collection, coder: coder) { $0.id.uuidString }
    }
}

extension ObjectStore where Object: Identifiable, Object.ID: LosslessStringConvertible {
    /// An object store of the collection `collection` in `store`, whose objects' ids are their
    /// `id`, as text (`String(describing:)`).
    ///
    /// - Parameters:
    ///   - store: The store the objects live in.
    ///   - collection: The collection's name: not empty, no `:`, at most 400 UTF-8 bytes.
    ///   - coder: How objects become bytes. Default: ``ObjectCoder/json``.
    public convenience init(store: any OfflineStore, collection: String, coder: some ObjectCoder = .json) {
        self.init(store: store, collection: collection, coder: coder) { $0.id.description }
    }
}
