import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaTestKit
import Testing

@testable import SovariaWorkloads

@Suite struct LibCacheSimTraceTests {
    /// (time in seconds, object id, size): five requests.
    static let requests: [(UInt32, UInt64, UInt32)] = [
        (100, 7, 4096), (100, 1 << 40, 1), (101, 7, 4096), (105, 3, 0), (160, 7, 4096),
    ]

    static var expected: [TraceRecord] {
        requests.map { time, id, size in
            TraceRecord(
                nanoseconds: UInt64(time - 100) * 1_000_000_000,
                operation: .fetch(key: "obj:\(id)", valueBytes: Int(size)))
        }
    }

    static func oracleGeneral(_ requests: [(UInt32, UInt64, UInt32)]) -> Data {
        var bytes: [UInt8] = []
        func little<T: FixedWidthInteger>(_ value: T) {
            for shift in stride(from: 0, to: T.bitWidth, by: 8) {
                bytes.append(UInt8(truncatingIfNeeded: value >> shift))
            }
        }
        for (index, (time, id, size)) in requests.enumerated() {
            little(time)
            little(id)
            little(size)
            little(Int64(index == requests.count - 1 ? -1 : index + 1))
        }
        return Data(bytes)
    }

    static func readAll(_ reader: LibCacheSimTraceReader) throws -> [TraceRecord] {
        var records: [TraceRecord] = []
        while let record = try reader.nextRecord() { records.append(record) }
        return records
    }

    @Test func readsOracleGeneral() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("trace.oracleGeneral")
        try Self.oracleGeneral(Self.requests).write(to: path)
        let reader = try LibCacheSimTraceReader(path: path.path, format: .oracleGeneral)
        #expect(try Self.readAll(reader) == Self.expected)
        #expect(reader.requestCount == Self.requests.count)
    }

    /// A last record cut short is a damaged trace: its requests before it are returned, then the
    /// error names where the cut record starts and how much of it is there.
    @Test func aTruncatedLastRecordIsAnErrorNamingItsOffset() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("trace.oracleGeneral")
        try (Self.oracleGeneral(Self.requests) + Data(repeating: 9, count: 10)).write(to: path)
        let reader = try LibCacheSimTraceReader(path: path.path, format: .oracleGeneral)
        for expected in Self.expected { #expect(try reader.nextRecord() == expected) }
        let offset = Self.requests.count * 24
        #expect(throws: LibCacheSimTraceError.truncatedRecord(path: path.path, offset: offset, bytes: 10)) {
            try reader.nextRecord()
        }
        #expect(
            "\(LibCacheSimTraceError.truncatedRecord(path: "t", offset: offset, bytes: 10))".contains("byte \(offset)"))
        // As a sequence, the error ends the iteration and is kept.
        let sequence = try LibCacheSimTraceReader(path: path.path, format: .oracleGeneral)
        #expect(Array(sequence).count == Self.requests.count)
        #expect(sequence.failure == .truncatedRecord(path: path.path, offset: offset, bytes: 10))
    }

    @Test func aTruncatedRecordInAZstdTraceIsAnErrorNamingItsOffset() throws {
        let folder = try TemporaryFolder()
        let plain = folder.child("trace.oracleGeneral")
        try (Self.oracleGeneral(Self.requests) + Data(repeating: 9, count: 23)).write(to: plain)
        try Self.compress(plain)
        let reader = try LibCacheSimTraceReader(path: plain.path + ".zst", format: .oracleGeneral)
        var count = 0
        let error = #expect(throws: LibCacheSimTraceError.self) {
            while try reader.nextRecord() != nil { count += 1 }
        }
        #expect(count == Self.requests.count)
        #expect(error == .truncatedRecord(path: plain.path + ".zst", offset: Self.requests.count * 24, bytes: 23))
    }

    /// A `.zst` file cut part of the way is an error naming how far its decompressed trace got.
    @Test func aCutZstdFileIsAnErrorNamingTheByteItStoppedAt() throws {
        let folder = try TemporaryFolder()
        let plain = folder.child("trace.oracleGeneral")
        let many: [(UInt32, UInt64, UInt32)] = (0..<200_000).map { (UInt32($0), UInt64($0 &* 2_654_435_761), 1) }
        try Self.oracleGeneral(many).write(to: plain)
        try Self.compress(plain)
        let compressed = try Data(contentsOf: URL(fileURLWithPath: plain.path + ".zst"))
        try compressed.prefix(compressed.count / 2).write(to: URL(fileURLWithPath: plain.path + ".zst"))
        let reader = try LibCacheSimTraceReader(path: plain.path + ".zst", format: .oracleGeneral)
        var count = 0
        let error = #expect(throws: LibCacheSimTraceError.self) {
            while try reader.nextRecord() != nil { count += 1 }
        }
        guard case .decompressionFailed(_, let status, let bytes) = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(status > 0 && count < many.count && bytes >= count * 24)
        #expect("\(error!)".contains("at byte \(bytes) "))
    }

    /// Compresses `file` to `file.zst` with the `zstd` command.
    static func compress(_ file: URL) throws {
        // `zstd` is a Debian package `make test` installs (DEB_PACKAGES): tests using it never skip.
        let zstd = Process()
        zstd.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        zstd.arguments = ["zstd", "-q", file.path, "-o", file.path + ".zst"]
        try zstd.run()
        zstd.waitUntilExit()
        try #require(zstd.terminationStatus == 0, "zstd must be installed: apt-get install zstd")
    }

    @Test func readsAZstdCompressedOracleGeneralTrace() throws {
        let folder = try TemporaryFolder()
        let plain = folder.child("trace.oracleGeneral")
        let many: [(UInt32, UInt64, UInt32)] = (0..<100_000).map { (index: Int) in
            (UInt32(1000 + index / 10), UInt64(index % 977), UInt32(index % 5000))
        }
        try Self.oracleGeneral(many).write(to: plain)
        try Self.compress(plain)
        let reader = try LibCacheSimTraceReader(path: plain.path + ".zst", format: .oracleGeneral)
        var count = 0
        while let record = try reader.nextRecord() {
            let (time, id, size) = many[count]
            #expect(record.operation == .fetch(key: "obj:\(id)", valueBytes: Int(size)))
            #expect(record.nanoseconds == UInt64(time - 1000) * 1_000_000_000)
            count += 1
        }
        #expect(count == many.count)
    }

    @Test func aDamagedZstdFileIsAnError() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("trace.oracleGeneral.zst")
        try Data("not zstd at all".utf8).write(to: path)
        let reader = try LibCacheSimTraceReader(path: path.path, format: .oracleGeneral)
        #expect(throws: LibCacheSimTraceError.self) { try Self.readAll(reader) }
    }

    @Test func readsCSVWithTheColumnsAndDelimiterNamed() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("trace.csv")
        try Data("time;size;id\n100;4096;7\r\n100;1;1099511627776\n\n101;4096;7\n105;0;3\n160;4096;7".utf8).write(
            to: path)
        let options = try LibCacheSimCSVOptions(
            libCacheSimParameters: "time-col=1, obj-id-col=3, obj-size-col=2, delimiter=;, has-header=true")
        #expect(options.timeColumn == 1 && options.objectIDColumn == 3 && options.sizeColumn == 2)
        #expect(options.delimiter == UInt8(ascii: ";") && options.hasHeader && options.objectIDIsNumber)
        let reader = try LibCacheSimTraceReader(path: path.path, format: .csv(options))
        #expect(try Self.readAll(reader) == Self.expected)
    }

    @Test func readsCSVWithTextIDsAndACommaDelimiter() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("trace.csv")
        try Data("0.5,alpha,10\n1.5,beta,20\n".utf8).write(to: path)
        let options = try LibCacheSimCSVOptions(
            libCacheSimParameters: "time-col=1,obj-id-col=2,delimiter=,,obj-size-col=3,obj-id-is-num=0")
        #expect(options.delimiter == UInt8(ascii: ",") && !options.objectIDIsNumber && !options.hasHeader)
        let reader = try LibCacheSimTraceReader(path: path.path, format: .csv(options), keyPrefix: "k:")
        #expect(
            try Self.readAll(reader) == [
                TraceRecord(nanoseconds: 0, operation: .fetch(key: "k:alpha", valueBytes: 10)),
                TraceRecord(nanoseconds: 1_000_000_000, operation: .fetch(key: "k:beta", valueBytes: 20)),
            ])
    }

    @Test func aCSVLineWithoutItsColumnNamesTheLine() throws {
        let folder = try TemporaryFolder()
        let path = folder.child("trace.csv")
        try Data("1,7,10\n2,8\n".utf8).write(to: path)
        var options = LibCacheSimCSVOptions(objectIDColumn: 2, timeColumn: 1, sizeColumn: 3)
        options.timeUnitNanoseconds = 1
        let reader = try LibCacheSimTraceReader(path: path.path, format: .csv(options))
        #expect(try reader.nextRecord() == TraceRecord(nanoseconds: 0, operation: .fetch(key: "obj:7", valueBytes: 10)))
        #expect(throws: LibCacheSimTraceError.badLine(line: 2, column: 3)) { try reader.nextRecord() }
        #expect(throws: LibCacheSimTraceError.badOptions("obj-id-col")) {
            try LibCacheSimCSVOptions(libCacheSimParameters: "time-col=1")
        }
    }
}
