#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension String {
    /// The text of `bytes`, or `nil` when they are not valid UTF-8: how every engine turns the
    /// bytes it stored back into a key or a value.
    ///
    /// `String(validating:as:)` is generic and looks up type metadata on every call (about
    /// 55 ns, more than the rest of a short key's work). `String(decoding:as:)` on a buffer is
    /// specialized and fast, but repairs bad bytes instead of failing; the text it returns is
    /// valid exactly when its bytes equal the input, which one `memcmp` checks.
    package init?(validatingUTF8Bytes bytes: UnsafeBufferPointer<UInt8>) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.utf8.count == bytes.count else { return nil }
        var copy = text
        let same = copy.withUTF8 { decoded in
            guard let decodedStart = decoded.baseAddress, let start = bytes.baseAddress else { return bytes.isEmpty }
            return memcmp(decodedStart, start, bytes.count) == 0
        }
        guard same else { return nil }
        self = text
    }
}
