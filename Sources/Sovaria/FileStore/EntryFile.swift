import SovariaPlumbing

/// The bytes of one key's file in ``FileTree``: `"SVE1"`, the entry's ``EntryChecksum`` (bound
/// to the key, UInt64 little-endian), then the value's UTF-8 bytes.
///
/// The checksum turns damage into ``OfflineStoreError/Code/corrupt`` instead of a wrong value: a
/// changed byte, a file cut short, or a file copied under another key's name.
enum EntryFile {
    private static let magic: [UInt8] = Array("SVE1".utf8)
    static let headerCount = 12

    static func encode(key: String, value: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headerCount + value.utf8.count)
        bytes += magic
        withUnsafeBytes(of: EntryChecksum.of(key: key, value: value).littleEndian) { bytes += $0 }
        bytes += value.utf8
        return bytes
    }

    /// The value in `bytes`, the file of `key`; throws ``OfflineStoreError/Code/corrupt`` when the
    /// file is damaged.
    static func decode(_ bytes: [UInt8], key: String, path: String) throws(OfflineStoreError) -> String {
        let value: String? = bytes.withUnsafeBufferPointer { buffer in
            guard buffer.count >= headerCount, buffer.prefix(magic.count).elementsEqual(magic) else { return nil }
            let stored = UInt64(
                littleEndian: UnsafeRawBufferPointer(buffer).loadUnaligned(fromByteOffset: 4, as: UInt64.self))
            let valueBytes = UnsafeBufferPointer(rebasing: buffer[headerCount...])
            let actual = key.withUTF8Bytes {
                EntryChecksum.of(key: UnsafeRawBufferPointer($0), value: UnsafeRawBufferPointer(valueBytes))
            }
            guard actual == stored else { return nil }
            return String(validatingUTF8Bytes: valueBytes)
        }
        guard let value else {
            throw OfflineStoreError(
                .corrupt,
                "The file \(path) of this key is damaged (its checksum does not match, or it was not written by "
                    + "this version of FileOfflineStore): delete the key or rewrite it, or restore the folder from a "
                    + "backup.",
                engine: .file, key: key)
        }
        return value
    }
}
