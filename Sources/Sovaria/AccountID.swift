/// The user a part of a store belongs to: a stable user id the app gets from its auth (a UUID, an
/// email, a Firebase or Supabase user id), never a token.
///
/// An id has 1 to ``maxUTF8Count`` (64) bytes, each one of `A`–`Z`, `a`–`z`, `0`–`9`, `.`, `_`,
/// `@`, `+` and `-`, so it is a legal part of a key on every engine and never holds the `/` and
/// `:` that separate the parts of Sovaria's keys. ``AccountScopedStore`` keeps each account's keys
/// under `sov:account:<id>/`.
///
/// ```swift
/// let account = try AccountID(session.user.id)  // "3f2c1a9e-…", "ada@example.com"
/// let store = AccountScopedStore(wrapping: sqlite, account: account)
/// ```
public struct AccountID: Sendable, Hashable, CustomStringConvertible {
    /// The most UTF-8 bytes an id has.
    public static let maxUTF8Count = 64

    /// The id as the app gave it.
    public let rawValue: String

    /// The account whose id is `id`.
    ///
    /// - Throws: ``OfflineStoreError`` with code ``OfflineStoreError/Code/invalidAccount`` when
    ///   `id` is empty, longer than ``maxUTF8Count`` bytes, or holds a character other than
    ///   `A`–`Z`, `a`–`z`, `0`–`9`, `.`, `_`, `@`, `+` and `-`.
    public init(_ id: String) throws(OfflineStoreError) {
        if let problem = Self.problem(with: id) {
            throw OfflineStoreError(
                .invalidAccount,
                "An account id must have 1 to \(Self.maxUTF8Count) characters, each one of A-Z, a-z, 0-9, "
                    + "\".\", \"_\", \"@\", \"+\" and \"-\" (a stable user id from your auth, such as a UUID or "
                    + "an email; never a token): this one \(problem). Pass the user's id, or a hash of it in hex."
            )
        }
        rawValue = id
    }

    /// An id already known to be valid: one read back from a key this module wrote.
    init(validated id: String) {
        rawValue = id
    }

    /// The id.
    public var description: String { rawValue }

    /// Whether `bytes` form a valid id.
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        (1...maxUTF8Count).contains(bytes.count) && bytes.allSatisfy(isAllowed)
    }

    /// What makes `id` invalid, as the end of a sentence; `nil` when it is valid.
    private static func problem(with id: String) -> String? {
        let count = id.utf8.count
        if count == 0 { return "is empty" }
        if count > maxUTF8Count { return "has \(count) UTF-8 bytes" }
        guard let refused = id.unicodeScalars.first(where: { !$0.isASCII || !isAllowed(UInt8($0.value)) }) else {
            return nil
        }
        return "holds \(String(refused).debugDescription)"
    }

    /// `A`–`Z`, `a`–`z`, `0`–`9`, `.`, `_`, `@`, `+`, `-`.
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "+"), UInt8(ascii: "-"): true
        default: false
        }
    }
}
