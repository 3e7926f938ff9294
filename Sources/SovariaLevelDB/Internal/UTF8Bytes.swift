/// Bytes as the `const char *` plus length that LevelDB's C API takes; never a C string, so `\0`
/// inside a key or value is kept.
extension UnsafeBufferPointer<UInt8> {
    /// The first byte, typed as LevelDB wants it; a valid pointer even when the buffer is empty
    /// (an empty `String`'s buffer may have no base address).
    var cChars: UnsafePointer<CChar> {
        UnsafeRawPointer(baseAddress ?? ("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
    }
}

extension String {
    /// The text of `count` bytes at `start`, read with their length (a `\0` is kept), or `nil`
    /// when they are not valid UTF-8.
    init?(validatingBytes start: UnsafePointer<CChar>?, count: Int) {
        let first = UnsafeRawPointer(start)?.assumingMemoryBound(to: UInt8.self)
        let bytes = UnsafeBufferPointer(start: first, count: count)
        // The standard library's validating initializer looks up generic metadata on every call
        // (~55 ns, three times the cost of a short key); short ASCII text, which is valid UTF-8
        // as it is, skips it.
        if count <= Self.shortTextMaxBytes, Self.isASCII(bytes) {
            self = String(decoding: bytes, as: UTF8.self)
        } else {
            self.init(validating: bytes, as: UTF8.self)
        }
    }

    /// Up to this length, checking for ASCII first costs less than the generic validator.
    private static let shortTextMaxBytes = 64

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var highBits: UInt8 = 0
        for byte in bytes { highBits |= byte }
        return highBits < 0x80
    }

    /// Calls `body` with the string's UTF-8 bytes, without copying a native string.
    func withUTF8Bytes<Success, Failure: Error>(
        _ body: (UnsafeBufferPointer<UInt8>) throws(Failure) -> Success
    ) throws(Failure) -> Success {
        var string = self
        // `withUTF8` rethrows untyped errors: carry the typed one out in a `Result`.
        return try string.withUTF8 { bytes in Result { () throws(Failure) in try body(bytes) } }.get()
    }
}
