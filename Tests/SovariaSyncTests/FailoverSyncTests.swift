import Foundation
import Sovaria
import SovariaPostgREST
import SovariaPostgres
import SovariaQueue
import SovariaTestServers
import Testing

@testable import SovariaSync

/// Issue 28, above the queue: an app's `SovariaOffline.write` calls made while its PostgreSQL
/// store fails over (a primary and a synchronous standby, the primary killed with SIGKILL,
/// the standby promoted). Every write `write` returned as queued is sent once, in order, when
/// the device is online again; none is doubled or lost. One trial in `make test`, 10 in
/// `make reliability`.
@Suite(.serialized) struct FailoverSyncTests {
    static let trials = ProcessInfo.processInfo.environment["SOVARIA_RELIABILITY"] == "full" ? 10 : 1

    @Test(.timeLimit(.minutes(10)))
    func everyWriteQueuedThroughAFailoverIsSentOnceInOrder() async throws {
        var unknownOrRefused = 0
        for trial in 0..<Self.trials {
            let pair = try await PostgresFailoverPair.start()
            do {
                unknownOrRefused += try await Self.trial(trial, on: pair)
                try await pair.destroy()
            } catch {
                try? await pair.destroy()
                throw error
            }
        }
        print(
            "failover sync: \(Self.trials) trials, \(Self.trials * 60) writes sent once in order, "
                + "\(unknownOrRefused) refused and retried")
    }

    /// One trial: 60 writes through a failover, then a flush; returns how many calls were refused.
    static func trial(_ trial: Int, on pair: PostgresFailoverPair) async throws -> Int {
        var refused = 0
        do {
            var configuration = PostgresOfflineStore.Configuration()
            configuration.connectTimeout = .seconds(2)
            let store = try PostgresOfflineStore(
                connection: pair.conninfo, table: "sovaria_failover_sync", durability: .synced,
                configuration: configuration)
            let transport = ScriptedTransport()
            transport.online = false
            var settings = SovariaOffline.Configuration(api: PostgREST())
            settings.memoryPressure = nil  // the machine's own pressure must not shed caches mid-test
            settings.timer = ManualTimer()
            let offline = try await SovariaOffline(store: store, transport: transport, configuration: settings)
            var queued: [QueuedWrite] = []
            let killAfter = Int.random(in: 5...40)
            var failover: Task<Void, any Error>?
            for index in 0..<60 {
                if index == killAfter { failover = Task { try await pair.failOver() } }
                let request = DataRequest(
                    method: "POST", path: "/rest/v1/notes", body: #"{"t":\#(trial),"n":\#(index)}"#)
                while true {
                    do {
                        guard case .queued(let write) = try await offline.write(request) else {
                            Issue.record("an offline write was not queued")
                            return refused
                        }
                        queued.append(write)
                        break
                    } catch let error as OfflineStoreError where error.code == .io {
                        refused += 1  // definitely not queued: try again
                        await Task.yield()
                    }
                }
            }
            try await failover?.value
            transport.online = true
            var sent = 0
            while offline.queue.count > 0 { sent += try await offline.flush() }
            let posted = transport.received.filter { $0.method == "POST" }
            #expect(sent == queued.count)
            #expect(posted.map(\.body) == queued.map(\.request.body), "trial \(trial): sent once each, in order")
            #expect(transport.applied == queued.map(\.id), "trial \(trial): each idempotency key applied once")
            await offline.close()
        }
        return refused
    }
}
