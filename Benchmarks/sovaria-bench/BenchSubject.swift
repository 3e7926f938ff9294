import Sovaria

/// Something the store section measures: an engine through `OfflineStore`, or the same engine
/// through its raw C API. Methods take indexes into the ``Workload`` so no subject pays for
/// making keys inside the timed loop.
protocol BenchSubject: AnyObject {
    /// Writes value `variant` (0 or 1) of the workload under key `index`.
    func set(_ index: Int, variant: Int) async throws
    func setBatch(_ indexes: Range<Int>, variant: Int) async throws
    /// Whether the key was found.
    func get(_ index: Int) async throws -> Bool
    func getMiss(_ index: Int) async throws -> Bool
    /// Whether the key was found, its value copied out as bytes (`withValue`: no `String`), as the
    /// C program copies its value; `nil` for a subject without the zero-copy read.
    func getBytes(_ index: Int) async throws -> Bool?
    /// How many keys start with prefix number `index`.
    func scan(prefix index: Int) async throws -> Int
    /// Reads the next page of every entry (from the start when `restart`); returns its size.
    func nextPage(limit: Int, restart: Bool) async throws -> Int
    /// ``nextPage(limit:restart:)`` read as borrowed bytes (`withEntries`), each key and value
    /// copied to its own place in one buffer as the C program keeps them; `nil` for a subject
    /// without the borrowed scan.
    func nextPageBytes(limit: Int, restart: Bool) async throws -> Int?
    func deleteBatch(_ indexes: Range<Int>) async throws
}

extension BenchSubject {
    func getBytes(_ index: Int) async throws -> Bool? { nil }
    func nextPageBytes(limit: Int, restart: Bool) async throws -> Int? { nil }
}

/// An engine measured through `any OfflineStore`, the way an app calls it.
final class StoreSubject: BenchSubject {
    let store: any OfflineStore
    let workload: Workload
    private var cursor: String?

    init(_ store: any OfflineStore, _ workload: Workload) {
        self.store = store
        self.workload = workload
        kept = .allocate(
            byteCount: max(1 << 20, 1_000 * (workload.valueBytes[0].count + StoreKey.maxUTF8Count)), alignment: 16)
    }

    func set(_ index: Int, variant: Int) async throws {
        try await store.set(workload.keys[index], workload.values[variant])
    }

    func setBatch(_ indexes: Range<Int>, variant: Int) async throws {
        try await store.write(indexes.map { .set(key: workload.keys[$0], value: workload.values[variant]) })
    }

    func get(_ index: Int) async throws -> Bool { try await store.get(workload.keys[index]) != nil }

    func getMiss(_ index: Int) async throws -> Bool { try await store.get(workload.missKeys[index]) != nil }

    /// Where `getBytes` copies each value, as the C program's `keep_value` does, and
    /// `nextPageBytes` a page's keys and values (the C program's page slots): room for a page of
    /// 1,000 of the workload's entries.
    private let kept: UnsafeMutableRawBufferPointer

    deinit { kept.deallocate() }

    func getBytes(_ index: Int) async throws -> Bool? {
        let kept = kept
        return try await store.withValue(workload.keys[index]) { bytes in
            guard let base = bytes.baseAddress, let target = kept.baseAddress else { return }
            target.copyMemory(from: base, byteCount: min(bytes.count, kept.count))
        } != nil
    }

    func scan(prefix index: Int) async throws -> Int { try await store.keys(workload.prefixes[index]).count }

    func nextPage(limit: Int, restart: Bool) async throws -> Int {
        if restart { cursor = nil }
        let page = try await store.entries(Workload.keyPrefix, after: cursor, limit: limit)
        cursor = page.last?.key
        return page.count
    }

    func nextPageBytes(limit: Int, restart: Bool) async throws -> Int? {
        if restart { cursor = nil }
        let kept = kept
        var offset = 0
        let page = try await store.withEntries(Workload.keyPrefix, after: cursor, limit: limit) { key, value in
            guard let target = kept.baseAddress, offset + key.count + value.count <= kept.count else {
                throw BenchError.failed("a page of \(limit) entries does not fit the bench's buffer")
            }
            if let base = key.baseAddress { (target + offset).copyMemory(from: base, byteCount: key.count) }
            offset += key.count
            if let base = value.baseAddress { (target + offset).copyMemory(from: base, byteCount: value.count) }
            offset += value.count
            return true
        }
        cursor = page.lastKey
        return page.count
    }

    func deleteBatch(_ indexes: Range<Int>) async throws {
        try await store.write(indexes.map { .delete(key: workload.keys[$0]) })
    }
}
