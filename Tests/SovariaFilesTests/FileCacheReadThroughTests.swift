import Foundation
import Sovaria
import Synchronization
import Testing

@testable import SovariaFiles

/// `open(_:orDownload:)`: seed 004's stampede (twelve cells, one avatar) downloads once, on every
/// metadata engine (issue 35, item 3).
@Suite struct FileCacheReadThroughTests {
    @Test(arguments: MetadataEngine.all)
    func fiftyConcurrentCallsForAMissingKeyDownloadOnce(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let cache = try await bench.open(.unlimited)
        let downloads = Downloads(body: body(7, 4_000))
        // The download waits until all fifty wait on it: every one of them joined, none came late.
        let leases = try await withThrowingTaskGroup(of: FileLease.self) { group in
            for _ in 0..<50 { group.addTask { try await cache.open("avatar", orDownload: downloads.write) } }
            await waitUntil { cache.flights.waiterCount(for: "avatar") == 50 }
            downloads.gate.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(downloads.count == 1, "one download for fifty callers")
        #expect(leases.count == 50)
        #expect(Set(leases.map(ObjectIdentifier.init)).count == 50, "each caller has a lease of its own")
        for lease in leases {
            #expect(try lease.fileHandle.readToEnd() == body(7, 4_000))
            #expect(lease.sizeBytes == 4_000)
        }
        #expect(cache.fileCount == 1)
        #expect(cache.statistics.misses == 50)
        // A call after it ended finds the file.
        #expect(try await cache.open("avatar", orDownload: downloads.write).sizeBytes == 4_000)
        #expect(downloads.count == 1)
        #expect(cache.statistics.hits == 1)
    }

    @Test(arguments: MetadataEngine.all)
    func aCallWhileTheDownloadIsBeingRecordedInTheStoreJoinsIt(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let store = HeldWritesStore(try await bench.metadata())
        let cache = try await bench.open(.unlimited, store: store)
        let downloads = Downloads(body: body(3, 2_000))
        downloads.gate.open()
        store.holdWrites()
        let first = Task { try await cache.open("avatar", orDownload: downloads.write) }
        // The file is downloaded, fsynced and renamed; its metadata write is held in the store.
        await waitUntil { store.heldCount == 1 }
        let second = Task { try await cache.open("avatar", orDownload: downloads.write) }
        await waitUntil { cache.flights.waiterCount(for: "avatar") == 2 }
        store.releaseWrites()
        let leases = [try await first.value, try await second.value]
        #expect(downloads.count == 1)
        for lease in leases { #expect(try lease.fileHandle.readToEnd() == body(3, 2_000)) }
    }

    @Test(arguments: MetadataEngine.all)
    func aFailedDownloadFailsEveryWaiterOnceAndTheNextCallTriesAgain(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let cache = try await bench.open(.unlimited)
        let downloads = Downloads(body: body(1, 500), failures: 1)
        let outcomes = await withTaskGroup(of: Result<FileLease, any Error>.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    do {
                        return .success(try await cache.open("avatar", orDownload: downloads.write))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            await waitUntil { cache.flights.waiterCount(for: "avatar") == 5 }
            downloads.gate.open()
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(downloads.count == 1)
        for outcome in outcomes {
            #expect(throws: DownloadFailed.self) { try outcome.get() }
        }
        #expect(cache.fileCount == 0)
        #expect(try await bench.temporaryFiles().isEmpty, "the failed download left nothing")
        let lease = try await cache.open("avatar", orDownload: downloads.write)
        #expect(downloads.count == 2, "the next call downloads anew")
        #expect(try lease.fileHandle.readToEnd() == body(1, 500))
    }

    @Test(arguments: MetadataEngine.all)
    func aCancelledWaiterLeavesAtOnceAndTheDownloadGoesOnForTheOthers(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let cache = try await bench.open(.unlimited)
        let downloads = Downloads(body: body(2, 800))
        let leaving = Task { try await cache.open("avatar", orDownload: downloads.write) }
        await waitUntil { cache.flights.waiterCount(for: "avatar") == 1 }
        let staying = Task { try await cache.open("avatar", orDownload: downloads.write) }
        await waitUntil { cache.flights.waiterCount(for: "avatar") == 2 }
        leaving.cancel()
        // It returns while the download still waits at its gate.
        await #expect(throws: CancellationError.self) { try await leaving.value }
        #expect(cache.flights.waiterCount(for: "avatar") == 1)
        downloads.gate.open()
        let lease = try await staying.value
        #expect(try lease.fileHandle.readToEnd() == body(2, 800))
        #expect(downloads.count == 1)
        #expect(downloads.cancelledCount == 0, "the download was not cancelled")
    }

    @Test(arguments: MetadataEngine.all)
    func theLastWaiterLeavingCancelsTheDownload(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let cache = try await bench.open(.unlimited)
        let downloads = Downloads(body: body(4, 600))
        let caller = Task { try await cache.open("avatar", orDownload: downloads.write) }
        await waitUntil { cache.flights.waiterCount(for: "avatar") == 1 }
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        await waitUntil { downloads.cancelledCount == 1 }
        #expect(cache.flights.waiterCount(for: "avatar") == 0)
        // The next call starts a download of its own.
        downloads.gate.open()
        let lease = try await cache.open("avatar", orDownload: downloads.write)
        #expect(downloads.count == 2)
        #expect(try lease.fileHandle.readToEnd() == body(4, 600))
    }
}

/// Waits, yielding, until `condition` holds: no clock, no sleep. Gives up with a recorded issue
/// after ten million looks, so a defect fails the test instead of hanging the suite; returns
/// whether the state came.
@discardableResult
func waitUntil(
    _ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation
) async -> Bool {
    for _ in 0..<10_000_000 {
        if condition() { return true }
        await Task.yield()
    }
    Issue.record("the awaited state never came", sourceLocation: sourceLocation)
    return false
}

struct DownloadFailed: Error {}

/// What a download past its ``Downloads`` limit throws: a cache that downloads in a loop stops.
struct TooManyDownloads: Error {}

/// A download the test controls: each call waits at ``gate``, then writes ``body`` (or fails, for
/// the first `failures` calls, and for every call past `limit`); counts the calls and the ones
/// that saw their task cancelled.
final class Downloads: Sendable {
    let body: Data
    let gate = Gate()
    private let limit: Int
    private let counts: Mutex<(calls: Int, cancelled: Int, failuresLeft: Int)>

    init(body: Data, failures: Int = 0, limit: Int = .max) {
        self.body = body
        self.limit = limit
        counts = Mutex((0, 0, failures))
    }

    var count: Int { counts.withLock { $0.calls } }
    var cancelledCount: Int { counts.withLock { $0.cancelled } }

    var write: @Sendable (URL) async throws -> Void {
        { [self] destination in
            let (fails, calls) = counts.withLock { counts in
                counts.calls += 1
                defer { counts.failuresLeft = max(0, counts.failuresLeft - 1) }
                return (counts.failuresLeft > 0, counts.calls)
            }
            if calls > limit { throw TooManyDownloads() }
            await gate.wait()
            if Task.isCancelled {
                counts.withLock { $0.cancelled += 1 }
                throw CancellationError()
            }
            if fails { throw DownloadFailed() }
            try body.write(to: destination)
        }
    }
}

/// Closed until ``open()``; a task cancelled while it waits stops waiting.
final class Gate: Sendable {
    private let state = Mutex<(isOpen: Bool, waiters: [UInt64: CheckedContinuation<Void, Never>], next: UInt64)>(
        (false, [:], 0))

    func wait() async {
        let number = state.withLock { state in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.isOpen || Task.isCancelled { return true }
                    state.waiters[number] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: number) }?.resume()
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Wraps a metadata store; between ``holdWrites()`` and ``releaseWrites()`` its writes wait.
private final class HeldWritesStore: OfflineStore {
    let inner: any OfflineStore
    private let state = Mutex<(holding: Bool, held: [CheckedContinuation<Void, Never>])>((false, []))

    init(_ inner: any OfflineStore) { self.inner = inner }

    var heldCount: Int { state.withLock { $0.held.count } }
    func holdWrites() { state.withLock { $0.holding = true } }

    func releaseWrites() {
        let held = state.withLock { state in
            state.holding = false
            defer { state.held.removeAll() }
            return state.held
        }
        for write in held { write.resume() }
    }

    func get(_ key: String) async throws -> String? { try await inner.get(key) }
    func set(_ key: String, _ value: String) async throws { try await write([.set(key: key, value: value)]) }
    func delete(_ key: String) async throws { try await write([.delete(key: key)]) }
    func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }

    func write(_ batch: [StoreWrite]) async throws {
        await withCheckedContinuation { continuation in
            let waits = state.withLock { state -> Bool in
                guard state.holding else { return false }
                state.held.append(continuation)
                return true
            }
            if !waits { continuation.resume() }
        }
        try await inner.write(batch)
    }

    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        try await inner.entries(prefix, after: after, limit: limit)
    }

    func compact() async throws { try await inner.compact() }
    var capabilities: StoreCapabilities { inner.capabilities }
}
