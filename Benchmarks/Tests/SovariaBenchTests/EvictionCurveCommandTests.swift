import Foundation
import Sovaria
import SovariaTestKit
import Synchronization
import Testing

@testable import sovaria_bench

/// `sovaria-bench eviction-curve`'s one check that the curve is the policy's and not the
/// engine's: stores that disagree on hits fail the command (`SovariaBench.main` exits with
/// status 2 on any ``BenchError``), after the tables are printed and written.
@Suite struct EvictionCurveCommandTests {
    /// A memory store that loses every cached answer: each read of one misses, as a broken
    /// engine's would.
    final class AnswerLosingStore: OfflineStore {
        let base = MemoryOfflineStore()
        let lostReads = Mutex(0)

        func get(_ key: String) async throws -> String? {
            if key.hasPrefix("sov:cache:l2:") {
                lostReads.withLock { $0 += 1 }
                return nil
            }
            return try await base.get(key)
        }
        func set(_ key: String, _ value: String) async throws { try await base.set(key, value) }
        func delete(_ key: String) async throws { try await base.delete(key) }
        func keys(_ prefix: String) async throws -> [String] { try await base.keys(prefix) }
        func write(_ batch: [StoreWrite]) async throws { try await base.write(batch) }
    }

    @Test func storesWhoseHitsDifferFailTheCommand() async throws {
        let folder = try TemporaryFolder()
        var command = try EvictionCurveCommand.parse([
            "--keys", "200", "--requests", "1500", "--bounds", "20,50", "--store", "memory:", "--store",
            "sqlite:\(folder.url.path)/c.sqlite", "--dir", folder.child("work").path, "--json",
            folder.child("c.json").path,
        ])
        let losing = AnswerLosingStore()
        command.openStore = { url in url.engine == "sqlite" ? losing : MemoryOfflineStore() as any OfflineStore }
        await #expect {
            try await command.run()
        } throws: { error in
            guard case .hitsDiffer(let bounds) = error as? BenchError else { return false }
            return bounds == [20, 50]
        }
        #expect(losing.lostReads.withLock { $0 } > 0, "the cache read the losing store")
        // The figures are written before the command fails, so the difference can be looked at.
        #expect(FileManager.default.fileExists(atPath: folder.child("c.json").path))
    }

    @Test func storesWithTheSameHitsPass() async throws {
        let folder = try TemporaryFolder()
        var command = try EvictionCurveCommand.parse([
            "--keys", "200", "--requests", "1500", "--bounds", "20,50", "--store", "memory:", "--store",
            "sqlite:\(folder.url.path)/c.sqlite", "--dir", folder.child("work").path,
        ])
        command.openStore = { _ in MemoryOfflineStore() }
        try await command.run()
    }
}
