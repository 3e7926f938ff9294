import Foundation
import Sovaria
import SovariaPostgres
import SovariaTestServers
import Testing

@testable import SovariaQueue

/// The write queue works unchanged on a PostgreSQL store that reads from streaming standbys: it
/// sees one store. Every read of its index right after its own writes must see them (the store's
/// read-your-writes), and a queue opened on a new store instance must see everything the first
/// one queued (the new store's reads start at the primary's position when it opened).
@Suite struct WriteQueueOnStandbysTests {
    @Test func aQueueReadsItsOwnWritesAndAReopenedOneSeesThemAll() async throws {
        let rig = try await PostgresStandbyCluster.shared()
        let table = "queue_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(12)
        func store() throws -> PostgresOfflineStore {
            var configuration = PostgresOfflineStore.Configuration()
            configuration.readPolicy = .standbyIfCaughtUp
            return try PostgresOfflineStore(
                primary: rig.primary, standbys: rig.standbys, table: String(table), configuration: configuration)
        }
        let first = try store()
        let queue = try await WriteQueue(store: first)
        var queued: [QueuedWrite] = []
        for index in 0..<30 {
            queued.append(
                try await queue.enqueue(DataRequest(method: "POST", path: "/rest/v1/notes", body: #"{"n":\#(index)}"#)))
            #expect(try await queue.pending().map(\.id) == queued.map(\.id))
        }
        for write in queued.prefix(10) { #expect(try await queue.remove(write.id)) }
        #expect(try await queue.pending().map(\.id) == queued.dropFirst(10).map(\.id))

        let reopened = try await WriteQueue(store: try store())
        #expect(try await reopened.pending().map(\.id) == queued.dropFirst(10).map(\.id))
    }
}
