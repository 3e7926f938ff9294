import Foundation
import Sovaria
import SovariaTestKit
import Testing

@testable import SovariaFiles

#if canImport(Glibc)
    import Glibc
#endif

/// The cache's coordination: a change waiting at its gate can be cancelled, and its locks are
/// taken in the order the type states (checked in debug builds).
@Suite struct FileCacheGateTests {
    @Test(.timeLimit(.minutes(10)), arguments: MetadataEngine.all)
    func aChangeCancelledWhileItWaitsAtTheGateThrowsCancellationError(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let cache = try await bench.open(.unlimited)
        try await cache.store("photo", data: Data(repeating: 1, count: 100))
        try await cache.gate.withGate { _ in
            let removal = Task { try await cache.remove("photo") }
            while cache.gate.waiterCount == 0 { await Task.yield() }
            removal.cancel()
            let outcome = await removal.result
            #expect(throws: CancellationError.self) { try outcome.get() }
            #expect(cache.gate.waiterCount == 0, "the cancelled change left the line")
        }
        #expect(cache.contains("photo"), "a change that never entered the gate changed nothing")
        #expect(try await cache.remove("photo"), "the gate still admits the next change")
        #expect(!cache.contains("photo"))
    }

    #if DEBUG
        // Each folder is made here, not in the child: a child that stops never releases one.
        @Test func takingTheFlightsLockInsideTheStateLockStopsTheProcess() async throws {
            let folder = try TemporaryFolder()
            await #expect(processExitsWith: .failure) { [path = folder.child("cache").path as String] in
                // Only the lock-order check may end this process with a failure.
                do {
                    let cache = try await FileCache(
                        directory: URL(fileURLWithPath: path), metadata: MemoryOfflineStore(), size: .unlimited)
                    cache.state.withLock { _ in _ = cache.flights.waiterCount(for: "photo") }
                } catch {}
                _exit(0)
            }
        }

        @Test func takingTheLocksInTheirOrderDoesNotStopTheProcess() async throws {
            let folder = try TemporaryFolder()
            await #expect(processExitsWith: .success) { [path = folder.child("cache").path as String] in
                do {
                    let cache = try await FileCache(
                        directory: URL(fileURLWithPath: path), metadata: MemoryOfflineStore(), size: .unlimited)
                    try await cache.store("photo", data: Data(repeating: 1, count: 100))
                    // The path that nests them: a caller joining a download claims the cached file.
                    let lease = try await cache.open("photo") { _ in }
                    _exit(lease.sizeBytes == 100 ? 0 : 1)
                } catch {}
                _exit(1)
            }
        }
    #endif
}
