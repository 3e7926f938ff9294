import Testing

@testable import SovariaPostgREST

/// The overlay's comparisons on their own.
@Suite struct PostgRESTComparisonTests {
    /// An integer of at most 18 digits is read without `Decimal`, as `Int64(_:)` reads its text;
    /// anything else is left to the general comparison.
    @Test(
        arguments: [
            ("0", 0), ("-0", 0), ("7", 7), ("-42", -42), ("999999999999999999", 999_999_999_999_999_999),
            ("-999999999999999999", -999_999_999_999_999_999), ("1000000000000000000", nil), ("", nil), ("-", nil),
            ("+1", nil), ("1.0", nil), ("1e3", nil), ("0x1", nil), ("--1", nil), ("1-", nil), (" 1", nil),
        ] as [(String, Int64?)])
    func aPlainIntegerIsReadFromItsDigits(text: String, value: Int64?) {
        #expect(PostgRESTComparison.plainInteger(text) == value)
    }
}
