import Foundation
import Sovaria
import SovariaSync
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Testing

/// `SovariaOffline.migrate` between every ordered pair of engines keeps every byte of every value:
/// strings (NUL, non-ASCII, empty) and bytes that are not UTF-8, read back with `data(_:)`.
@Suite(.sharedPostgresDatabase) struct MigrateAcrossEnginesTests {
    /// A source engine and a target engine.
    struct Pair: Sendable, CustomStringConvertible {
        let source: TestEngine
        let target: TestEngine
        var description: String { "\(source) → \(target)" }
    }

    static let engines = TestEngine.standard(including: [.encrypted, .postgres])

    /// Every ordered pair of two different engines.
    static let pairs = engines.flatMap { source in
        engines.filter { $0.name != source.name }.map { Pair(source: source, target: $0) }
    }

    /// Strings a string path must keep byte for byte (NUL, canonically equivalent spellings, empty),
    /// written with `set(_:_:)`.
    static let strings: [(key: String, value: String)] = [
        "", "\0", "plain", "é and e\u{301}", "日本\0語", #"{"json":"\u{1F600}"}"#,
    ].enumerated().map { ("sov:s:\($0.offset)", $0.element) }

    /// Bytes that are not UTF-8 (a lone `FF`, `C3` alone, overlong `C0 80`, a surrogate `ED A0 80`,
    /// NULs around `FF`, random bytes), written with `set(_:data:)`.
    static let bytes: [(key: String, data: Data)] = [
        Data([0xFF]), Data([0xC3]), Data([0xC0, 0x80]), Data([0xED, 0xA0, 0x80]), Data([0x00, 0xFF, 0x00]),
        randomBytes(count: 1_000, seed: 39), randomBytes(count: 70_000, seed: 40),
    ].enumerated().map { ("sov:b:\($0.offset)", $0.element) }

    /// Every value as the bytes it must read back as; with a batch of 4 they span several pages.
    static var expected: [(key: String, data: Data)] { strings.map { ($0.key, Data($0.value.utf8)) } + bytes }

    @Test(arguments: pairs)
    func migrateKeepsEveryByteOfStringAndBinaryValues(_ pair: Pair) async throws {
        let sourceFolder = try TemporaryFolder()
        let targetFolder = try TemporaryFolder()
        let source = try await pair.source.open(sourceFolder.url)
        let target = try await pair.target.open(targetFolder.url)
        try await source.write(
            Self.strings.map { .set(key: $0.key, value: $0.value) }
                + Self.bytes.map { .setData(key: $0.key, data: $0.data) })

        let copied = try await SovariaOffline.migrate(from: source, to: target, batchSize: 4)
        #expect(copied == Self.expected.count)
        for entry in Self.expected {
            let read = try await target.data(entry.key)
            #expect(read == entry.data, "\(pair): \(entry.key)")
        }
    }

    /// One value of exactly `StoreValue.maxGuaranteedByteCount` random bytes, on two pairs (each
    /// holds the value a few times over in memory: source, page, target).
    @Test(arguments: [
        Pair(source: .memory, target: .file(.flushed)), Pair(source: .sqlite(.flushed), target: .leveldb(.flushed)),
    ])
    func migrateKeepsAValueOfTheGuaranteedMaximumSize(_ pair: Pair) async throws {
        let sourceFolder = try TemporaryFolder()
        let targetFolder = try TemporaryFolder()
        let source = try await pair.source.open(sourceFolder.url)
        let target = try await pair.target.open(targetFolder.url)
        let big = Self.randomBytes(count: StoreValue.maxGuaranteedByteCount, seed: 64)
        try await source.set("sov:big", data: big)
        try await source.set("sov:small", data: Data([0xFF]))

        #expect(try await SovariaOffline.migrate(from: source, to: target) == 2)
        let read = try await target.data("sov:big")
        #expect(read?.count == StoreValue.maxGuaranteedByteCount, "\(pair)")
        #expect(read == big, "\(pair): the bytes differ")
        #expect(try await target.data("sov:small") == Data([0xFF]))
    }

    /// `count` bytes of a SplitMix64 stream seeded with `seed`.
    static func randomBytes(count: Int, seed: UInt64) -> Data {
        var state = seed
        // Eight bytes a step, written as words: 64 MiB takes a moment even in a debug build.
        var data = Data(count: (count + 7) / 8 * 8)
        data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            for offset in stride(from: 0, to: buffer.count, by: 8) {
                state &+= 0x9E37_79B9_7F4A_7C15
                var mixed = (state ^ (state >> 30)) &* 0xBF58_476D_1CE4_E5B9
                mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
                buffer.storeBytes(of: (mixed ^ (mixed >> 31)).littleEndian, toByteOffset: offset, as: UInt64.self)
            }
        }
        data.count = count
        return data
    }
}
