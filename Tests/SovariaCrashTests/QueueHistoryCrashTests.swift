import Foundation
import Sovaria
import SovariaQueue
import SovariaTestEngines
import SovariaTestServers
import Testing

@testable import sovaria_crash_writer

/// The queue's history as the server saw it: several tasks write through one controller, a
/// flusher sends what was queued to the scripted server (`restserver.py` over PostgreSQL, which
/// honours `Idempotency-Key`), and the process is killed with SIGKILL at a random moment, again
/// and again on one store (``QueueHistoryWorkload``). After a last run drains the queue, the
/// server's applied history (its request log: answered 2xx and not replayed) holds every
/// acknowledged write exactly once, nothing nobody wrote, no write twice, each task's writes in
/// the order it made them, and the queued writes in the order of their sequences; no request
/// was refused.
///
/// ``FlushCrashTests`` kills inside the one window of a lost answer with an in-process server;
/// this test adds concurrent writers, a flusher racing them, many kills on one store, and
/// a real HTTP server. The long run (`SOVARIA_RELIABILITY=full`) kills each engine's writer 125 times (500 in
/// all); the short one twice, after fewer writes.
@Suite struct QueueHistoryCrashTests {
    static let isFull = ProcessInfo.processInfo.environment["SOVARIA_RELIABILITY"] == "full"
    static let rounds = isFull ? 125 : 2

    /// The rounds of kills, the drain, and the checks of the server's log (see the suite).
    @Test(arguments: TestEngine.onDisk)
    func theServersHistoryHasNoLostDuplicatedOrReorderedWrite(engine: String) async throws {
        let server = try await RESTServer.start()
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("sovaria-history-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var announced: Set<Int> = []
        var acknowledged: Set<Int> = []
        var queuedInOrder: [Int] = []  // acknowledged queued writes, by sequence
        var task: [Int: Int] = [:]  // note → (round, task), as round * tasks + task
        var stepOf: [Int: Int] = [:]  // note → its place in its task
        for round in 0..<Self.rounds {
            let acks = try await CrashChild.run(
                engine: QueueHistoryWorkload.enginePrefix + engine, path: folder.path,
                durability: round.isMultiple(of: 2) ? "flushed" : "synced", first: server.port,
                killAfterAcknowledgements: Int.random(in: 3...(Self.isFull ? 80 : 30)))
            let base = try #require(acks.queue.first { $0.kind == "base" }?.index, "round \(round): no base")
            var queued: [(sequence: UInt64, note: Int)] = []
            for event in acks.queue where event.kind != "base" {
                let offset = event.index - base
                task[event.index] = round * QueueHistoryWorkload.tasks + offset % QueueHistoryWorkload.tasks
                stepOf[event.index] = offset / QueueHistoryWorkload.tasks
                switch event.kind {
                case "enqueuing": announced.insert(event.index)
                case "sent":
                    acknowledged.insert(event.index)
                    #expect(
                        event.sequence == 201, "round \(round): note \(event.index) answered \(event.sequence ?? 0)")
                case "queued":
                    acknowledged.insert(event.index)
                    queued.append((event.sequence ?? 0, event.index))
                default: Issue.record("round \(round): unknown line \(event.kind)")
                }
            }
            queuedInOrder += queued.sorted { $0.sequence < $1.sequence }.map(\.note)
        }
        let drained = try await PostgresCluster.onThread {
            try ChildProcess.run(
                CrashChild.executable.path,
                [QueueHistoryWorkload.enginePrefix + engine, folder.path, "synced", String(server.port)],
                environment: ["SOVARIA_HISTORY_DRAIN": "1", "SWIFT_BACKTRACE": "enable=no"])
        }
        #expect(drained.hasPrefix("drained "), "\(drained)")

        let requests = try await server.requests().filter { $0.idempotencyKey?.hasPrefix("hist-") == true }
        let note = { (request: RESTServer.ReceivedRequest) in Int(request.idempotencyKey!.dropFirst(5)) ?? -1 }
        for request in requests where !(200..<300).contains(request.status ?? 0) {
            Issue.record("note \(note(request)) was answered \(request.status ?? 0)")
        }
        let applied = requests.filter { (200..<300).contains($0.status ?? 0) && !$0.replayed }.map(note)
        #expect(Set(applied).count == applied.count, "a write applied twice: \(Self.repeated(applied))")
        #expect(acknowledged.subtracting(applied).isEmpty, "lost: \(acknowledged.subtracting(applied).sorted())")
        #expect(Set(applied).isSubset(of: announced), "applied a write nobody made")
        #expect(try await server.query("SELECT count(*) FROM notes") == ["\(Set(applied).count)"])
        for (owner, notes) in Dictionary(grouping: applied, by: { task[$0] ?? -1 }) {
            let steps = notes.map { stepOf[$0] ?? -1 }
            #expect(steps == steps.sorted(), "task \(owner)'s writes were applied out of order: \(steps)")
        }
        let queuedSet = Set(queuedInOrder)
        #expect(applied.filter(queuedSet.contains) == queuedInOrder, "queued writes applied out of sequence")
        print(
            "queue-history \(engine): \(Self.rounds) kills, \(announced.count) writes made, "
                + "\(acknowledged.count) acknowledged (\(queuedInOrder.count) queued), \(applied.count) applied, "
                + "\(requests.filter(\.replayed).count) replays recognised")
    }

    /// The notes that occur more than once in `notes`.
    private static func repeated(_ notes: [Int]) -> [Int] {
        Dictionary(grouping: notes, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
    }
}
