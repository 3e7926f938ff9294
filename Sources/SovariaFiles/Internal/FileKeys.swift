import Foundation
import SovariaPlumbing

/// The file cache's layout in the metadata store: one key per cached file,
///
///     sov:file:<id>:<size in bytes, 16 digits>:<last use, ms since 1970, 16 digits>  →  {"key":…,"state":…}
///
/// Everything open and eviction need is in the key's name, so opening lists key names only
/// (``OfflineStore/keys(_:)``), never a value. `<id>` is 32 lowercase hex digits, the first 128
/// bits of SHA-256 over the key's UTF-8 bytes, and also the name of the file in `files/`: any
/// key (empty, with `/`, thousands of bytes long, precomposed or decomposed "é") maps to one
/// short, legal, distinct name. The value records the cache key and the entry's state
/// (`ready` for a download, `adopted` for a file found without metadata at open); the cache
/// never needs to read it.
enum FileKeys {
    static let prefix = "sov:file:"

    /// The id of a cache key.
    static func id(of key: String) -> FileID { FileID(of: key) }

    static func metadataKey(id: FileID, sizeBytes: Int, lastUseMillis: Int64) -> String {
        prefix + id.hex + ":" + padded(Int64(sizeBytes)) + ":" + padded(lastUseMillis)
    }

    /// The id, size and last use in a metadata key, or `nil` for a key of another shape.
    ///
    /// Fixed offsets over the UTF-8 bytes, no string made: open parses every key.
    static func parse(_ key: String) -> (id: FileID, sizeBytes: Int, lastUseMillis: Int64)? {
        key.withUTF8Bytes { parse(UnsafeRawBufferPointer($0)) }
    }

    /// ``parse(_:)`` of a key's UTF-8 bytes, as a borrowed key scan hands them.
    static func parse(_ key: UnsafeRawBufferPointer) -> (id: FileID, sizeBytes: Int, lastUseMillis: Int64)? {
        let bytes = key.assumingMemoryBound(to: UInt8.self)
        // Exact widths and digits only: a key that would parse but not rebuild to itself
        // could never be deleted by the key the cache computes for it.
        let start = prefix.utf8.count
        guard bytes.count == start + 32 + 1 + 16 + 1 + 16, bytes.starts(with: prefix.utf8),
            bytes[start + 32] == UInt8(ascii: ":"), bytes[start + 49] == UInt8(ascii: ":"),
            let id = FileID(hex: UnsafeBufferPointer(rebasing: bytes[start..<start + 32])),
            let size = number(bytes[start + 33..<start + 49]),
            let millis = number(bytes[start + 50..<start + 66])
        else { return nil }
        return (id, Int(size), millis)
    }

    /// The id a name in `files/` stands for, or `nil` when the name is not one.
    static func id(fileName name: String) -> FileID? { FileID(hex: name) }

    private static func number(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Int64? {
        var value: Int64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(digit - UInt8(ascii: "0"))
        }
        return value
    }

    /// The value stored with a file's metadata: its cache key (`nil` when unknown, for an
    /// adopted file) and its state.
    static func value(key: String?) -> String {
        struct Record: Encodable {
            let key: String?
            let state: String
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let record = Record(key: key, state: key == nil ? "adopted" : "ready")
        return (try? encoder.encode(record)).map { String(decoding: $0, as: UTF8.self) } ?? #"{"state":"ready"}"#
    }

    static func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1_000).rounded()) }

    private static func padded(_ value: Int64) -> String {
        let digits = String(max(0, value))
        return String(repeating: "0", count: max(0, 16 - digits.count)) + digits
    }
}
