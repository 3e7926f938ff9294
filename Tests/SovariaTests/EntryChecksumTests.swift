import Sovaria
import SovariaPlumbing
import Testing

/// XXH64 against the reference implementation: the vectors below come from the `xxhash` Python
/// package (`xxhash.xxh64(data, seed=…).intdigest()`), which wraps Yann Collet's C code.
@Suite struct EntryChecksumTests {
    /// `(i × 7 + 3) mod 256` for i in 0..<1000: every byte value, no two neighbours equal.
    static let pattern = (0..<1_000).map { UInt8(($0 * 7 + 3) % 256) }

    static func xxh64(_ bytes: ArraySlice<UInt8>, seed: UInt64 = 0) -> UInt64 {
        bytes.withUnsafeBytes { EntryChecksum.xxh64($0, seed: seed) }
    }

    @Test func matchesTheSpecificationVectors() {
        #expect(Self.xxh64([]) == 0xEF46_DB37_51D8_E999)
        #expect(Self.xxh64(ArraySlice("abc".utf8)) == 0x44BC_2CF5_AD77_0999)
    }

    /// Lengths on each side of the 4-, 8- and 32-byte steps, so every tail path and the
    /// four-lane loop run, alone and together.
    @Test(
        arguments: [
            (0, 0xEF46_DB37_51D8_E999), (1, 0x1F25_C8D0_BC1F_4BB6), (3, 0x31D2_363F_52E5_64C9),
            (4, 0x9BB6_4B7D_66EE_9FDA), (7, 0x9A7B_1499_59CE_60D8), (8, 0xDAB9_9D95_C6F9_0092),
            (9, 0x170B_B6BF_975B_4C02), (15, 0x1B47_CB82_43CC_8E32), (16, 0x4348_5023_2B78_7BE2),
            (31, 0xA2AA_5F33_CC4A_6119), (32, 0x23C3_C17E_F790_FD97), (33, 0x50A7_CFC7_BA58_8784),
            (63, 0x5E3E_54B4_31C7_493C), (64, 0x0EB6_4B3E_F6EE_B01F), (100, 0xA61F_8D4C_170F_E531),
            (1_000, 0x5F23_5FA0_33F1_A3FB),
        ] as [(Int, UInt64)])
    func matchesTheReferenceForEveryTailLength(_ count: Int, _ expected: UInt64) {
        #expect(Self.xxh64(Self.pattern[..<count]) == expected, "length \(count)")
    }

    /// A seed enters all four lanes (one of them as `seed - prime1`) and the short-input path.
    @Test(
        arguments: [
            (0, 0xC434_9FC9_3C01_0000), (9, 0x9C9A_3CD8_3532_D84F), (31, 0x7554_3727_1D1D_0A84),
            (32, 0xBF62_4B93_2C09_0428), (63, 0x2C8D_DCE5_C85D_0D9D), (100, 0xF6D8_F65C_625A_BB4F),
        ] as [(Int, UInt64)])
    func matchesTheReferenceWithASeed(_ count: Int, _ expected: UInt64) {
        #expect(Self.xxh64(Self.pattern[..<count], seed: 0x9E37_79B9_7F4A_7C15) == expected, "length \(count)")
        #expect(Self.xxh64(Self.pattern[..<count], seed: 0x9E37_79B9_7F4A_7C16) != expected, "length \(count)")
    }

    @Test func matchesTheReferenceWithTheLargestSeed() {
        #expect(Self.xxh64(Self.pattern[..<100], seed: .max) == 0x7D5C_A39D_FCFB_EACA)
    }

    @Test func readsInputThatStartsOffAWordBoundary() {
        // Bytes 1..<34 of an array: every 8-byte read is unaligned.
        #expect(Self.xxh64(Self.pattern[1..<34]) == 0x47C5_C5A5_6181_E28E)
    }

    @Test func seedsTheValueWithTheHashOfTheKey() {
        // xxh64(value, seed: xxh64(key, seed: 0)), from the reference.
        #expect(EntryChecksum.of(key: "sov:key", value: "value") == 0x8181_FB7F_DDF1_216A)
        #expect(EntryChecksum.of(key: "sov:cache:feed", value: #"{"a":1}"#) == 0x9C63_7F1A_C17E_3693)
        #expect(Self.xxh64(ArraySlice("sov:é".utf8)) == 0x663D_AB4C_F4FF_7CC6)
    }

    @Test func tellsKeysAndValuesApart() {
        let checksum = EntryChecksum.of(key: "sov:a", value: "v")
        #expect(EntryChecksum.of(key: "sov:b", value: "v") != checksum)
        #expect(EntryChecksum.of(key: "sov:a", value: "w") != checksum)
        #expect(EntryChecksum.of(key: "sov:a", value: "v\0") != checksum)
        // Canonically equal, different bytes: two keys.
        #expect(EntryChecksum.of(key: "sov:é", value: "v") != EntryChecksum.of(key: "sov:e\u{301}", value: "v"))
    }
}
