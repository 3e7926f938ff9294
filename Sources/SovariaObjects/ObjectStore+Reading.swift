import Foundation
import Sovaria

extension ObjectStore {
    /// The object with id `id`, or `nil` when there is none.
    ///
    /// - Parameter id: The object's id.
    /// - Important: Throws ``ObjectStoreError`` with code ``ObjectStoreError/Code/decodingFailed``
    ///   when the stored bytes are not an `Object`, and ``ObjectStoreError/Code/invalidID`` for an
    ///   id no key can hold.
    public func object(_ id: String) async throws -> Object? {
        let key = try key(for: id)
        guard let data = try await store.data(key) else { return nil }
        return try decode(data, key: key)
    }

    /// Every object of the collection, in key order (the ids' UTF-8 bytes), read in pages of 500.
    ///
    /// - Important: Strict: throws ``ObjectStoreError`` with code
    ///   ``ObjectStoreError/Code/decodingFailed`` at the first object that cannot be decoded. To
    ///   show the others and report that one, read with
    ///   ``page(after:limit:skippingUndecodable:)`` and `skippingUndecodable: true`.
    public func objects() async throws -> [Object] {
        var objects: [Object] = []
        var after: String?
        repeat {
            let page = try await page(after: after, limit: 500)
            objects += page.objects
            after = page.next
        } while after != nil
        return objects
    }

    /// Up to `limit` objects whose ids sort after `after`, in key order (the ids' UTF-8 bytes).
    ///
    /// ```swift
    /// var page = try await notes.page(limit: 100, skippingUndecodable: true)
    /// while let next = page.next { page = try await notes.page(after: next, limit: 100) }
    /// ```
    ///
    /// - Parameters:
    ///   - after: The ``ObjectPage/next`` of the page before; `nil` for the first page.
    ///   - limit: The most objects (and failures) in the page: more than 0.
    ///   - skippingUndecodable: `false` (the default): throw ``ObjectStoreError`` with code
    ///     ``ObjectStoreError/Code/decodingFailed`` at the first object that cannot be decoded.
    ///     `true`: leave it out of ``ObjectPage/objects`` and report it in
    ///     ``ObjectPage/failures``, so a screen shows the others.
    /// - Important: One `dataEntries` call: a page is a consistent read on engines whose cursor
    ///   is; pages read one after another see the writes made in between.
    public func page(
        after: String? = nil, limit: Int = 500, skippingUndecodable: Bool = false
    ) async throws
        -> ObjectPage<Object>
    {
        precondition(limit > 0, "A page holds at least one object: limit \(limit)")
        let entries = try await store.dataEntries(keyPrefix, after: after.map { keyPrefix + $0 }, limit: limit)
        var page = ObjectPage<Object>(objects: [], ids: [], failures: [], next: nil)
        page.objects.reserveCapacity(entries.count)
        for entry in entries {
            do {
                page.objects.append(try decode(entry.data, key: entry.key))
                page.ids.append(id(inKey: entry.key))
            } catch {
                guard skippingUndecodable else { throw error }
                page.failures.append(error)
            }
        }
        if entries.count == limit, let last = entries.last { page.next = id(inKey: last.key) }
        return page
    }

    /// The ids of every object, in key order (their UTF-8 bytes).
    ///
    /// - Important: Reads the keys only, no value: one `keys` call, O(n) in the collection.
    public func ids() async throws -> [String] {
        try await store.keys(keyPrefix).map(id(inKey:))
    }

    /// How many objects the collection holds.
    ///
    /// - Important: Counts the keys (``ids()``): O(n) in the collection, no value read.
    public func count() async throws -> Int {
        try await store.keys(keyPrefix).count
    }

    func decode(_ data: Data, key: String) throws(ObjectStoreError) -> Object {
        do {
            return try coder.decode(Object.self, from: data)
        } catch {
            throw ObjectStoreError(
                .decodingFailed,
                "The stored bytes are not a \(Object.self) this coder can read: written by another version "
                    + "or coder (migrate the collection), or damaged (remove it).",
                id: id(inKey: key), key: key, underlying: error)
        }
    }
}
