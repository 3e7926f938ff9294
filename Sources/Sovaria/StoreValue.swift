import Foundation
import SovariaPlumbing

/// The rules every store applies to values, for engine and wrapper authors.
///
/// A value is bytes. A string is stored as its UTF-8 bytes, so a string read back with
/// ``OfflineStore/data(_:)`` is its `utf8`, and bytes that are valid UTF-8 read back with
/// ``OfflineStore/get(_:)`` as that string. Bytes that are not UTF-8 are read with
/// ``OfflineStore/data(_:)``; ``OfflineStore/get(_:)`` refuses them with
/// ``OfflineStoreError/Code/notUTF8`` rather than repairing them.
public enum StoreValue {
    /// The longest value, in bytes, that every store in Sovaria takes, through every wrapper:
    /// 64 MiB (67,108,864 bytes), so `migrate` between any two engines never fails on a value of
    /// this size or less. Longer values depend on the engine (SQLite and PostgreSQL stop near
    /// 1 GB a row; the others are bounded by memory and disk), which refuses what it cannot take
    /// with ``OfflineStoreError/Code/invalidValue``.
    public static let maxGuaranteedByteCount = 64 << 20

    /// The text of `bytes`, or ``OfflineStoreError/Code/notUTF8`` naming `key` when they are not
    /// valid UTF-8: how a store's string read turns stored bytes into a value.
    public static func string(
        _ bytes: UnsafeRawBufferPointer, key: String, engine: OfflineStoreError.Engine? = nil
    ) throws(OfflineStoreError) -> String {
        guard let text = String(validatingUTF8Bytes: bytes.assumingMemoryBound(to: UInt8.self)) else {
            throw notUTF8(key: key, engine: engine)
        }
        return text
    }

    /// The error of a string read of a value that is not UTF-8.
    public static func notUTF8(key: String, engine: OfflineStoreError.Engine? = nil) -> OfflineStoreError {
        OfflineStoreError(
            .notUTF8,
            "The value is bytes that are not valid UTF-8, stored with set(_:data:): read it with data(_:).",
            engine: engine,
            key: key
        )
    }

    /// The text of `data` for a store that keeps text only, or
    /// ``OfflineStoreError/Code/invalidValue`` naming `key` when it is not valid UTF-8.
    public static func text(of data: Data, key: String) throws(OfflineStoreError) -> String {
        let text = data.withUnsafeBytes { String(validatingUTF8Bytes: $0.assumingMemoryBound(to: UInt8.self)) }
        guard let text else {
            throw OfflineStoreError(
                .invalidValue,
                "This store keeps text only and the value is not valid UTF-8: store it in an engine with "
                    + "byte values (every engine in Sovaria), or implement set(_:data:) in this store.",
                key: key
            )
        }
        return text
    }
}
