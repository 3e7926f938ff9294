import Foundation
import Sovaria
import SovariaQueue
import SovariaTestKit
import Testing

@testable import SovariaSync

/// A write sent at once ends as one sent from the queue does: a refusal in the rejected list and
/// reported, 401 left to the app, 408 and 5xx queued for later.
@Suite struct DirectSendTests {
    @Test(arguments: SyncEngine.all)
    func aDirectSendTheServerRefusesMovesToTheRejectedListAndIsReported(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.answer(DataResponse(status: 409, body: "duplicate key value violates unique constraint"))
        let outcome = try await rig.offline.write(insert(1))
        guard case .rejected(let rejected) = outcome else {
            Issue.record("a refused direct send was not reported as rejected: \(outcome)")
            return
        }
        let sentKey = try #require(rig.transport.received.first?.headers[SovariaOffline.idempotencyHeader])
        #expect(rejected.id == sentKey, "kept under the key it was sent with")
        #expect(rejected.status == 409 && rejected.message == "duplicate key value violates unique constraint")
        #expect(rejected.write.request == insert(1), "the request as made, as the queue keeps it")
        #expect(rejected.write.attempts == 0)
        #expect(try await rig.offline.rejectedWrites() == [rejected])
        #expect(try await rig.offline.pendingWrites().isEmpty)
        #expect(rig.reported.map(\.kind) == [.rejected(rejected)])
        #expect(rig.offline.status.rejectedCount == 1 && rig.offline.status.lastError?.kind == .rejected(rejected))
        // Kept as a refusal from the queue is: it can be requeued (a new attempt, under a new key),
        // and then it syncs.
        let requeued = try await rig.offline.requeue(rejected.id)
        #expect(try await rig.offline.flush() == 1)
        #expect(rig.transport.applied == [requeued.id] && requeued.id != sentKey)
    }

    @Test(arguments: SyncEngine.all)
    func aQueuedWriteTheServerRefusesMovesToTheRejectedListAndIsReported(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        guard case .queued(let write) = try await rig.offline.write(insert(1)) else {
            Issue.record("a write made offline was not queued")
            return
        }
        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 409, body: "duplicate key value violates unique constraint"))
        #expect(try await rig.offline.flush() == 0)
        let rejected = try #require(try await rig.offline.rejectedWrites().first)
        #expect(rejected.id == write.id)
        #expect(rejected.status == 409 && rejected.message == "duplicate key value violates unique constraint")
        #expect(rejected.write.request == insert(1))
        #expect(try await rig.offline.pendingWrites().isEmpty)
        #expect(rig.reported.map(\.kind) == [.rejected(rejected)])
        #expect(rig.offline.status.rejectedCount == 1 && rig.offline.status.lastError?.kind == .rejected(rejected))
    }

    @Test(arguments: SyncEngine.all)
    func aDirectSendAnswered401IsSentAnd408Or5xxIsQueued(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.answer(DataResponse(status: 401, body: "JWT expired"))
        #expect(try await rig.offline.write(insert(1)) == .sent(DataResponse(status: 401, body: "JWT expired")))
        #expect(try await rig.offline.rejectedWrites().isEmpty && rig.reported.isEmpty)
        #expect(try await rig.offline.pendingWrites().isEmpty, "a 401 to a direct send is the app's to handle")
        for status in [408, 500, 503] {
            rig.transport.answer(DataResponse(status: status))
            let outcome = try await rig.offline.write(insert(status))
            guard case .queued(let write) = outcome else {
                Issue.record("a direct send answered \(status) was not queued: \(outcome)")
                return
            }
            #expect(write.id == rig.transport.received.last?.headers[SovariaOffline.idempotencyHeader])
            #expect(try await rig.offline.flush() == 1)
        }
        #expect(try await rig.offline.rejectedWrites().isEmpty && rig.reported.isEmpty)
    }
}
