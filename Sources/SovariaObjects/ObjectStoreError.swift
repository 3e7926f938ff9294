/// The one error type of ``ObjectStore``: a stable ``Code`` to match on, a message that says what
/// to do, the object's id and key, and the error it wraps (a `DecodingError`, an
/// `OfflineStoreError`, …).
///
/// ```swift
/// do { _ = try await notes.objects() } catch let error as ObjectStoreError where error.code == .decodingFailed {
///     print("note \(error.id ?? "?") cannot be read: \(error.underlying.map { "\($0)" } ?? "")")
/// }
/// ```
///
/// - Important: Errors of the store itself (a full disk, a closed store) are passed on as the
///   store's `OfflineStoreError`, unwrapped; this type covers what the object layer adds.
public struct ObjectStoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, stable across releases; new codes may be added.
    public var code: Code
    /// What happened and what to do next.
    public var message: String
    /// The id of the object the call was about, when there is one.
    public var id: String?
    /// The store key of the object the call was about, when there is one.
    public var key: String?
    /// The error this one wraps: the coder's `DecodingError` or `EncodingError`, for example.
    public var underlying: (any Error)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, id: String? = nil, key: String? = nil, underlying: (any Error)? = nil)
    {
        self.code = code
        self.message = message
        self.id = id
        self.key = key
        self.underlying = underlying
    }

    /// `"code: message (id …)"`, and the underlying error.
    public var description: String {
        var text = "\(code): \(message)"
        if let id { text += " (id \(id))" }
        if let underlying { text += " — underlying: \(underlying)" }
        return text
    }

    /// A stable, extensible error code: match it with `==` or in a `switch`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) { self.name = name }

        /// The id is empty, or with the collection's prefix it makes a key longer than a store
        /// takes (511 UTF-8 bytes). Nothing was written.
        public static let invalidID = Code("invalidID")
        /// The coder could not encode the object. Nothing was written.
        public static let encodingFailed = Code("encodingFailed")
        /// The bytes stored for an object could not be decoded as the object's type: written by
        /// another version of the app, by another coder, or damaged.
        public static let decodingFailed = Code("decodingFailed")
        /// The collection's stored schema version is newer than the one the app opens it with
        /// (an older app on newer data). Nothing was changed.
        public static let newerVersion = Code("newerVersion")
        /// A migration to another version was interrupted; open the collection with that version
        /// first to finish it.
        public static let migrationInProgress = Code("migrationInProgress")
        /// The collection's version key holds something that is not a version number.
        public static let corruptVersion = Code("corruptVersion")

        /// The code's name, e.g. `"decodingFailed"`.
        public var description: String { name }
    }
}
