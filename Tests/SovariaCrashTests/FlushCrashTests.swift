import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import SovariaTestEngines
import Testing

@testable import sovaria_crash_writer

/// kill -9 while the controller queues and flushes, and right after the server applied a write
/// (before the queue removed it): after a restart and one more flush, the server has applied
/// every acknowledged write once (by `Idempotency-Key`), in the order they were queued, and a
/// write sent again carried the same key.
@Suite(.serialized) struct FlushCrashTests {
    static let rounds = 8

    @Test(arguments: TestEngine.onDisk)
    func noAcknowledgedWriteIsLostDuplicatedOrReordered(engine: String) async throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("sovaria-flush-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var acknowledged: [Int] = []
        var inFlight: [Int] = []
        for round in 0..<Self.rounds {
            let killAfter = Int.random(in: 5...120)
            let acks = try await CrashChild.run(
                engine: FlushCrashWorkload.enginePrefix + engine, path: folder.path,
                durability: round.isMultiple(of: 2) ? "flushed" : "synced", first: round * 10_000_000,
                killAfterAcknowledgements: killAfter)
            // The child dies by the test's kill, or by its server's right after a write is applied.
            #expect(!acks.queue.isEmpty, "round \(round): child wrote nothing")
            var enqueuing: Int?
            for event in acks.queue {
                switch event.kind {
                case "enqueuing": enqueuing = event.index
                case "queued":
                    acknowledged.append(event.index)
                    enqueuing = nil
                default: break
                }
            }
            if let enqueuing { inFlight.append(enqueuing) }
        }
        // Restart: one more flush sends whatever the last kill left in the queue.
        let store = try await CrashStores.open(engine, at: folder, durability: .synced)
        let server = LogServer(path: folder.appendingPathComponent("server.log").path)
        let offline = try await SovariaOffline(
            store: store, transport: server, configuration: .init(api: PostgREST()))
        _ = try await offline.flush()
        #expect(try await offline.pendingWrites().isEmpty)
        await offline.close()

        let received = try server.received()
        #expect(received.count > Set(received.map(\.key)).count, "no write was sent twice: the window was never hit")
        var keysByNumber: [Int: Set<String>] = [:]
        var appliedInOrder: [Int] = []  // first arrival of each key: what a server honouring keys applies
        var seenKeys: Set<String> = []
        for (key, number) in received {
            keysByNumber[number, default: []].insert(key)
            if seenKeys.insert(key).inserted { appliedInOrder.append(number) }
        }
        for number in acknowledged {
            #expect(keysByNumber[number]?.count == 1, "write \(number): keys \(keysByNumber[number] ?? [])")
        }
        let allowed = Set(acknowledged + inFlight)
        #expect(appliedInOrder.allSatisfy(allowed.contains), "the server applied a write nobody queued")
        #expect(appliedInOrder.filter { Set(acknowledged).contains($0) } == acknowledged, "lost or reordered")
        #expect(Set(appliedInOrder).count == appliedInOrder.count, "a write applied twice under two keys")
    }
}
