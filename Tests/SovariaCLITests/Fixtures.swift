import Foundation
import SovariaTestEngines

/// Stores and data for the command tests.
enum Fixtures {
    /// A folder removed when the test ends.
    final class Folder: @unchecked Sendable {
        let path: String

        init() throws {
            path = NSTemporaryDirectory() + "sovaria-cli-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }

        func file(_ name: String) -> String { path + "/" + name }
    }

    /// The URL schemes of the package's engines a separate process can reopen (memory: lives and
    /// dies with one process), encrypted SQLite included.
    static let engines = TestEngine.standard(including: .encrypted).map(\.urlScheme).filter { $0 != "memory" }

    /// A store URL of `engine` in `folder`.
    static func url(_ engine: String, in folder: Folder, name: String) -> String {
        let place = folder.file(name + (engine.hasSuffix("sqlite") ? ".sqlite" : ""))
        return "\(engine):\(place)"
    }

    /// 2,000 entries (spanning several pages of the default batch) for most tests: long keys,
    /// non-ASCII keys, keys outside `sov:`, values with `"\0"`, quotes, backslashes and newlines, an
    /// empty value, and one value in 100 bytes that are not UTF-8 (``binaryValues``).
    static let entries = generated(count: 2_000)

    /// The set every pair of engines migrates: 20,000 entries in `make reliability`
    /// (`SOVARIA_RELIABILITY=full`), 2,000 in `make test`, where the 20 pairs must stay short.
    static let pairEntries =
        ProcessInfo.processInfo.environment["SOVARIA_RELIABILITY"] == "full" ? generated(count: 20_000) : entries

    /// Values that are not UTF-8, each a case a string path gets wrong: a lone `FF`, a lead byte
    /// alone (`C3`), an overlong NUL (`C0 80`), a UTF-16 surrogate (`ED A0 80`), text with one bad
    /// byte and a NUL, and seeded random bytes (short and 4 KiB).
    static let binaryValues: [Data] = [
        Data([0xFF]), Data([0xC3]), Data([0xC0, 0x80]), Data([0xED, 0xA0, 0x80]),
        Data("text\0then".utf8) + Data([0xFE]) + Data("\"quoted\"\n".utf8),
        randomBytes(count: 37, seed: 1), randomBytes(count: 4_096, seed: 2),
    ]

    /// `count` bytes of a SplitMix64 stream seeded with `seed`: the same bytes on every run.
    static func randomBytes(count: Int, seed: UInt64) -> Data {
        var state = seed
        var bytes = Data(capacity: count + 8)
        while bytes.count < count {
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = (state ^ (state >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            withUnsafeBytes(of: (mixed ^ (mixed >> 31)).littleEndian) { bytes.append(contentsOf: $0) }
        }
        return bytes.prefix(count)
    }

    /// `count` entries of the shapes ``entries`` describes.
    static func generated(count: Int) -> [(key: String, value: Data)] {
        (0..<count).map { index in
            let key: String
            switch index % 4 {
            case 0: key = "sov:cache:l:\(index)"
            case 1: key = "sov:queue:é-e\u{301}-日本-\(index)"
            case 2: key = "sov:file:" + String(repeating: "k", count: 480) + "\(index)"
            default: key = "app:\u{1F600}:\(index)"
            }
            if index % 100 == 13 {
                return (key, binaryValues[index / 100 % binaryValues.count])
            }
            let value =
                index == 7 ? "" : "v\(index)\0" + String(repeating: "x", count: index % 300) + "\u{0}é\n\"\\\t\u{1F}"
            return (key, Data(value.utf8))
        }
    }

    /// `entries` as JSON Lines written by Foundation's encoder (not the command's), in `folder`: a
    /// value that is UTF-8 as `"value"`, any other as `"base64"`.
    static func inputFile(in folder: Folder, entries: [(key: String, value: Data)] = entries) throws -> String {
        struct Line: Encodable {
            let key: String
            let value: String?
            let base64: String?
        }
        let encoder = JSONEncoder()
        var data = Data()
        for entry in entries {
            let text = String(validating: entry.value, as: UTF8.self)
            let line = Line(key: entry.key, value: text, base64: text == nil ? entry.value.base64EncodedString() : nil)
            data.append(try encoder.encode(line))
            data.append(0x0A)
        }
        let path = folder.file("input.jsonl")
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A 32-byte key file.
    static func keyFile(in folder: Folder, name: String = "key", byte: UInt8 = 7) throws -> String {
        let path = folder.file(name)
        try Data((0..<32).map { UInt8($0) &+ byte }).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Parses `dump` output into (key, value) pairs as bytes (Swift's `==` on strings would call
    /// `"é"` and `"e\u{301}"` equal), checking each line is an object of two strings: `key` and
    /// either `value` (text, which must not be base64's job) or `base64` (bytes that are not UTF-8).
    static func parseDump(_ output: String) throws -> [[[UInt8]]] {
        try output.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
            guard let object, object.count == 2, let key = object["key"] else { throw CocoaError(.coderReadCorrupt) }
            if let value = object["value"] { return [Array(key.utf8), Array(value.utf8)] }
            guard let base64 = object["base64"], let data = Data(base64Encoded: base64),
                String(validating: data, as: UTF8.self) == nil
            else { throw CocoaError(.coderReadCorrupt) }
            return [Array(key.utf8), Array(data)]
        }
    }

    /// `entries` in the order `dump` promises: ascending by the keys' UTF-8 bytes.
    static var expectedDump: [[[UInt8]]] { dump(of: entries) }

    /// `entries` as ``parseDump(_:)`` gives them for a dump of a store holding exactly them.
    static func dump(of entries: [(key: String, value: Data)]) -> [[[UInt8]]] {
        entries.map { [Array($0.key.utf8), Array($0.value)] }.sorted { $0[0].lexicographicallyPrecedes($1[0]) }
    }
}
