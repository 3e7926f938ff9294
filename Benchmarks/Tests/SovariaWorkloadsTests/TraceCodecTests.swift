import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaTestKit
import SovariaWorkloads
import Testing

@Suite struct TraceCodecTests {
    /// One record of every opcode, batches of every entry kind, empty and long strings.
    static let everyOpcode: [TraceRecord] = [
        TraceRecord(nanoseconds: 0, operation: .phase(.load)),
        TraceRecord(nanoseconds: 5, operation: .insert(key: "user:0001", valueBytes: 1000)),
        TraceRecord(nanoseconds: 5, operation: .phase(.run)),
        TraceRecord(nanoseconds: 300, operation: .read(key: "user:0001")),
        TraceRecord(nanoseconds: 1_000_000_000_000, operation: .update(key: "é:ü", valueBytes: 0)),
        TraceRecord(nanoseconds: 1_000_000_000_001, operation: .delete(key: String(repeating: "k", count: 300))),
        TraceRecord(nanoseconds: 1_000_000_000_002, operation: .scan(prefix: "user:", after: nil, limit: 100)),
        TraceRecord(nanoseconds: 1_000_000_000_003, operation: .scan(prefix: "", after: "user:0001", limit: 0)),
        TraceRecord(
            nanoseconds: 1_000_000_000_004, operation: .readModifyWrite(key: "a", valueBytes: Int(TraceCodec.maxCount))),
        TraceRecord(nanoseconds: 1_000_000_000_005, operation: .keys(prefix: "sov:cache:")),
        TraceRecord(
            nanoseconds: 1_000_000_000_006,
            operation: .batch([.update(key: "a", valueBytes: 1), .insert(key: "b", valueBytes: 2), .delete(key: "c")])),
        TraceRecord(nanoseconds: 1_000_000_000_006, operation: .batch([])),
        TraceRecord(nanoseconds: 1_000_000_000_007, operation: .compact),
        TraceRecord(nanoseconds: 1_000_000_000_008, operation: .fetch(key: "obj:42", valueBytes: 4096)),
    ]

    static func write(_ records: [TraceRecord], to path: String, keysHashed: Bool = false) throws {
        let writer = try TraceWriter(path: path, keysHashed: keysHashed, bufferBytes: 4096)
        for record in records { try writer.append(record) }
        try writer.close()
    }

    static func readAll(_ path: String, chunkBytes: Int = 1 << 20) throws -> (TraceReader, [TraceRecord]) {
        let reader = try TraceReader(path: path, chunkBytes: chunkBytes)
        var records: [TraceRecord] = []
        while let record = try reader.nextRecord() { records.append(record) }
        return (reader, records)
    }

    @Test func roundTripsEveryOpcode() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("a.sovtrace").path
        try Self.write(Self.everyOpcode, to: path, keysHashed: true)
        let (reader, records) = try Self.readAll(path)
        #expect(records == Self.everyOpcode)
        #expect(reader.keysHashed)
        #expect(reader.ignoredTrailingBytes == 0)
        #expect(reader.recordCount == Self.everyOpcode.count)
    }

    @Test func readsRecordsThatCrossChunksWithATinyBuffer() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("a.sovtrace").path
        let many = (0..<5000).map { TraceRecord(nanoseconds: UInt64($0) * 7, operation: .read(key: "k:\($0)")) }
        try Self.write(
            Self.everyOpcode + many.map { TraceRecord(nanoseconds: $0.nanoseconds + 1 << 41, operation: $0.operation) },
            to: path)
        let (_, records) = try Self.readAll(path, chunkBytes: 64)
        #expect(records.count == Self.everyOpcode.count + many.count)
        #expect(Array(records.prefix(Self.everyOpcode.count)) == Self.everyOpcode)
        // Also as a Sequence.
        let reader = try TraceReader(path: path)
        #expect(Array(reader).count == records.count && reader.failure == nil)
    }

    @Test func writesTheDocumentedBytes() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("a.sovtrace").path
        try Self.write(
            [
                TraceRecord(nanoseconds: 200, operation: .update(key: "ab", valueBytes: 300)),
                TraceRecord(nanoseconds: 200, operation: .scan(prefix: "p", after: "q", limit: 2)),
            ], to: path)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let expected: [UInt8] =
            Array("SOVTRACE".utf8) + [1, 0, 0, 0, 0, 0, 0, 0]
            + [2, 0xC8, 0x01, 2, 0x61, 0x62, 0xAC, 0x02]  // update, 200 ns, "ab", 300
            + [5, 0, 1, 0x70, 1, 1, 0x71, 2]  // scan, 0 ns later, "p", after "q", limit 2
        #expect(bytes == expected)
    }

    @Test func ignoresATruncatedLastRecordAndSaysHowManyBytes() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("a.sovtrace").path
        try Self.write(Self.everyOpcode, to: path)
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        // The last record (fetch "obj:42", 4096) is 11 bytes: cut it at every length.
        for cut in 1..<11 {
            try whole.dropLast(cut).write(to: URL(fileURLWithPath: path))
            let (reader, records) = try Self.readAll(path)
            #expect(records == Array(Self.everyOpcode.dropLast()))
            #expect(reader.ignoredTrailingBytes == 11 - cut)
        }
    }

    @Test func namesTheOffsetOfABadHeader() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("a.sovtrace").path
        let cases: [([UInt8], TraceFileError)] = [
            ([], .badHeader(offset: 0)),
            (Array("SOVTRAXE".utf8) + [1, 0, 0, 0, 0, 0, 0, 0], .badHeader(offset: 6)),
            (Array("SOVTRACE".utf8) + [1, 0], .badHeader(offset: 10)),
            (Array("SOVTRACE".utf8) + [2, 0, 0, 0, 0, 0, 0, 0], .unsupportedVersion(2, offset: 8)),
        ]
        for (bytes, error) in cases {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(throws: error) { try TraceReader(path: path) }
        }
    }

    @Test func namesTheOffsetOfAnUnknownOpcodeOrAMalformedRecord() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("a.sovtrace").path
        let header = Array("SOVTRACE".utf8) + [1, 0, 0, 0, 0, 0, 0, 0]
        let read: [UInt8] = [1, 0, 1, 0x61]  // read "a": bytes 16..<20
        let cases: [([UInt8], TraceFileError)] = [
            (header + read + [12, 0], .unknownOpcode(12, offset: 20)),
            (header + read + [0], .unknownOpcode(0, offset: 20)),
            (header + read + [8, 0, 1, 1, 1, 0x61], .malformedRecord(offset: 20, field: .batchEntry)),
            (header + read + [10, 0, 3], .malformedRecord(offset: 20, field: .phase)),
            (header + read + [5, 0, 0, 2, 0], .malformedRecord(offset: 20, field: .hasAfter)),
            (
                header + read + [9] + [UInt8](repeating: 0xFF, count: 10) + [0],
                .malformedRecord(offset: 20, field: .varint)
            ),
        ]
        for (bytes, error) in cases {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let reader = try TraceReader(path: path)
            #expect(try reader.nextRecord() == TraceRecord(nanoseconds: 0, operation: .read(key: "a")))
            #expect(throws: error) { try reader.nextRecord() }
            // As a Sequence the error ends the iteration and is kept.
            let again = try TraceReader(path: path)
            #expect(Array(again).count == 1 && again.failure == error)
        }
    }

    @Test func writerFailsWithTheErrnoWhenTheFileCannotBeCreated() {
        #expect(throws: TraceFileError.io(operation: .open, path: "/nonexistent-folder/a.sovtrace", errno: ENOENT)) {
            try TraceWriter(path: "/nonexistent-folder/a.sovtrace")
        }
    }
}
