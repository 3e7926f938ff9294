import CLibPQ
import Sovaria
import SovariaPlumbing

/// The rows of one statement (`PGresult *`), in binary format; cleared when released.
// @unchecked Sendable: libpq never changes a result after handing it over, and it belongs to no
// connection, so any thread may read it.
final class PostgresResult: @unchecked Sendable {
    private let handle: OpaquePointer

    /// Takes ownership of `handle`.
    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { PQclear(handle) }

    /// The number of rows.
    var rowCount: Int { Int(PQntuples(handle)) }

    /// The bytes of column `column` in row `row`, valid while this result lives.
    func bytes(row: Int, column: Int) -> UnsafeBufferPointer<UInt8> {
        let count = Int(PQgetlength(handle, Int32(row), Int32(column)))
        guard count > 0, let start = PQgetvalue(handle, Int32(row), Int32(column)) else {
            return UnsafeBufferPointer(start: nil, count: 0)
        }
        return UnsafeBufferPointer(start: UnsafeRawPointer(start).assumingMemoryBound(to: UInt8.self), count: count)
    }

    /// Column `column` of row `row` as a big-endian 64-bit number (binary `int8` or `pg_lsn`), or
    /// `nil` when it is not 8 bytes (SQL `NULL`, a missing row).
    func uint64(row: Int, column: Int) -> UInt64? {
        guard row < rowCount else { return nil }
        let bytes = bytes(row: row, column: column)
        return bytes.count == 8 ? bytes.reduce(0) { $0 << 8 | UInt64($1) } : nil
    }

    /// Column `column` of row `row` as text: a `bytea` holding a key or value (throws
    /// ``OfflineStoreError/Code/corrupt`` when it is not UTF-8), or a `text` column.
    func string(
        row: Int, column: Int, what: String, table: String, key: String? = nil
    ) throws(OfflineStoreError)
        -> String
    {
        guard let text = String(validatingUTF8Bytes: bytes(row: row, column: column)) else {
            throw .postgresNotUTF8(what, table: table, key: key)
        }
        return text
    }
}
