import Foundation

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

    /// The id of a cache key: 32 hex digits of its SHA-256.
    static func id(of key: String) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var name: [UInt8] = []
        name.reserveCapacity(32)
        for byte in SHA256.digest(Array(key.utf8)).prefix(16) {
            name.append(digits[Int(byte >> 4)])
            name.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: name, as: UTF8.self)
    }

    static func metadataKey(id: String, sizeBytes: Int, lastUseMillis: Int64) -> String {
        prefix + id + ":" + padded(Int64(sizeBytes)) + ":" + padded(lastUseMillis)
    }

    /// The id, size and last use in a metadata key, or `nil` for a key of another shape.
    static func parse(_ key: String) -> (id: String, sizeBytes: Int, lastUseMillis: Int64)? {
        let fields = key.utf8.dropFirst(prefix.utf8.count).split(
            separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        // Exact widths and digits only: a key that would parse but not rebuild to itself could
        // never be deleted by the key the cache computes for it.
        guard fields.count == 3, isID(fields[0]), fields[1].count == 16, fields[2].count == 16,
            fields[1].allSatisfy(isDigit), fields[2].allSatisfy(isDigit),
            let size = Int(String(decoding: fields[1], as: UTF8.self)),
            let millis = Int64(String(decoding: fields[2], as: UTF8.self))
        else { return nil }
        return (String(decoding: fields[0], as: UTF8.self), size, millis)
    }

    /// Whether `name` is an id: 32 lowercase hex digits (a file name in `files/` must be one).
    static func isID(_ name: some Collection<UInt8>) -> Bool {
        name.count == 32
            && name.allSatisfy {
                ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                    || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
            }
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
