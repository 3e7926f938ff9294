import SovariaPlumbing

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
        self.init(validatingUTF8Bytes: UnsafeBufferPointer(start: first, count: count))
    }
}
