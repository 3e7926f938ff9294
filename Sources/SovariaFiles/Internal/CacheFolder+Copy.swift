import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension CacheFolder {
    /// Copies the file at `source` to a new file at `destination` (mode 0600), 1 MiB at a time.
    ///
    /// Every failure is an ``OfflineStoreError`` with the `errno` it came from: a full disk is
    /// `.full`, a source that cannot be read `.notFound` or `.permissionDenied`. (Foundation's
    /// `copyItem` throws `CocoaError`s, which callers of the file cache cannot match on.) A
    /// destination that was started is removed on failure.
    static func copyFile(from source: String, to destination: String, key: String) throws(OfflineStoreError) {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else {
            guard errno == ENOENT else { throw POSIXFile.error("Opening the file to cache", source, key: key) }
            throw OfflineStoreError(
                .notFound, "The file \(source) to cache under \(key) does not exist; pass the URL of a file.", key: key)
        }
        defer { close(input) }
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw POSIXFile.error("Creating", destination, key: key) }
        var failure: OfflineStoreError?
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        copying: while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count < 0 {
                failure = POSIXFile.error("Reading", source, key: key)
                break
            }
            if count == 0 { break }
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes { write(output, $0.baseAddress! + offset, count - offset) }
                if written < 0, errno == EINTR { continue }
                if written < 0 {
                    failure = POSIXFile.error("Writing", destination, key: key)
                    break copying
                }
                offset += written
            }
        }
        if close(output) != 0, failure == nil { failure = POSIXFile.error("Closing", destination, key: key) }
        if let failure {
            unlink(destination)
            throw failure
        }
    }
}
