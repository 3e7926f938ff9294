/// The binary form of a batch in ``FileTree``'s journal, written once every new value of the batch
/// is already in a temporary file: what is left to do is renames and removals, which need no
/// free space.
///
/// `"SOVJ2\n"`, then per step a tag byte (1 rename a staged file into a key's place, 2 remove a
/// key), the key's length (UInt32 LE) and bytes, and for a rename the staged file's name (its
/// length as UInt32 LE, then its bytes); last, FNV-1a 64 of everything before it (UInt64 LE).
/// Each key appears once, so the steps can run again in any state a crash left them in.
enum BatchJournal {
    /// One step of a journaled batch.
    enum Step: Equatable, Sendable {
        /// Rename the staged file `stagedName` (in the store's root folder) to `key`'s file.
        case rename(stagedName: String, key: String)
        /// Remove `key`'s file.
        case remove(key: String)

        var key: String {
            switch self {
            case .rename(_, let key), .remove(let key): key
            }
        }
    }

    private static let magic = Array("SOVJ2\n".utf8)
    private static let renameTag: UInt8 = 1
    private static let removeTag: UInt8 = 2

    static func encode(_ steps: [Step]) -> [UInt8] {
        var bytes = magic
        for step in steps {
            switch step {
            case .rename(let stagedName, let key):
                bytes.append(renameTag)
                appendString(key, to: &bytes)
                appendString(stagedName, to: &bytes)
            case .remove(let key):
                bytes.append(removeTag)
                appendString(key, to: &bytes)
            }
        }
        append(checksum(bytes[...]), to: &bytes)
        return bytes
    }

    /// The steps, or `nil` when the bytes are not a whole, intact journal.
    static func decode(_ bytes: [UInt8]) -> [Step]? {
        guard bytes.count >= magic.count + 8, bytes.starts(with: magic) else { return nil }
        let body = bytes[..<(bytes.count - 8)]
        guard read(UInt64.self, from: bytes[body.endIndex...]) == checksum(body) else { return nil }
        var cursor = bytes[magic.count..<body.endIndex]
        var steps: [Step] = []
        while let tag = cursor.popFirst() {
            guard let key = takeString(from: &cursor) else { return nil }
            switch tag {
            case renameTag:
                guard let stagedName = takeString(from: &cursor) else { return nil }
                steps.append(.rename(stagedName: stagedName, key: key))
            case removeTag:
                steps.append(.remove(key: key))
            default:
                return nil
            }
        }
        return steps
    }

    private static func appendString(_ string: String, to bytes: inout [UInt8]) {
        append(UInt32(string.utf8.count), to: &bytes)
        bytes += string.utf8
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

    private static func takeString(from cursor: inout ArraySlice<UInt8>) -> String? {
        guard let count = read(UInt32.self, from: cursor).map(Int.init) else { return nil }
        cursor = cursor.dropFirst(4)
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
