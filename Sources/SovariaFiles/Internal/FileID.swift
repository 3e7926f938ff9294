/// The name of a cached file: the first 128 bits of SHA-256 over its key's UTF-8 bytes, written as
/// 32 lowercase hex digits in `files/` and in the metadata key.
///
/// Kept as two integers, not a string: opening a cache of 100,000 files parses, hashes and
/// compares 100,000 of them several times, and a 32-character Swift string costs a heap
/// allocation and a SipHash over 32 bytes each time (about 4x slower at open, measured).
struct FileID: Hashable, Sendable, CustomStringConvertible {
    var high: UInt64
    var low: UInt64

    /// The id of a cache key.
    init(of key: String) {
        let digest = SHA256.digest(Array(key.utf8))
        high = digest[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
        low = digest[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The id written as `hex` (32 lowercase hex digits), or `nil` for anything else.
    init?(hex: some Collection<UInt8>) {
        guard hex.count == 32 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (position, byte) in hex.enumerated() {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
            if position < 16 { high = high << 4 | digit } else { low = low << 4 | digit }
        }
        self.high = high
        self.low = low
    }

    /// 32 lowercase hex digits: the file's name.
    var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(32)
        for word in [high, low] {
            for shift in stride(from: 60, through: 0, by: -4) { text.append(digits[Int(word >> UInt64(shift) & 0xf)]) }
        }
        return String(decoding: text, as: UTF8.self)
    }

    var description: String { hex }
}
