import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaSync

/// A network whose first request waits until the test releases it: a write holds the
/// controller's write gate for as long as the test wants.
final class HeldTransport: SyncTransport {
    let server = ScriptedTransport()
    private let holdsNext = Mutex(true)
    private let reached: AsyncStream<Void>.Continuation
    private let reachedSignals: AsyncStream<Void>
    private let release: AsyncStream<Void>.Continuation
    private let releaseSignals: AsyncStream<Void>

    init() {
        (reachedSignals, reached) = AsyncStream.makeStream()
        (releaseSignals, release) = AsyncStream.makeStream()
    }

    func send(_ request: DataRequest) async throws -> DataResponse {
        let holds = holdsNext.withLock { holds in
            defer { holds = false }
            return holds
        }
        if holds {
            reached.yield()
            for await _ in releaseSignals {}
        }
        return try await server.send(request)
    }

    /// Returns once the first request waits.
    func firstRequestArrived() async {
        for await _ in reachedSignals { return }
    }

    /// Lets the first request through.
    func releaseFirstRequest() { release.finish() }
}

@Suite struct WriteGateTests {
    /// A write in a task of its own, returned once it waits at the controller's write gate.
    func writeWaitingAtTheGate(
        _ offline: SovariaOffline, _ request: DataRequest
    ) async -> Task<
        WriteOutcome, any Error
    > {
        let waiting = offline.writeGate.waiterCount
        let write = Task { try await offline.write(request) }
        // Not a wait for time: the write is in the line once the count says so.
        while offline.writeGate.waiterCount == waiting { await Task.yield() }
        return write
    }

    @Test func aWriteCancelledWhileWaitingEndsWithCancellationAndTheOthersGoThroughInOrder() async throws {
        let transport = HeldTransport()
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.memoryPressure = nil  // the machine's own pressure must not shed caches mid-test
        configuration.timer = ManualTimer()
        let offline = try await SovariaOffline(
            store: MemoryOfflineStore(), transport: transport, configuration: configuration)
        let first = Task { try await offline.write(insert(1)) }
        await transport.firstRequestArrived()  // the first write holds the gate
        let second = await writeWaitingAtTheGate(offline, insert(2))
        let third = await writeWaitingAtTheGate(offline, insert(3))

        second.cancel()
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(offline.writeGate.waiterCount == 1, "the cancelled write left the line")
        transport.releaseFirstRequest()
        #expect(try await first.value == .sent(DataResponse(status: 201, body: "[]")))
        #expect(try await third.value == .sent(DataResponse(status: 201, body: "[]")))
        #expect(transport.server.received.map(\.body) == [insert(1).body, insert(3).body])
        #expect(try await offline.pendingWrites().isEmpty && offline.writeGate.waiterCount == 0)
    }
}
