import Foundation

extension Data {
    /// `withUnsafeBytes` that keeps `body`'s typed error (the standard one rethrows `any Error`).
    @inlinable
    package func withBytes<Success, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Success
    ) throws(Failure) -> Success {
        try withUnsafeBytes { bytes in Result { () throws(Failure) in try body(bytes) } }.get()
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` that keeps `body`'s typed error (the standard one rethrows `any Error`).
    @inlinable
    package func withBytes<Success, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Success
    ) throws(Failure) -> Success {
        try withUnsafeBytes { bytes in Result { () throws(Failure) in try body(bytes) } }.get()
    }
}
