/// A 128-bit id written as 32 lowercase hex digits: the query cache's list ids and the file
/// cache's file names.
///
/// Kept as two integers, not a string: opening a cache of 100,000 entries parses, hashes and
/// compares 100,000 of them several times, and a 32-character Swift string costs a heap
/// allocation and a SipHash over 32 bytes each time (about 4x slower at open, measured).
public struct HexID: Hashable, Sendable, CustomStringConvertible {
    /// The first 64 bits: the first 16 hex digits.
    @usableFromInline package var high: UInt64
    /// The last 64 bits: the last 16 hex digits.
    @usableFromInline package var low: UInt64

    /// The id made of two 64-bit halves.
    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The id written as `hex` (32 lowercase hex digits), or `nil` for anything else: an id
    /// parsed here always writes back to the same text.
    ///
    /// Not generic, and inlinable: an open calls it once per entry from other modules.
    @inlinable
    package init?(hex: UnsafeBufferPointer<UInt8>) {
        guard hex.count == 32, let digits = hex.baseAddress else { return nil }
        guard let high = Self.word(digits), let low = Self.word(digits + 16) else { return nil }
        self.high = high
        self.low = low
    }

    /// The 64-bit number written in the 16 lowercase hex digits at `digits`.
    ///
    /// Without a branch per digit: in a hash, digits and letters come at random, and a
    /// mispredicted branch per digit was most of an open's parsing time.
    @inlinable
    static func word(_ digits: UnsafePointer<UInt8>) -> UInt64? {
        var word: UInt64 = 0
        var invalid: UInt8 = 0
        for position in 0..<16 {
            let byte = digits[position]
            let decimal = byte &- UInt8(ascii: "0")
            let letter = byte &- UInt8(ascii: "a")
            let isDecimal = decimal < 10
            invalid |= (isDecimal ? 0 : 1) & (letter < 6 ? 0 : 1)
            word = word << 4 | UInt64(isDecimal ? decimal : letter &+ 10)
        }
        return invalid == 0 ? word : nil
    }

    /// The id written as `text` (32 lowercase hex digits), or `nil` for anything else.
    package init?(hex text: String) {
        var text = text
        guard let id = text.withUTF8({ HexID(hex: $0) }) else { return nil }
        self = id
    }

    /// 32 lowercase hex digits.
    package var hex: String {
        String(unsafeUninitializedCapacity: 32) { text in
            writeHex(into: text, at: 0)
            return 32
        }
    }

    /// Writes ``hex`` into `text` at `offset` (32 bytes, which `text` must have room for): a key
    /// that holds an id is written in one buffer.
    package func writeHex(into text: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        precondition(offset >= 0 && offset + 32 <= text.count, "no room for 32 hex digits")
        for position in 0..<32 {
            let word = position < 16 ? high : low
            let shift = UInt64(60 - 4 * (position % 16))
            let digit = UInt8(truncatingIfNeeded: word >> shift & 0xf)
            text[offset + position] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
        }
    }

    /// ``hex``.
    public var description: String { hex }
}
