import CLMDB
import Foundation
import Sovaria
import SovariaPlumbing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension MDB_val {
    /// The bytes this value points at: valid only until its transaction ends or writes again.
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: mv_data, count: mv_size)
    }

    /// A copy of the bytes as a string; throws ``OfflineStoreError/Code/corrupt`` unless they are UTF-8.
    func string(_ what: String, key: String? = nil) throws(OfflineStoreError) -> String {
        try String(copyingUTF8: bytes, what, key: key)
    }
}

extension String {
    /// A copy of `bytes` as a string; throws ``OfflineStoreError/Code/corrupt`` (naming `what`) unless they
    /// are valid UTF-8.
    init(copyingUTF8 bytes: UnsafeRawBufferPointer, _ what: String, key: String? = nil) throws(OfflineStoreError) {
        guard let string = String(validatingUTF8Bytes: bytes.assumingMemoryBound(to: UInt8.self)) else {
            throw OfflineStoreError.lmdbNotUTF8(what, key: key)
        }
        self = string
    }

    /// Calls `body` with an `MDB_val` over the string's UTF-8 bytes, passed by length (never as a C
    /// string, so `"\0"` is kept). LMDB only reads through the pointer.
    func withMDBVal<Result, Failure: Error>(
        _ body: (inout MDB_val) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try withUTF8Bytes { (utf8) throws(Failure) in
            var value = MDB_val(mv_size: utf8.count, mv_data: UnsafeMutableRawPointer(mutating: utf8.baseAddress))
            return try body(&value)
        }
    }
}

extension Data {
    /// Calls `body` with an `MDB_val` over the bytes. LMDB only reads through the pointer.
    func withMDBVal<Result>(_ body: (inout MDB_val) throws -> Result) rethrows -> Result {
        try withUnsafeBytes { bytes in
            var value = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return try body(&value)
        }
    }
}

extension Array where Element == UInt8 {
    /// Calls `body` with an `MDB_val` over the bytes. LMDB only reads through the pointer.
    func withMDBVal<Result>(_ body: (inout MDB_val) throws -> Result) rethrows -> Result {
        try withUnsafeBytes { bytes in
            var value = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return try body(&value)
        }
    }
}
