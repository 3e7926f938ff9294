import Foundation
import Sovaria
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import sovaria_crash_writer

/// Large inputs, each engine in a process of its own (the crash writer's ``BulkInputWorkload``)
/// so that its peak memory can be read: a 64 MiB value reads back whole, a batch of 100,000 sets
/// is applied, and the same batch with one invalid key in the middle throws `.invalidKey` and
/// changes nothing; the process's peak resident memory stays under eight times the large value
/// (plus 64 MiB for the runtime). The short run uses 16 MiB and 2,000 writes.
///
/// The generated keys and values (every plane, `\0`, 0 to 600 bytes, invalid lengths) are a
/// check of the conformance suite (`generatedKeysAndValues`), which every store runs.
@Suite struct BulkInputTests {
    static let largeMebibytes = FaultTrials.count(short: 16, full: 64)
    static let batchSize = FaultTrials.count(short: 2_000, full: 100_000)

    /// The three steps on one engine, its memory, and the store reopened here (see the suite).
    @Test(arguments: TestEngine.onDisk + ["encrypted-lmdb"])
    func largeValuesAndBatchesAreWholeOrRefusedWithBoundedMemory(engine: String) async throws {
        let folder = try TemporaryFolder()
        let store = folder.child("store")
        let lines = try await PostgresCluster.onThread {
            try ChildProcess.run(
                Self.writer.path,
                [BulkInputWorkload.enginePrefix + engine, store.path, "flushed", String(Self.largeMebibytes)],
                environment: ["SWIFT_BACKTRACE": "enable=no", "SOVARIA_BULK_BATCH": String(Self.batchSize)])
        }.split(separator: "\n").map(String.init)
        let steps = lines.filter { !$0.hasPrefix("rss ") }
        #expect(steps == ["large OK", "batch OK", "badbatch invalidKey", "done"], "\(engine): \(lines)")
        let peakKiB = lines.compactMap { $0.hasPrefix("rss ") ? Int($0.dropFirst(4)) : nil }.max() ?? 0
        let boundKiB = (8 * Self.largeMebibytes + 64) * 1_024
        #expect(peakKiB > 0 && peakKiB < boundKiB, "\(engine): peak resident \(peakKiB) KiB, bound \(boundKiB) KiB")
        print("bulk-input \(engine): \(Self.largeMebibytes) MiB value, \(Self.batchSize) writes, peak \(peakKiB) KiB")

        let reopened = try await CrashStores.open(engine, location: store.path, durability: .synced)
        let large = try await reopened.get(BulkInputWorkload.largeKey)
        #expect(large == BulkInputWorkload.largeValue(mebibytes: Self.largeMebibytes), "\(engine): the large value")
        #expect(try await reopened.keys("sov:bulk:").count == Self.batchSize + 1, "\(engine): the batch, whole")
        for index in [0, Self.batchSize / 2 - 1, Self.batchSize / 2 + 1, Self.batchSize - 1] {
            #expect(
                try await reopened.get(BulkInputWorkload.key(index)) == BulkInputWorkload.value(index),
                "\(engine): entry \(index) after the refused batch")
        }
    }

    /// The crash writer, built beside this test bundle.
    private static var writer: URL {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("sovaria-crash-writer")
    }
}
