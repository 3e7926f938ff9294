/// URL-safe base64 without padding (RFC 4648 §5), table-driven and strict.
///
/// Not libsodium's `sodium_bin2base64`/`sodium_base642bin`: they run in constant time, which
/// secrets need and a nonce and ciphertext don't, and cost far more per KiB (docs/ARCHITECTURE.md,
/// "Measurements behind the code"). Decoding is strict: any character outside the alphabet, a length that no
/// encoding has, or unused bits that are not zero fail, so every encoding decodes from exactly
/// one text and a changed character never decodes to the same bytes.
enum Base64URL {
    private static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

    /// Two digits for every 12-bit value, first digit in the low byte: one lookup encodes half
    /// of a 3-byte group.
    private static let digitPairs: [UInt16] = {
        let digits = UnsafeBufferPointer(start: alphabet.utf8Start, count: 64)
        return (0..<4_096).map { UInt16(digits[$0 >> 6]) | UInt16(digits[$0 & 63]) << 8 }
    }()

    /// Four tables of 256 entries, one per position in a group of four digits, holding each
    /// digit's value already shifted into place, and ``invalidDigit`` for every other byte: a
    /// group decodes as the OR of four lookups.
    private static let shiftedDigitValues: [UInt32] = {
        var values = [UInt32](repeating: invalidDigit, count: 4 * 256)
        for (value, digit) in UnsafeBufferPointer(start: alphabet.utf8Start, count: 64).enumerated() {
            for position in 0..<4 { values[position * 256 + Int(digit)] = UInt32(value) << (18 - 6 * position) }
        }
        return values
    }()
    /// Above every 24-bit group, so one OR over all groups tells whether any digit was invalid.
    private static let invalidDigit: UInt32 = 1 << 24

    /// The number of characters that encode `byteCount` bytes.
    static func encodedCount(of byteCount: Int) -> Int { (byteCount * 4 + 2) / 3 }

    /// The most bytes `characterCount` characters can decode to.
    static func maxDecodedCount(of characterCount: Int) -> Int { characterCount * 3 / 4 }

    /// Writes the encoding of `bytes` at `output`: exactly ``encodedCount(of:)`` characters.
    static func encode(_ bytes: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) {
        guard let input = bytes.baseAddress else { return }
        digitPairs.withUnsafeBufferPointer { pairs in
            let count = bytes.count
            let rawOutput = UnsafeMutableRawPointer(output)
            var read = 0
            var written = 0
            while read + 3 <= count {
                let group = Int(input[read]) << 16 | Int(input[read + 1]) << 8 | Int(input[read + 2])
                let digits = UInt32(pairs[group >> 12]) | UInt32(pairs[group & 0xFFF]) << 16
                rawOutput.storeBytes(of: digits.littleEndian, toByteOffset: written, as: UInt32.self)
                read += 3
                written += 4
            }
            let left = count - read
            guard left > 0 else { return }
            let group = Int(input[read]) << 16 | (left == 2 ? Int(input[read + 1]) << 8 : 0)
            let high = pairs[group >> 12]
            output[written] = UInt8(truncatingIfNeeded: high)
            output[written + 1] = UInt8(truncatingIfNeeded: high >> 8)
            if left == 2 { output[written + 2] = UInt8(truncatingIfNeeded: pairs[group & 0xFFF]) }
        }
    }

    /// Decodes `text` into `output`, which has room for ``maxDecodedCount(of:)`` bytes; returns
    /// how many bytes it wrote (always that many), or `nil` when `text` is not a strict encoding.
    static func decode(_ text: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) -> Int? {
        let count = text.count
        guard count % 4 != 1 else { return nil }
        guard let input = text.baseAddress else { return 0 }
        return shiftedDigitValues.withUnsafeBufferPointer { values -> Int? in
            let first = values.baseAddress!
            let (second, third, fourth) = (first + 256, first + 512, first + 768)
            var invalid: UInt32 = 0
            var read = 0
            var written = 0
            while read + 4 <= count {
                let group =
                    first[Int(input[read])] | second[Int(input[read + 1])] | third[Int(input[read + 2])]
                    | fourth[Int(input[read + 3])]
                invalid |= group
                output[written] = UInt8(truncatingIfNeeded: group >> 16)
                output[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
                output[written + 2] = UInt8(truncatingIfNeeded: group)
                read += 4
                written += 3
            }
            switch count - read {
            case 2:
                let group = first[Int(input[read])] | second[Int(input[read + 1])]
                invalid |= group | (group & 0xFFFF == 0 ? 0 : invalidDigit)  // unused bits must be zero
                output[written] = UInt8(truncatingIfNeeded: group >> 16)
                written += 1
            case 3:
                let group = first[Int(input[read])] | second[Int(input[read + 1])] | third[Int(input[read + 2])]
                invalid |= group | (group & 0xFF == 0 ? 0 : invalidDigit)  // unused bits must be zero
                output[written] = UInt8(truncatingIfNeeded: group >> 16)
                output[written + 1] = UInt8(truncatingIfNeeded: group >> 8)
                written += 2
            default:
                break
            }
            return invalid < invalidDigit ? written : nil
        }
    }
}
