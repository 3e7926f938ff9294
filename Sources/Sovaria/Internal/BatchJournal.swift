/// The binary form of a batch in ``FileTree``'s journal:
/// `"SOVJ1\n"`, then per write a tag byte (1 set, 2 delete), the key's length (UInt32 LE) and
/// bytes, for a set the value's length (UInt64 LE) and bytes; last, FNV-1a 64 of everything
/// before it (UInt64 LE).
enum BatchJournal {
    private static let magic = Array("SOVJ1\n".utf8)
    private static let setTag: UInt8 = 1
    private static let deleteTag: UInt8 = 2

    static func encode(_ batch: [StoreWrite]) -> [UInt8] {
        var bytes = magic
        for write in batch {
            switch write {
            case .set(let key, let value):
                bytes.append(setTag)
                append(UInt32(key.utf8.count), to: &bytes)
                bytes += key.utf8
                append(UInt64(value.utf8.count), to: &bytes)
                bytes += value.utf8
            case .delete(let key):
                bytes.append(deleteTag)
                append(UInt32(key.utf8.count), to: &bytes)
                bytes += key.utf8
            }
        }
        append(checksum(bytes[...]), to: &bytes)
        return bytes
    }

    /// The batch, or `nil` when the bytes are not a whole, intact journal.
    static func decode(_ bytes: [UInt8]) -> [StoreWrite]? {
        guard bytes.count >= magic.count + 8, bytes.starts(with: magic) else { return nil }
        let body = bytes[..<(bytes.count - 8)]
        guard read(UInt64.self, from: bytes[body.endIndex...]) == checksum(body) else { return nil }
        var cursor = bytes[magic.count..<body.endIndex]
        var batch: [StoreWrite] = []
        while let tag = cursor.popFirst() {
            guard let keyLength = take(UInt32.self, from: &cursor),
                let key = takeString(Int(keyLength), from: &cursor)
            else { return nil }
            switch tag {
            case setTag:
                guard let valueLength = take(UInt64.self, from: &cursor), valueLength <= UInt64(cursor.count),
                    let value = takeString(Int(valueLength), from: &cursor)
                else { return nil }
                batch.append(.set(key: key, value: value))
            case deleteTag:
                batch.append(.delete(key: key))
            default:
                return nil
            }
        }
        return batch
    }

    private static func append<Integer: FixedWidthInteger>(_ value: Integer, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    private static func read<Integer: FixedWidthInteger>(_: Integer.Type, from bytes: ArraySlice<UInt8>) -> Integer? {
        guard bytes.count >= MemoryLayout<Integer>.size else { return nil }
        var value: Integer = 0
        for (shift, byte) in bytes.prefix(MemoryLayout<Integer>.size).enumerated() {
            value |= Integer(byte) << (shift * 8)
        }
        return value
    }

    private static func take<Integer: FixedWidthInteger>(
        _ type: Integer.Type, from cursor: inout ArraySlice<UInt8>
    )
        -> Integer?
    {
        guard let value = read(type, from: cursor) else { return nil }
        cursor = cursor.dropFirst(MemoryLayout<Integer>.size)
        return value
    }

    private static func takeString(_ count: Int, from cursor: inout ArraySlice<UInt8>) -> String? {
        guard count <= cursor.count else { return nil }
        defer { cursor = cursor.dropFirst(count) }
        return String(validating: cursor.prefix(count), as: UTF8.self)
    }

    private static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}
