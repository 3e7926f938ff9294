import Foundation
import Sovaria
import SovariaPostgREST
import SovariaSync
import SovariaTestEngines
import Testing

@testable import sovaria_crash_writer

/// kill -9 while users switch on one store (issue 60): in writes, flushes and sign-outs that keep
/// unsynced writes. After the kills, each user signs in once more and flushes: every write a
/// user's controller acknowledged reached the server once, in that user's order, and every write
/// was sent with its author's token.
@Suite(.serialized) struct AccountSwitchCrashTests {
    static let rounds = 8

    @Test(arguments: TestEngine.onDisk)
    func aKillMidSwitchLosesNoWriteAndSendsNoneAsAnotherUser(engine: String) async throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("sovaria-switch-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var acknowledged: [Int] = []
        var inFlight: [Int] = []
        var killedInSwitches = 0
        for round in 0..<Self.rounds {
            let acks = try await CrashChild.run(
                engine: AccountSwitchCrashWorkload.enginePrefix + engine, path: folder.path,
                durability: round.isMultiple(of: 2) ? "flushed" : "synced", first: round * 1_000,
                // Odd rounds aim at the second user's sign-out: it starts right after the sixth
                // write is acknowledged (that turn does not flush). Lines read together may move
                // the kill to the next call; the count below says where they landed.
                killAfterAcknowledgements: round.isMultiple(of: 2) ? Int.random(in: 2...30) : 6)
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
            if acks.queue.last?.kind == "switching" { killedInSwitches += 1 }
        }
        // Every user signs in once more and flushes what the kills left queued.
        let store = try await CrashStores.open(engine, at: folder, durability: .synced)
        for user in AccountSwitchCrashWorkload.users {
            let (offline, server) = try await AccountSwitchCrashWorkload.signIn(user, on: store, folder: folder)
            server.online = true
            _ = try await offline.flush()
            #expect(try await offline.pendingWrites().isEmpty, "\(user)'s queue flushed")
            await offline.close()
        }

        let received = AuthorLogServer.received(at: folder.appendingPathComponent("server.log").path)
        #expect(received.allSatisfy { $0.author == $0.user }, "a write sent with another user's token")
        var appliedInOrder: [Int] = []  // each key's first arrival: what a server honouring keys applies
        var seenKeys: Set<String> = []
        var keysByNumber: [Int: Set<String>] = [:]
        var authorOf: [Int: String] = [:]
        for write in received {
            keysByNumber[write.number, default: []].insert(write.key)
            authorOf[write.number] = write.author
            if seenKeys.insert(write.key).inserted { appliedInOrder.append(write.number) }
        }
        for number in acknowledged {
            #expect(keysByNumber[number]?.count == 1, "write \(number): keys \(keysByNumber[number] ?? [])")
        }
        #expect(
            appliedInOrder.allSatisfy(Set(acknowledged + inFlight).contains), "the server applied a write nobody queued"
        )
        #expect(Set(appliedInOrder).count == appliedInOrder.count, "a write applied twice under two keys")
        for user in AccountSwitchCrashWorkload.users {
            let mine = Set(acknowledged.filter { authorOf[$0] == user })
            #expect(
                appliedInOrder.filter(mine.contains) == acknowledged.filter(mine.contains),
                "\(user)'s writes lost or reordered")
        }
        print(
            "switch crash (\(engine)): \(acknowledged.count) acknowledged writes, \(killedInSwitches) kills in a sign-out"
        )
    }
}
