import Foundation
import SovariaPlumbing

/// One write of a batch passed to ``OfflineStore/write(_:)``.
public enum StoreWrite: Sendable, Hashable {
    /// Stores `value` under `key`.
    case set(key: String, value: String)
    /// Stores the bytes `data` under `key`: any bytes, UTF-8 or not (see ``StoreValue``).
    case setData(key: String, data: Data)
    /// Removes `key`; a missing key is not an error.
    case delete(key: String)

    /// The key this write touches.
    public var key: String {
        switch self {
        case .set(let key, _), .setData(let key, _), .delete(let key): key
        }
    }

    /// The length of the value this write stores, in bytes; 0 for a delete.
    public var valueByteCount: Int {
        switch self {
        case .set(_, let value): value.utf8.count
        case .setData(_, let data): data.count
        case .delete: 0
        }
    }

    /// Calls `body` with the bytes of the value this write stores; `nil` for a delete.
    package func withValueBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result? {
        switch self {
        case .set(_, let value): try value.withUTF8Bytes { try body(UnsafeRawBufferPointer($0)) }
        case .setData(_, let data): try data.withUnsafeBytes(body)
        case .delete: nil
        }
    }

    /// Whether this write stores a value (``set(key:value:)`` or ``setData(key:data:)``).
    public var isSet: Bool {
        if case .delete = self { false } else { true }
    }
}
