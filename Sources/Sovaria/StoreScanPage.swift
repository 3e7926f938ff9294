/// What one call of ``OfflineStore/withEntries(_:after:limit:_:)`` read: how many entries it
/// handed to its body, the last one's key, and whether another page may follow.
///
/// ```swift
/// var after: String? = nil
/// var total = 0
/// while true {
///     let page = try await store.withEntries("app:notes:", after: after, limit: 1_000) { _, value in
///         total += value.count
///         return true
///     }
///     guard page.mayHaveMore else { break }
///     after = page.lastKey
/// }
/// ```
public struct StoreScanPage: Sendable, Hashable {
    /// How many entries the body was called with (the one it stopped at included).
    public var count: Int
    /// The key of the last entry the body was called with; `nil` when there was none. Pass it as
    /// `after` to read the next page.
    public var lastKey: String?
    /// Whether the page ended at its `limit`, so more entries may follow after ``lastKey``.
    /// `false` when the entries under the prefix ran out or the body returned `false`.
    public var mayHaveMore: Bool

    /// A page of `count` entries ending at `lastKey`.
    public init(count: Int, lastKey: String?, mayHaveMore: Bool) {
        self.count = count
        self.lastKey = lastKey
        self.mayHaveMore = mayHaveMore
    }

    /// A page with no entry and nothing after it.
    public static let empty = StoreScanPage(count: 0, lastKey: nil, mayHaveMore: false)

    /// Reads page after page, each after the last one's ``lastKey``, until one says nothing more
    /// follows; returns how many entries (or keys) they held.
    static func countAll(_ read: (_ after: String?) async throws -> StoreScanPage) async rethrows -> Int {
        var after: String?
        var total = 0
        while true {
            let page = try await read(after)
            total += page.count
            guard page.mayHaveMore else { return total }
            after = page.lastKey
        }
    }
}

/// The body of a borrowed scan: an entry's key and value bytes, valid only while it runs; it
/// returns `true` to go on, `false` to stop.
public typealias StoreEntryVisitor = (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Bool

/// The bookkeeping every native ``OfflineStore/withEntries(_:after:limit:_:)`` shares: it calls the
/// body for each entry the engine walks, counts them, keeps the last key's bytes (one copy into a
/// reused buffer) and the body's error, and says when the walk must stop.
///
/// An engine's walk takes ``visit(_:_:)`` as its non-throwing visitor (so engines whose reads throw
/// only their own error type keep it), then ``page()`` rethrows the body's error or makes the page.
package struct EntryScan {
    /// The most entries the page holds.
    private let limit: Int
    /// Entries handed to the body so far.
    private var count = 0
    /// The last key's bytes: room for the longest key, allocated once per page.
    private let lastKey: UnsafeMutableRawBufferPointer
    private var lastKeyCount = 0
    private var stopped = false
    private var failure: (any Error)?
    private let body: StoreEntryVisitor

    /// A scan of at most `limit` entries through `body`; the caller keeps `body` and `lastKey`
    /// alive (see ``run(limit:body:_:)``).
    private init(limit: Int, body: @escaping StoreEntryVisitor, lastKey: UnsafeMutableRawBufferPointer) {
        self.limit = limit
        self.body = body
        self.lastKey = lastKey
    }

    /// Runs `walk`, which calls its visitor with each entry in byte order until the visitor returns
    /// `false`, and returns the page; rethrows `body`'s error first, then `walk`'s.
    ///
    /// Entries past `limit` are never handed to `body`: the visitor returns `false` at the limit.
    package static func run(
        limit: Int, body: StoreEntryVisitor,
        _ walk: (_ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Bool) throws -> Void
    ) throws -> StoreScanPage {
        guard limit > 0 else { return .empty }
        let lastKey = UnsafeMutableRawBufferPointer.allocate(byteCount: StoreKey.maxUTF8Count, alignment: 1)
        defer { lastKey.deallocate() }
        return try withoutActuallyEscaping(body) { body in
            var scan = EntryScan(limit: limit, body: body, lastKey: lastKey)
            do {
                try walk { key, value in scan.visit(key, value) }
            } catch {
                if let failure = scan.failure { throw failure }
                throw error
            }
            return try scan.page()
        }
    }

    /// ``run(limit:body:_:)`` for a scan of keys: `walk` passes ``noValue`` as every value.
    package static func run(
        limit: Int, keys body: (UnsafeRawBufferPointer) throws -> Bool,
        _ walk: (_ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Bool) throws -> Void
    ) throws -> StoreScanPage {
        try run(limit: limit, body: { key, _ in try body(key) }, walk)
    }

    /// The value a scan of keys hands along with each key: none.
    package static var noValue: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }

    /// Hands one entry to the body; `false` when the walk must stop (the body said so, threw, or the
    /// page is full).
    private mutating func visit(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Bool {
        // A key no store writes (damage, another program) would come back as another `after`: the
        // next page would skip or repeat entries. It ends the scan as damage, as `keys` does.
        guard key.count <= lastKey.count, Self.isUTF8(key) else {
            failure = OfflineStoreError(
                .corrupt,
                "The store holds a key that is not UTF-8 or is longer than \(StoreKey.maxUTF8Count) bytes, so it was not "
                    + "written through Sovaria, or the store is damaged: delete that key with the engine's own tools, "
                    + "or restore the store from a backup.",
                key: String(decoding: key, as: UTF8.self))
            return false
        }
        count += 1
        lastKeyCount = key.count
        if let source = key.baseAddress, let target = lastKey.baseAddress {
            target.copyMemory(from: source, byteCount: lastKeyCount)
        }
        do {
            guard try body(key, value) else {
                stopped = true
                return false
            }
        } catch {
            failure = error
            return false
        }
        return count < limit
    }

    /// Whether `bytes` are UTF-8: eight ASCII bytes at a time (every key Sovaria's callers write is
    /// mostly ASCII), the standard library's check from the first byte that is not.
    @inline(__always)
    private static func isUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset + 8 <= bytes.count {
            guard base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 else {
                return String(validating: bytes, as: UTF8.self) != nil
            }
            offset += 8
        }
        while offset < bytes.count {
            guard base.load(fromByteOffset: offset, as: UInt8.self) < 0x80 else {
                return String(validating: bytes, as: UTF8.self) != nil
            }
            offset += 1
        }
        return true
    }

    private func page() throws -> StoreScanPage {
        if let failure { throw failure }
        return StoreScanPage(
            count: count,
            lastKey: count == 0
                ? nil : String(decoding: UnsafeRawBufferPointer(rebasing: lastKey[..<lastKeyCount]), as: UTF8.self),
            mayHaveMore: !stopped && count == limit)
    }
}
