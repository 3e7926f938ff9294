/// The key layout of the write queue (docs/ARCHITECTURE.md, "Write queue and rejected list"):
///
/// ```
/// sov:queue:<sequence, 20 digits>:<client id>              →  QueuedWrite as JSON
/// sov:rejected:<rejection sequence, 20 digits>:<client id> →  RejectedWrite as JSON
/// sov:meta:queue:sequence:<sequence, 20 digits>            →  "" (the last sequence given out)
/// ```
///
/// Fixed-width sequences make byte order queue order; the client id in the name lets the
/// queue open, find and remove a write from key names alone.
enum QueueKeys {
    static let queuePrefix = "sov:queue:"
    static let rejectedPrefix = "sov:rejected:"
    static let sequencePrefix = "sov:meta:queue:sequence:"
    /// `UInt64.max` has 20 digits.
    static let sequenceDigits = 20

    static func queued(_ sequence: UInt64, _ id: String) -> String { queuePrefix + padded(sequence) + ":" + id }

    static func rejected(_ sequence: UInt64, _ id: String) -> String {
        rejectedPrefix + padded(sequence) + ":" + id
    }

    static func lastSequence(_ sequence: UInt64) -> String { sequencePrefix + padded(sequence) }

    static func padded(_ sequence: UInt64) -> String {
        let digits = String(sequence)
        return String(repeating: "0", count: sequenceDigits - digits.utf8.count) + digits
    }

    /// The sequence and client id of a `<prefix><20 digits>:<id>` key, or `nil` when the name
    /// does not have that form.
    static func parse(_ key: String, prefix: String) -> (sequence: UInt64, id: String)? {
        let rest = key.utf8.dropFirst(prefix.utf8.count)
        guard key.utf8.starts(with: prefix.utf8), rest.count > sequenceDigits + 1,
            let sequence = parseSequence(rest.prefix(sequenceDigits)),
            rest.dropFirst(sequenceDigits).first == UInt8(ascii: ":")
        else { return nil }
        return (sequence, String(Substring(rest.dropFirst(sequenceDigits + 1))))
    }

    /// The sequence a `sov:meta:queue:sequence:<20 digits>` key records, or `nil`.
    static func parseLastSequence(_ key: String) -> UInt64? {
        let rest = key.utf8.dropFirst(sequencePrefix.utf8.count)
        guard key.utf8.starts(with: sequencePrefix.utf8), rest.count == sequenceDigits else { return nil }
        return parseSequence(rest)
    }

    private static func parseSequence(_ digits: Substring.UTF8View) -> UInt64? {
        guard digits.count == sequenceDigits, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return UInt64(String(Substring(digits)))
    }
}
