/// New client ids: random (version 4) UUIDs as lowercase text, the form
/// `UUID().uuidString.lowercased()` gives, made without Foundation's `UUID` (docs/ARCHITECTURE.md).
enum ClientID {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        // RFC 9562: version 4 in the high nibble of byte 6, variant 0b10 in the top bits of byte 8.
        let high = (generator.next() as UInt64) & ~0xF000 | 0x4000
        let low = (generator.next() as UInt64) & ~(0xC000 << 48) | (0x8000 << 48)
        return String(unsafeUninitializedCapacity: 36) { text in
            let hex: StaticString = "0123456789abcdef"
            var index = 0
            hex.withUTF8Buffer { hex in
                for (half, value) in [(0, high), (1, low)] {
                    for nibble in 0..<16 {
                        // Dashes after hex digits 8, 12, 16 and 20.
                        let digit = half * 16 + nibble
                        if digit == 8 || digit == 12 || digit == 16 || digit == 20 {
                            text[index] = UInt8(ascii: "-")
                            index += 1
                        }
                        text[index] = hex[Int(value >> UInt64(60 - 4 * nibble) & 0xF)]
                        index += 1
                    }
                }
            }
            return index
        }
    }
}
