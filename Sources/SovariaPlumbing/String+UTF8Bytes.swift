#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension String {
    /// The text of `bytes`, or `nil` when they are not valid UTF-8: how every engine turns the
    /// bytes it stored back into a key or a value.
    ///
    /// `String(validating:as:)` is generic and looks up type metadata on every call, more than
    /// the rest of a short key's work. `String(decoding:as:)` on a buffer is
    /// specialized and fast, but repairs bad bytes instead of failing; the text it returns is
    /// valid exactly when its bytes equal the input, which one `memcmp` checks.
    @usableFromInline package init?(validatingUTF8Bytes bytes: UnsafeBufferPointer<UInt8>) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.utf8.count == bytes.count else { return nil }
        let same = text.withUTF8Bytes { decoded in
            guard let decodedStart = decoded.baseAddress, let start = bytes.baseAddress else { return bytes.isEmpty }
            return memcmp(decodedStart, start, bytes.count) == 0
        }
        guard same else { return nil }
        self = text
    }

    /// Calls `body` with the string's UTF-8 bytes: in place for a native string (every string a
    /// store made), else from a contiguous copy.
    ///
    /// `withUTF8` needs a `var`, and the copy that takes costs a retain and a release the
    /// compiler does not always elide; this runs on every key a read, a scan or an open handles.
    /// Inlinable, so the engines' modules specialize it: called generically across the module
    /// boundary it looked up type metadata on every call.
    @inlinable
    package func withUTF8Bytes<Success, Failure: Error>(
        _ body: (UnsafeBufferPointer<UInt8>) throws(Failure) -> Success
    ) throws(Failure) -> Success {
        let inPlace: Result<Success, Failure>? = utf8.withContiguousStorageIfAvailable { bytes in
            Result { () throws(Failure) in try body(bytes) }
        }
        if let inPlace { return try inPlace.get() }
        var copy = self
        // `withUTF8` rethrows untyped errors: carry the typed one out in a `Result`.
        return try copy.withUTF8 { bytes in Result { () throws(Failure) in try body(bytes) } }.get()
    }

    /// Feeds the string's UTF-8 bytes to `hasher` as one run: the hash that goes with
    /// ``hasSameUTF8Bytes(as:)``, as `String`'s own goes with `==`.
    @inlinable
    package func hashUTF8Bytes(into hasher: inout Hasher) {
        withUTF8Bytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Whether the two strings are the same UTF-8 bytes: not `==`, which takes two spellings of
    /// one text (`é` composed or not) for one.
    package func hasSameUTF8Bytes(as other: String) -> Bool {
        // The same representation is the same string: one storage, or the same few bytes held in
        // the string itself (a table's name, a column's, met once per change).
        if Self.haveSameRepresentation(self, other) { return true }
        let count = utf8.count
        guard count == other.utf8.count else { return false }
        // A short string is held in the string itself, with no storage to compare in place (the
        // closures above would copy it): its few bytes are compared as they come.
        if count <= 15 { return utf8.elementsEqual(other.utf8) }
        return compareUTF8Bytes(with: other) == 0
    }

    /// Whether `a` and `b` are the same bits: then they are the same string, since both are
    /// alive while they are compared: one storage (same address, same count), or the same few
    /// bytes held in the string itself. A `false` says nothing: one text may be held two ways.
    private static func haveSameRepresentation(_ a: String, _ b: String) -> Bool {
        withUnsafeBytes(of: a) { mine in
            withUnsafeBytes(of: b) { theirs in
                guard let first = mine.baseAddress, let second = theirs.baseAddress else { return false }
                return memcmp(first, second, mine.count) == 0
            }
        }
    }

    /// The order of the two strings' UTF-8 bytes, as `memcmp` then length give it: negative when
    /// this one comes first, 0 when the bytes are the same, positive after. Not `String`'s `<`
    /// or `==`, which compare by Unicode equivalence. One storage is equal at once (no compare).
    package func compareUTF8Bytes(with other: String) -> Int {
        withUTF8Bytes { mine in
            other.withUTF8Bytes { theirs in
                if mine.baseAddress == theirs.baseAddress, mine.count == theirs.count { return 0 }
                let common = min(mine.count, theirs.count)
                if common > 0, let a = mine.baseAddress, let b = theirs.baseAddress {
                    let order = memcmp(a, b, common)
                    if order != 0 { return Int(order) }
                }
                return mine.count - theirs.count
            }
        }
    }
}
