import Foundation
import Sovaria
import SovariaTestEngines
import Synchronization

/// The stores every object-store test runs on (the package's one engine list): encrypted SQLite
/// and PostgreSQL included.
typealias ObjectEngine = TestEngine

extension TestEngine {
    static let all = standard(sqliteFile: "objects.sqlite", including: [.encrypted, .postgres])
}

/// A small Codable object, with a date that JSON and property lists read back exactly.
struct Note: Codable, Sendable, Equatable, Identifiable {
    var id: String
    var title: String = "title"
    var stars: Int = 0
    var due = Date(timeIntervalSince1970: 1_800_000_000.5)
}

/// Wraps a store, records its batches, and fails every batch after the first `allowedBatches`
/// without passing it on: a crash between two batches.
final class FailingStore: OfflineStore {
    let inner: any OfflineStore
    private let state: Mutex<(allowed: Int, batches: [[StoreWrite]])>

    init(_ inner: any OfflineStore, allowedBatches: Int = .max) {
        self.inner = inner
        state = Mutex((allowedBatches, []))
    }

    var batches: [[StoreWrite]] { state.withLock { $0.batches } }

    func get(_ key: String) async throws -> String? { try await inner.get(key) }
    func data(_ key: String) async throws -> Data? { try await inner.data(key) }
    func set(_ key: String, _ value: String) async throws { try await write([.set(key: key, value: value)]) }
    func set(_ key: String, data: Data) async throws { try await write([.setData(key: key, data: data)]) }
    func delete(_ key: String) async throws { try await write([.delete(key: key)]) }
    func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }

    func write(_ batch: [StoreWrite]) async throws {
        let allowed = state.withLock { state in
            guard state.allowed > 0 else { return false }
            state.allowed -= 1
            state.batches.append(batch)
            return true
        }
        guard allowed else { throw OfflineStoreError(.io, "the test's crash") }
        try await inner.write(batch)
    }

    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        try await inner.entries(prefix, after: after, limit: limit)
    }

    func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        try await inner.dataEntries(prefix, after: after, limit: limit)
    }

    var capabilities: StoreCapabilities { inner.capabilities }
}
