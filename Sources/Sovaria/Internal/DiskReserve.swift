#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file of zeros kept beside a store, given back when a batch of deletes finds the disk full.
///
/// Deletes are how an app frees space, and a batch of them still writes: SQLite's log, the file
/// store's journal. On a disk with no byte left they would fail like every other write; the
/// reserve's space lets them through. It is written again when the store next opens with space
/// to spare, and costs that much disk meanwhile.
package struct DiskReserve: Sendable {
    /// The reserve file.
    package let path: String

    /// The reserve at `path`, written now with `sizeBytes` if it is missing and the disk has the
    /// space (a store on a full disk opens without it).
    package init(path: String, sizeBytes: Int) {
        self.path = path
        guard access(path, F_OK) != 0 else { return }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let zeros = [UInt8](repeating: 0, count: sizeBytes)
        let written = zeros.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        if written != sizeBytes { unlink(path) }
    }

    /// Deletes the reserve; returns whether there was one to give back.
    package func release() -> Bool {
        unlink(path) == 0
    }

    /// Whether every write of `batch` is a delete: the batches the reserve is for.
    package static func isOnlyDeletes(_ batch: [StoreWrite]) -> Bool {
        batch.allSatisfy { if case .delete = $0 { true } else { false } }
    }
}
