import Foundation

/// One parameter of a statement, sent in PostgreSQL's binary format with an explicit length: no
/// value ever becomes part of the SQL text, and `"\0"` survives.
enum PostgresParameter {
    /// The UTF-8 bytes of a key or value, as `bytea`.
    case utf8(String)
    /// Raw bytes (a range bound, which may not be UTF-8), as `bytea`.
    case bytes([UInt8])
    /// A byte value, as `bytea`.
    case data(Data)
    /// An `int8` (a `LIMIT`).
    case int64(Int)
    /// A `text` (a table name looked up in the catalog).
    case text(String)

    /// The type OID the statement is prepared with (`pg_type.oid`).
    var typeOID: UInt32 {
        switch self {
        case .utf8, .bytes, .data: 17  // bytea
        case .int64: 20  // int8
        case .text: 25  // text
        }
    }

    /// Appends the binary form to `buffer`: raw bytes for `bytea` and `text`, big-endian for `int8`.
    func append(to buffer: inout [UInt8]) {
        switch self {
        case .utf8(let text), .text(let text): buffer.append(contentsOf: text.utf8)
        case .bytes(let bytes): buffer.append(contentsOf: bytes)
        case .data(let data): buffer.append(contentsOf: data)
        case .int64(let value): withUnsafeBytes(of: Int64(value).bigEndian) { buffer.append(contentsOf: $0) }
        }
    }
}
