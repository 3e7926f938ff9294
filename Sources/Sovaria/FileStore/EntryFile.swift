import Foundation
import SovariaPlumbing

/// The bytes of one key's file in ``FileTree``: `"SVE1"`, the entry's ``EntryChecksum`` (bound
/// to the key, UInt64 little-endian), then the value's bytes (a string's UTF-8 bytes).
///
/// The checksum turns damage into ``OfflineStoreError/Code/corrupt`` instead of a wrong value: a
/// changed byte, a file cut short, or a file copied under another key's name.
enum EntryFile {
    private static let magic: [UInt8] = Array("SVE1".utf8)
    static let headerCount = 12

    static func encode(key: String, value: UnsafeRawBufferPointer) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headerCount + value.count)
        bytes += magic
        let checksum = key.withUTF8Bytes { EntryChecksum.of(key: UnsafeRawBufferPointer($0), value: value) }
        withUnsafeBytes(of: checksum.littleEndian) { bytes += $0 }
        bytes += value
        return bytes
    }

    /// The file of the string `value` under `key`.
    static func encode(key: String, value: String) -> [UInt8] {
        value.withUTF8Bytes { encode(key: key, value: UnsafeRawBufferPointer($0)) }
    }

    /// The value in `bytes`, the file of `key`, as a string; throws
    /// ``OfflineStoreError/Code/corrupt`` when the file is damaged and
    /// ``OfflineStoreError/Code/notUTF8`` when it holds bytes that are not UTF-8.
    static func decode(_ bytes: [UInt8], key: String, path: String) throws(OfflineStoreError) -> String {
        try withValue(bytes, key: key, path: path) { value throws(OfflineStoreError) in
            try StoreValue.string(value, key: key, engine: .file)
        }
    }

    /// The value in `bytes`, the file of `key`, as bytes; throws ``OfflineStoreError/Code/corrupt``
    /// when the file is damaged.
    static func decodeData(_ bytes: [UInt8], key: String, path: String) throws(OfflineStoreError) -> Data {
        try withValue(bytes, key: key, path: path) { Data($0) }
    }

    /// Appends the value in `bytes`, the file of `key`, to `buffer`; throws
    /// ``OfflineStoreError/Code/corrupt`` when the file is damaged.
    static func appendValue(
        _ bytes: [UInt8], key: String, path: String, to buffer: inout [UInt8]
    ) throws(OfflineStoreError) {
        try withValue(bytes, key: key, path: path) { value in buffer.append(contentsOf: value) }
    }

    private static func withValue<Value>(
        _ bytes: [UInt8], key: String, path: String, _ body: (UnsafeRawBufferPointer) throws(OfflineStoreError) -> Value
    ) throws(OfflineStoreError) -> Value {
        let isIntact = bytes.withUnsafeBytes { buffer in
            guard buffer.count >= headerCount, buffer.prefix(magic.count).elementsEqual(magic) else { return false }
            let stored = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: 4, as: UInt64.self))
            let valueBytes = UnsafeRawBufferPointer(rebasing: buffer[headerCount...])
            return key.withUTF8Bytes { EntryChecksum.of(key: UnsafeRawBufferPointer($0), value: valueBytes) } == stored
        }
        guard isIntact else {
            throw OfflineStoreError(
                .corrupt,
                "The file \(path) of this key is damaged (its checksum does not match, or it was not written by "
                    + "this version of FileOfflineStore): delete the key or rewrite it, or restore the folder from a "
                    + "backup.",
                engine: .file, key: key)
        }
        return try bytes.withBytes { (buffer) throws(OfflineStoreError) in
            try body(UnsafeRawBufferPointer(rebasing: buffer[headerCount...]))
        }
    }
}
