/// How ``FileOfflineStore`` turns a key into a relative path, and back.
///
/// A key's UTF-8 bytes are written as lowercase hex, which keeps byte order, works on
/// case-insensitive file systems and never yields `/`, `.` or `..`. Hex doubles the length and a
/// file name holds at most 255 bytes, so the hex is cut into folders of ``chunkLength`` digits
/// (`d<hex>`) with the rest as the file name (`k<hex>`): a 511-byte key is four folders and a
/// file. Names starting with `.` are the store's own (temporary files, the batch journal).
enum FileNameScheme {
    /// Hex digits per folder name: 120 key bytes.
    static let chunkLength = 240
    static let filePrefix = UInt8(ascii: "k")
    static let folderPrefix = UInt8(ascii: "d")

    /// The folder names and the file name that hold `key`.
    static func path(for key: String) -> (folders: [String], file: String) {
        var hex = ArraySlice(encode(Array(key.utf8)))
        var folders: [String] = []
        while hex.count > chunkLength {
            folders.append(String(decoding: [folderPrefix] + hex.prefix(chunkLength), as: UTF8.self))
            hex = hex.dropFirst(chunkLength)
        }
        return (folders, String(decoding: [filePrefix] + hex, as: UTF8.self))
    }

    /// The hex digits a folder or file name carries, or `nil` for a name that is not a key's.
    static func digits(ofName name: String, prefix: UInt8) -> [UInt8]? {
        let bytes = Array(name.utf8)
        guard bytes.count >= 3, bytes.count % 2 == 1, bytes[0] == prefix else { return nil }
        let digits = bytes.dropFirst()
        guard digits.allSatisfy({ isLowerHex($0) }) else { return nil }
        if prefix == folderPrefix, digits.count != chunkLength { return nil }
        return Array(digits)
    }

    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        let alphabet = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            hex.append(alphabet[Int(byte >> 4)])
            hex.append(alphabet[Int(byte & 0x0F)])
        }
        return hex
    }

    /// The key whose hex digits are `hex`, or `nil` when they are not the UTF-8 of a string.
    static func decodeKey(_ hex: [UInt8]) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var index = 0
        while index + 1 < hex.count {
            bytes.append(value(ofDigit: hex[index]) << 4 | value(ofDigit: hex[index + 1]))
            index += 2
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func isLowerHex(_ digit: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit)
            || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(digit)
    }

    private static func value(ofDigit digit: UInt8) -> UInt8 {
        digit <= UInt8(ascii: "9") ? digit - UInt8(ascii: "0") : digit - UInt8(ascii: "a") + 10
    }
}
