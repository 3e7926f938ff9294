import Foundation
import Sovaria
import SovariaPostgres
import SovariaTestServers
import Testing

@testable import sovaria_crash_writer

/// The crash writer on PostgreSQL: kill -9 of the client mid-batch loses no acknowledged write
/// and never leaves half a batch; processes writing disjoint keys into one table lose nothing.
@Suite(.serialized) struct PostgresCrashTests {
    @Test func acknowledgedWritesSurviveKill9OfTheClient() async throws {
        let conninfo = try await PostgresCluster.shared().makeDatabase()
        var acknowledged = Acknowledged()
        for round in 0..<CrashSafetyTests.rounds {
            let durability = round.isMultiple(of: 2) ? "flushed" : "synced"
            let killAfter = Int.random(in: 1...300)
            let acks = try await CrashChild.run(
                engine: "postgres", path: conninfo, durability: durability, first: round * 10_000_000,
                killAfterAcknowledgements: killAfter)
            acknowledged.formUnion(acks)
            #expect(acks.sets.count + acks.batches.count >= killAfter, "round \(round): child stopped early")
            let store = try await CrashStores.open("postgres", location: conninfo, durability: .synced)
            try await CrashSafetyTests.verify(store, acknowledged: acknowledged, round: round)
        }
    }

    /// One process writes while six others, one after another, write keys of their own into the
    /// same table and are killed: every write any of them acknowledged is there.
    @Test func processesWritingDisjointKeysLoseNothing() async throws {
        let conninfo = try await PostgresCluster.shared().makeDatabase()
        async let writer = CrashChild.run(
            engine: "postgres", path: conninfo, durability: "flushed", first: 0, killAfterAcknowledgements: 1_500)
        var acknowledged = Acknowledged()
        for round in 1...6 {
            let visitor = try await CrashChild.run(
                engine: "postgres", path: conninfo, durability: "flushed", first: round * 10_000_000,
                killAfterAcknowledgements: 40)
            #expect(visitor.sets.count + visitor.batches.count >= 40, "visitor \(round) stopped early")
            acknowledged.formUnion(visitor)
        }
        let long = try await writer
        #expect(long.sets.count + long.batches.count >= 1_500, "the writer stopped early")
        acknowledged.formUnion(long)
        let store = try await CrashStores.open("postgres", location: conninfo, durability: .synced)
        try await CrashSafetyTests.verify(store, acknowledged: acknowledged, round: 0)
        #expect(try await store.keys("sov:crash:n:").count >= acknowledged.sets.count)
    }
}
