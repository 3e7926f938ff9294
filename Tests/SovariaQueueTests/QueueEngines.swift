import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaQueue
import SovariaSQLite
import SovariaSodium
import SovariaTestEngines
import SovariaTestServers
import Synchronization

/// The stores every queue test runs on (the package's one engine list): encrypted SQLite and
/// PostgreSQL included.
typealias QueueEngine = TestEngine

extension TestEngine {
    static let all = standard(sqliteFile: "queue.sqlite", including: [.encrypted, .postgres])
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000.123_456))

    var date: Date { current.withLock { $0 } }
    func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }
    var function: @Sendable () -> Date { { self.date } }
}

/// A numbered request whose body says its number.
func request(_ number: Int, method: String = "POST") -> DataRequest {
    DataRequest(
        method: method, path: "/rest/v1/notes?id=eq.\(number)", headers: ["Prefer": "return=minimal"],
        body: #"{"n":\#(number),"title":"é/\u{0}"}"#)
}

/// The number a ``request(_:method:)`` carries.
func number(of write: QueuedWrite) -> Int {
    Int(write.request.path.split(separator: ".").last ?? "") ?? -1
}

/// Wraps a store and records what the queue asks of it; can fail the next batches.
final class SpyStore: OfflineStore {
    struct Log {
        var gets: [String] = []
        var entriesPrefixes: [String] = []
        var keysPrefixes: [String] = []
        var batches: [[StoreWrite]] = []
    }

    let inner: any OfflineStore
    let log = Mutex(Log())
    /// Batches fail with this error while it is set.
    let failWrites = Mutex<OfflineStoreError?>(nil)
    /// Runs after each `entries` call has read, before it returns, while it is set (a test
    /// holds a read there).
    let afterEntries = Mutex<(@Sendable () async -> Void)?>(nil)

    init(_ inner: any OfflineStore) { self.inner = inner }

    var batches: [[StoreWrite]] { log.withLock { $0.batches } }
    func reset() { log.withLock { $0 = Log() } }

    func get(_ key: String) async throws -> String? {
        log.withLock { $0.gets.append(key) }
        return try await inner.get(key)
    }

    func set(_ key: String, _ value: String) async throws { try await write([.set(key: key, value: value)]) }

    func delete(_ key: String) async throws { try await write([.delete(key: key)]) }

    func keys(_ prefix: String) async throws -> [String] {
        log.withLock { $0.keysPrefixes.append(prefix) }
        return try await inner.keys(prefix)
    }

    func write(_ batch: [StoreWrite]) async throws {
        if let error = failWrites.withLock({ $0 }) { throw error }
        log.withLock { $0.batches.append(batch) }
        try await inner.write(batch)
    }

    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        log.withLock { $0.entriesPrefixes.append(prefix) }
        let page = try await inner.entries(prefix, after: after, limit: limit)
        if let hold = afterEntries.withLock({ $0 }) { await hold() }
        return page
    }

    func compact() async throws { try await inner.compact() }
    var capabilities: StoreCapabilities { inner.capabilities }
}
