import Foundation
@_spi(Benchmarks) import Sovaria
@_spi(Benchmarks) import SovariaTestKit
import SovariaWorkloads
import Testing

/// What `RecordingOfflineStore` writes, read back with the trace reader: every call in order, sizes
/// and limits at the trace's cap, buffering, hashed keys, and rotation. (The recorder's tests that
/// need no reader are the library's `RecordingOfflineStoreTests`.)
@Suite struct RecordedTraceTests {
    static func records(_ url: URL) throws -> (TraceReader, [TraceRecord]) {
        let reader = try TraceReader(path: url.path)
        var records: [TraceRecord] = []
        while let record = try reader.nextRecord() { records.append(record) }
        return (reader, records)
    }

    @Test func recordsEveryCallInTheOrderMade() async throws {
        let folder = try TemporaryFolder()
        let inner = MemoryOfflineStore()
        let store = RecordingOfflineStore(wrapping: inner, traceFile: folder.child("calls.sovtrace"))
        let expected = try await RecordedSession.run(on: store)
        #expect(try await inner.get("sov:queue:0002") == "")  // the calls reached the store
        #expect(store.recordingState == .recording)
        store.stopRecording()
        #expect(store.recordingState == .stopped(.stopped))
        let (reader, records) = try Self.records(folder.child("calls.sovtrace"))
        #expect(records.map(\.operation) == expected)
        #expect(!reader.keysHashed && reader.ignoredTrailingBytes == 0)
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.nanoseconds <= $1.nanoseconds })
        // Calls after the stop are not recorded, and still work.
        try await store.set("sov:cache:after", "x")
        #expect(try Self.records(folder.child("calls.sovtrace")).1.count == expected.count)
    }

    /// A value past the trace's cap (64 MiB; a store may take more) and a scan of `Int.max`
    /// entries are recorded at the cap, so the trace reads back instead of being a damaged record.
    @Test func aSizeOrLimitPastTheTraceCapIsRecordedAtTheCap() async throws {
        let folder = try TemporaryFolder()
        let store = RecordingOfflineStore(wrapping: MemoryOfflineStore(), traceFile: folder.child("calls.sovtrace"))
        let cap = Int(TraceCodec.maxCount)
        try await store.set("sov:big", data: Data(count: cap + 1))
        try await store.write([.setData(key: "sov:big", data: Data(count: cap + 1))])
        _ = try await store.dataEntries("sov:none:", after: nil, limit: .max)
        store.stopRecording()
        let (_, records) = try Self.records(folder.child("calls.sovtrace"))
        #expect(
            records.map(\.operation) == [
                .update(key: "sov:big", valueBytes: cap), .batch([.update(key: "sov:big", valueBytes: cap)]),
                .scan(prefix: "sov:none:", after: nil, limit: cap),
            ])
    }

    @Test func flushWritesBufferedRecordsWithoutStopping() async throws {
        let folder = try TemporaryFolder()
        // No time-based flush: the record stays buffered however slow the machine is.
        var configuration = RecordingOfflineStore.Configuration()
        configuration.flushIntervalNanoseconds = .max
        let store = RecordingOfflineStore(
            wrapping: MemoryOfflineStore(), traceFile: folder.child("calls.sovtrace"), configuration: configuration)
        try await store.set("sov:cache:a", "1")
        #expect(try Self.records(folder.child("calls.sovtrace")).1.isEmpty)  // still in the buffer
        store.flush()
        #expect(try Self.records(folder.child("calls.sovtrace")).1.count == 1)
        #expect(store.recordingState == .recording)
    }

    @Test func hashedKeysAreWhatTheTraceHolds() async throws {
        let folder = try TemporaryFolder()
        var configuration = RecordingOfflineStore.Configuration()
        configuration.hashesKeys = true
        let store = RecordingOfflineStore(
            wrapping: MemoryOfflineStore(), traceFile: folder.child("calls.sovtrace"), configuration: configuration)
        let calls = try await RecordedSession.run(on: store)
        store.stopRecording()
        let (reader, records) = try Self.records(folder.child("calls.sovtrace"))
        #expect(reader.keysHashed)
        let hash = RecordingOfflineStore.hashedKey
        #expect(records[0].operation == .update(key: hash("sov:cache:feed"), valueBytes: 10))
        #expect(records[5].operation == .keys(prefix: "sov:queue:"))  // a namespace prefix stays as it is
        #expect(records[7].operation == .scan(prefix: "sov:queue:", after: hash("sov:queue:0001"), limit: 10))
        #expect(records.count == calls.count)
        // No key of the session appears in the file.
        let bytes = try Data(contentsOf: folder.child("calls.sovtrace"))
        #expect(bytes.range(of: Data("feed".utf8)) == nil && bytes.range(of: Data("0001".utf8)) == nil)
    }

    // MARK: - Bounded size

    @Test func rotationKeepsAtMostTheConfiguredFilesEachReadableAlone() async throws {
        let folder = try TemporaryFolder()
        var configuration = RecordingOfflineStore.Configuration()
        configuration.maxFileBytes = 1024
        configuration.keptFiles = 3
        let store = RecordingOfflineStore(
            wrapping: MemoryOfflineStore(), traceFile: folder.child("calls.sovtrace"), configuration: configuration)
        for call in 0..<2000 { try await store.set("sov:cache:\(call)", "value") }
        store.stopRecording()
        #expect(store.recordingState == .stopped(.stopped))
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted()
        #expect(names == ["calls.1.sovtrace", "calls.2.sovtrace", "calls.sovtrace"])
        var newestFirst: [[TraceRecord]] = []
        for name in ["calls.sovtrace", "calls.1.sovtrace", "calls.2.sovtrace"] {
            let (reader, records) = try Self.records(folder.child(name))
            #expect(reader.ignoredTrailingBytes == 0)
            #expect(try folder.fileSize(name) < 1024 + 64)  // past the limit by one record at most
            newestFirst.append(records)
        }
        // The kept files hold the latest calls, in order, without a gap between files.
        let kept = newestFirst.reversed().flatMap { $0 }
        #expect(kept.count > 100)
        let expected = (2000 - kept.count..<2000).map { TraceOperation.update(key: "sov:cache:\($0)", valueBytes: 5) }
        #expect(kept.map(\.operation) == expected)
        // Within a file, times never go back (each file counts its own from 0).
        for records in newestFirst {
            #expect(zip(records, records.dropFirst()).allSatisfy { $0.nanoseconds <= $1.nanoseconds })
        }
    }
}
