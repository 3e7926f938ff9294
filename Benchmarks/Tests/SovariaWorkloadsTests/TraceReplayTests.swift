import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaLMDB
import SovariaSQLite
import SovariaTestKit
import Testing

@testable import SovariaWorkloads

/// An app's calls recorded by ``RecordingOfflineStore`` and replayed by the workload driver
/// (`sovaria-bench replay`, issue 36): the replay makes the same calls, so the store it runs on
/// ends with the keys the app's store ended with, and every call is counted once.
@Suite struct TraceReplayTests {
    /// An app's session: sets, a batch, deletes, reads, scans and a compact.
    static func session(on store: any OfflineStore) async throws -> Int {
        var calls = 0
        for index in 0..<40 {
            try await store.set("sov:cache:list\(index)", String(repeating: "x", count: index * 10))
            calls += 1
        }
        try await store.write(
            (0..<10).map { .set(key: "sov:queue:\($0)", value: "{\"op\":\($0)}") } + [.delete(key: "sov:cache:list3")])
        calls += 1
        for index in stride(from: 0, to: 40, by: 4) {
            try await store.delete("sov:cache:list\(index)")
            _ = try await store.get("sov:cache:list\(index + 1)")
            calls += 2
        }
        _ = try await store.entries("sov:cache:", after: "sov:cache:list2", limit: 7)
        _ = try await store.keys("sov:queue:")
        try await store.compact()
        return calls + 3
    }

    @Test(arguments: ["memory", "sqlite", "lmdb"])
    func aRecordedSessionReplaysToTheSameKeys(engine: String) async throws {
        let folder = try TemporaryFolder()
        let original = MemoryOfflineStore()
        let recorder = RecordingOfflineStore(wrapping: original, traceFile: folder.child("app.sovtrace"))
        let calls = try await Self.session(on: recorder)
        recorder.stopRecording()

        let target: any OfflineStore =
            switch engine {
            case "sqlite": try SQLiteOfflineStore(fileURL: folder.child("replay.sqlite"))
            case "lmdb": try LMDBOfflineStore(directory: folder.child("replay-lmdb"))
            default: MemoryOfflineStore()
            }
        let reader = try TraceReader(path: folder.child("app.sovtrace").path)
        let result = await WorkloadDriver(store: target).run(reader)
        let run = try #require(result.phase(.run))
        #expect(run.total.count == UInt64(calls))
        #expect(run.total.failures == 0, "\(String(describing: run.total.firstFailure))")
        #expect(run.operations[.batch]?.count == 1)
        #expect(run.operations[.scan]?.count == 1)
        #expect(run.operations[.compact]?.count == 1)
        #expect(try await target.keys("sov:") == original.keys("sov:"))
        // Values are the replay's own bytes of the recorded sizes.
        for key in try await original.keys("sov:") {
            #expect(try await target.get(key)?.utf8.count == original.get(key)?.utf8.count, "\(key)")
        }
    }

    /// A size or string length past 64 MiB is a damaged record, refused where it is read: never
    /// a negative size, never the reader waiting for the rest of the file as one record.
    @Test(arguments: [UInt64(1) << 40, UInt64.max >> 1, TraceCodec.maxCount + 1])
    func aCountPastTheCapIsAMalformedRecord(count: UInt64) throws {
        let folder = try TemporaryFolder()
        var bytes = TraceCodec.header(keysHashed: false)
        bytes += [2, 0, 1, UInt8(ascii: "k")]  // update, 0 ns, key "k"
        TraceCodec.appendVarint(count, to: &bytes)
        bytes += [1, 0, 1, UInt8(ascii: "k")]  // a read after it
        try Data(bytes).write(to: folder.child("big.sovtrace"))
        let reader = try TraceReader(path: folder.child("big.sovtrace").path)
        #expect(throws: TraceFileError.malformedRecord(offset: 16, field: .tooLarge)) { _ = try reader.nextRecord() }
        var lengthBytes = TraceCodec.header(keysHashed: false) + [1, 0]
        TraceCodec.appendVarint(count, to: &lengthBytes)
        try Data(lengthBytes + [UInt8](repeating: 0x61, count: 100)).write(to: folder.child("long.sovtrace"))
        let long = try TraceReader(path: folder.child("long.sovtrace").path)
        #expect(throws: TraceFileError.malformedRecord(offset: 16, field: .tooLarge)) { _ = try long.nextRecord() }
    }

    @Test func aGeneratedStreamWrittenAsATraceReadsBackRecordForRecord() throws {
        let folder = try TemporaryFolder()
        let spec = try WorkloadSpec.e.applying(["recordcount": "200", "operationcount": "500"])
        let stream = try WorkloadStream(spec: spec, seed: 3)
        let writer = try TraceWriter(path: folder.child("e.sovtrace").path)
        for record in stream { try writer.append(record) }
        try writer.close()
        let read = Array(try TraceReader(path: folder.child("e.sovtrace").path))
        #expect(read == Array(stream))
        #expect(read.count == 200 + 500 + 2)
    }
}
