import Sovaria

/// An object's id in an ``ObjectChange``: equal, hashed and ordered by its UTF-8 bytes, as the
/// store's keys are.
///
/// `String` compares canonically equivalent text as equal, so a `Set<String>` would merge
/// `"é"` and `"e\u{301}"`, which are two ids and two objects here. Write an id as a string
/// literal (`change.inserted.contains("n1")`), and read its text with ``string``.
public struct ObjectID: Hashable, Comparable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The id as text.
    public let string: String

    /// The id `string`.
    ///
    /// - Parameter string: The id's text.
    public init(_ string: String) { self.string = string }

    /// The id written as a string literal.
    ///
    /// - Parameter value: The id's text.
    public init(stringLiteral value: String) { string = value }

    /// The id's text.
    public var description: String { string }

    /// Equal when the UTF-8 bytes are.
    public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool {
        StoreKey.Bytes(lhs.string) == StoreKey.Bytes(rhs.string)
    }

    /// Hashes the UTF-8 bytes.
    public func hash(into hasher: inout Hasher) { StoreKey.Bytes(string).hash(into: &hasher) }

    /// Byte order (the order of ``ObjectStore/objects()``).
    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        StoreKey.Bytes(lhs.string) < StoreKey.Bytes(rhs.string)
    }
}
