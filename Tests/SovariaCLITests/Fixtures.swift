import Foundation

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

    /// The local engines a separate process can reopen (memory: lives and dies with one process).
    static let engines = ["file", "sqlite", "lmdb", "leveldb", "encrypted+sqlite"]

    /// A store URL of `engine` in `folder`.
    static func url(_ engine: String, in folder: Folder, name: String) -> String {
        let place = folder.file(name + (engine.hasSuffix("sqlite") ? ".sqlite" : ""))
        return "\(engine):\(place)"
    }

    /// 2,000 entries (spanning several pages of the default batch) for most tests: long keys,
    /// non-ASCII keys, keys outside `sov:`, values with `"\0"`, quotes, backslashes and newlines, and
    /// an empty value.
    static let entries = generated(count: 2_000)

    /// The set every pair of engines migrates: 20,000 entries in `make reliability`
    /// (`SOVARIA_RELIABILITY=full`), 2,000 in `make test`, where the 20 pairs must stay short.
    static let pairEntries =
        ProcessInfo.processInfo.environment["SOVARIA_RELIABILITY"] == "full" ? generated(count: 20_000) : entries

    /// `count` entries of the shapes ``entries`` describes.
    static func generated(count: Int) -> [(key: String, value: String)] {
        (0..<count).map { index in
            let key: String
            switch index % 4 {
            case 0: key = "sov:cache:l:\(index)"
            case 1: key = "sov:queue:é-e\u{301}-日本-\(index)"
            case 2: key = "sov:file:" + String(repeating: "k", count: 480) + "\(index)"
            default: key = "app:\u{1F600}:\(index)"
            }
            let value =
                index == 7 ? "" : "v\(index)\0" + String(repeating: "x", count: index % 300) + "\u{0}é\n\"\\\t\u{1F}"
            return (key, value)
        }
    }

    /// `entries` as JSON Lines written by Foundation's encoder (not the command's), in `folder`.
    static func inputFile(in folder: Folder, entries: [(key: String, value: String)] = entries) throws -> String {
        struct Line: Encodable {
            let key: String
            let value: String
        }
        let encoder = JSONEncoder()
        var data = Data()
        for entry in entries {
            data.append(try encoder.encode(Line(key: entry.key, value: entry.value)))
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

    /// Parses `dump` output into (key, value) pairs as UTF-8 bytes (Swift's `==` on strings would
    /// call `"é"` and `"e\u{301}"` equal), checking each line is an object of two strings.
    static func parseDump(_ output: String) throws -> [[[UInt8]]] {
        try output.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
            guard let object, object.count == 2, let key = object["key"], let value = object["value"] else {
                throw CocoaError(.coderReadCorrupt)
            }
            return [Array(key.utf8), Array(value.utf8)]
        }
    }

    /// `entries` in the order `dump` promises: ascending by the keys' UTF-8 bytes.
    static var expectedDump: [[[UInt8]]] { dump(of: entries) }

    /// `entries` as ``parseDump(_:)`` gives them for a dump of a store holding exactly them.
    static func dump(of entries: [(key: String, value: String)]) -> [[[UInt8]]] {
        entries.map { [Array($0.key.utf8), Array($0.value.utf8)] }.sorted { $0[0].lexicographicallyPrecedes($1[0]) }
    }
}
