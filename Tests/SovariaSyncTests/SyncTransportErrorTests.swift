import Foundation
import SovariaQueue
import Testing

@testable import SovariaSync

/// The controller treats only ``SyncTransportError/Code/offline`` as "no network"; the
/// transport's other codes fail the request like any other error.
@Suite struct SyncTransportErrorTests {
    static let failure = SyncTransportError(.failed, "scripted: the request failed")

    @Test func aFailureOtherThanOfflineFailsADirectWriteAndQueuesNothing() async throws {
        let rig = try await Rig(.memory)
        rig.transport.fail(with: Self.failure)
        let error = await #expect(throws: SyncTransportError.self) { try await rig.offline.write(insert(1)) }
        #expect(error == Self.failure)
        #expect(try await rig.offline.pendingWrites().isEmpty)
        #expect(rig.offline.online, "a failure that is not offline does not take the controller offline")
    }

    @Test func aFailureOtherThanOfflineKeepsAQueuedWriteAtTheHeadForALaterTry() async throws {
        let rig = try await Rig(.memory)
        rig.transport.online = false
        guard case .queued(let queued) = try await rig.offline.write(insert(1)) else {
            Issue.record("the write was not queued while offline")
            return
        }
        rig.transport.online = true
        rig.transport.fail(with: Self.failure)
        #expect(try await rig.offline.flush() == 0)
        let pending = try await rig.offline.pendingWrites()
        #expect(pending.map(\.id) == [queued.id])
        #expect(pending.first?.attempts == 1, "counted as a failed try, not as a time offline")
        guard case .retryLater(status: 0, _) = rig.reported.last?.kind else {
            Issue.record("expected a retryLater report, got \(rig.reported)")
            return
        }
        #expect(rig.reported.last?.message == "\(Self.failure)")
    }

    @Test func aFailureOtherThanOfflineFailsAReadWithoutTakingTheControllerOffline() async throws {
        let rig = try await Rig(.memory)
        rig.transport.fail(with: Self.failure)
        let select = DataRequest(method: "GET", path: "/rest/v1/notes?select=*")
        let error = await #expect(throws: SyncTransportError.self) {
            try await rig.offline.read(select, policy: .networkOnly)
        }
        #expect(error?.code == .failed)
        #expect(rig.offline.online)
    }

    @Test func offlineIsTheCodeTheControllerQueuesOn() async throws {
        let rig = try await Rig(.memory)
        rig.transport.fail(with: .offline("scripted: no route"))
        guard case .queued = try await rig.offline.write(insert(1)) else {
            Issue.record("an offline failure did not queue the write")
            return
        }
        #expect(!rig.offline.online)
    }
}
