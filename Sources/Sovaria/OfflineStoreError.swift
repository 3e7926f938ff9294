/// The one error type of every ``OfflineStore``: a stable ``Code`` to match on, a message that
/// says what to do, and the engine's own name, code and error where there is one.
///
/// ```swift
/// do { try await store.set(key, value) } catch let error as OfflineStoreError where error.code == .full {
///     // free space, then retry
/// }
/// ```
public struct OfflineStoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, stable across releases; new codes may be added.
    public var code: Code
    /// What happened and what to do next.
    public var message: String
    /// The engine that failed (``Engine/sqlite``, ``Engine/lmdb``, ``Engine/file``, …).
    public var engine: Engine?
    /// The engine's own result code (an SQLite extended code, an LMDB or errno value, …).
    public var nativeCode: Int32?
    /// The key the failing call was about, when there is one.
    public var key: String?
    /// The error this one wraps, if any.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        engine: Engine? = nil,
        nativeCode: Int32? = nil,
        key: String? = nil,
        underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.engine = engine
        self.nativeCode = nativeCode
        self.key = key
        self.underlying = underlying
    }

    /// `"[engine] code: message (native code N)"`.
    public var description: String {
        var text = engine.map { "[\($0)] " } ?? ""
        text += "\(code): \(message)"
        if let nativeCode { text += " (native code \(nativeCode))" }
        if let underlying { text += " — underlying: \(underlying)" }
        return text
    }

    /// The engine an error comes from: a name, typed so that a typo does not compile. A store of
    /// your own uses `Engine("mine")` (or the string literal `"mine"`).
    public struct Engine: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        /// The engine's name, e.g. `"sqlite"`.
        public let name: String

        /// An engine named `name`.
        public init(_ name: String) { self.name = name }

        /// An engine named by a string literal: `"mine"`.
        public init(stringLiteral name: String) { self.name = name }

        /// `MemoryOfflineStore`.
        public static let memory = Engine("memory")
        /// `FileOfflineStore`, and the POSIX calls of every engine's folder.
        public static let file = Engine("file")
        /// `SQLiteOfflineStore`.
        public static let sqlite = Engine("sqlite")
        /// `LMDBOfflineStore`.
        public static let lmdb = Engine("lmdb")
        /// `LevelDBOfflineStore`.
        public static let leveldb = Engine("leveldb")
        /// `EncryptedOfflineStore` and its keys (libsodium).
        public static let sodium = Engine("sodium")
        /// ``ChecksummedOfflineStore``.
        public static let checksum = Engine("checksum")

        /// The name.
        public var description: String { name }
    }

    /// A stable, extensible error code: match it with `==` or in a `switch`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) { self.name = name }

        /// The key is empty or longer than ``StoreKey/maxUTF8Count`` UTF-8 bytes.
        public static let invalidKey = Code("invalidKey")
        /// An account id is empty, longer than ``AccountID/maxUTF8Count`` bytes, or holds a
        /// character other than `A`–`Z`, `a`–`z`, `0`–`9`, `.`, `_`, `@`, `+` and `-`; nothing was
        /// read or written.
        public static let invalidAccount = Code("invalidAccount")
        /// The value cannot be stored (for example, it is not valid for this engine).
        public static let invalidValue = Code("invalidValue")
        /// Reading or writing the storage failed.
        public static let io = Code("io")
        /// The disk, the map or a quota is full.
        public static let full = Code("full")
        /// The stored data is damaged.
        public static let corrupt = Code("corrupt")
        /// A string read (``OfflineStore/get(_:)``, ``OfflineStore/entries(_:after:limit:)``) met a
        /// value that is not valid UTF-8: a byte value, stored with ``OfflineStore/set(_:data:)``.
        /// Read it with ``OfflineStore/data(_:)``; nothing is damaged.
        public static let notUTF8 = Code("notUTF8")
        /// Another handle, process or transaction holds the store.
        public static let locked = Code("locked")
        /// The store was closed.
        public static let closed = Code("closed")
        /// A value could not be decrypted: wrong key, or it was changed or moved.
        public static let decryptionFailed = Code("decryptionFailed")
        /// The store cannot do this.
        public static let unsupported = Code("unsupported")
        /// Permission to the storage was denied.
        public static let permissionDenied = Code("permissionDenied")
        /// An earlier failure (a full disk mid-write) left the open handle unable to write safely:
        /// reads still work; release every store on this path and open it again to write.
        public static let reopenRequired = Code("reopenRequired")
        /// A write was sent but its answer never came (a connection lost during the commit, a
        /// database failing over): it may or may not have been applied. Read its keys back once
        /// the store answers again to find out; the write queue, the rejected list and the file
        /// cache do that themselves and never pass this code on while the store comes back.
        public static let outcomeUnknown = Code("outcomeUnknown")
        /// No entry has the given identifier (for example a file to cache that does not exist).
        public static let notFound = Code("notFound")
        /// The servers a store was given do not fit together, found when it opens: for example a
        /// PostgreSQL "standby" that is a primary, no primary at all, or a standby of another
        /// cluster. The message names the server; nothing was read or written.
        public static let misconfigured = Code("misconfigured")

        /// The code's name, e.g. `"invalidKey"`.
        public var description: String { name }
    }
}
