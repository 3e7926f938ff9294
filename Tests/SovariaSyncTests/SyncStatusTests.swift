import Foundation
import Sovaria
import SovariaQueue
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaSync

/// What the status says about the network: nothing before a try, why the queue waits while
/// offline, and when it is tried again.
@Suite struct SyncStatusTests {
    @Test(arguments: SyncEngine.all)
    func aNewControllerSaysNothingWasTriedYetAndAReadThatGetsThroughSaysReachable(
        _ engine: SyncEngine
    ) async throws {
        let rig = try await Rig(engine)
        #expect(rig.offline.status.network == .untried)
        #expect(rig.offline.status.isOnline, "not known to be offline")
        rig.transport.answer(DataResponse(status: 200, body: "[]"))
        _ = try await rig.offline.read(DataRequest(method: "GET", path: "/rest/v1/notes"))
        #expect(rig.offline.status.network == .reachable)
    }

    @Test(arguments: SyncEngine.all)
    func aWriteThatFindsNoNetworkSaysWhyItWaitsAndWhenItIsTriedAgain(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        guard case .queued(let write) = try await rig.offline.write(insert(1)) else {
            Issue.record("an offline write was not queued")
            return
        }
        let status = rig.offline.status
        #expect(status.network == .unreachable && !status.isOnline)
        #expect(status.lastError?.kind == .offline)
        #expect(status.lastError?.write.id == write.id, "the write that waits")
        #expect(status.nextRetryAt == rig.clock.read().addingTimeInterval(30), "the next periodic flush")
        #expect(rig.reported.isEmpty, "a state, not news: the error stream stays quiet")
    }

    @Test(arguments: SyncEngine.all)
    func aFlushThatFindsNoNetworkSaysWhyAndWhenAndTheReconnectClearsIt(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        _ = try await rig.offline.write(insert(1))
        rig.clock.advance(seconds: 45)
        #expect(try await rig.offline.flush() == 0)
        var status = rig.offline.status
        #expect(status.lastError?.kind == .offline)
        #expect(status.nextRetryAt == rig.clock.read().addingTimeInterval(30), "counted from the last try")
        #expect(status.pendingCount == 1)

        rig.transport.online = true
        #expect(try await rig.offline.flush() == 1)
        status = rig.offline.status
        #expect(status.network == .reachable)
        #expect(status.lastError == nil && status.nextRetryAt == nil)
    }

    @Test(arguments: SyncEngine.all)
    func aReadThatGetsThroughClearsTheOfflineReasonAndTheFlushItStartsSyncs(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        _ = try await rig.offline.write(insert(1))
        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 200, body: "[]"))
        _ = try await rig.offline.read(DataRequest(method: "GET", path: "/rest/v1/notes"))
        #expect(rig.offline.status.lastError?.kind != .offline, "the network is back")
        await rig.offline.waitForRunningFlush()
        #expect(rig.offline.status.pendingCount == 0)
    }
}
