#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file of ``sizeBytes`` kept next to the database (`<name>-reserve`), given back when a batch of
/// deletes finds the disk full.
///
/// In WAL mode even a delete writes: its pages go to the log first. On a disk with no byte left,
/// the deletes an app makes to free space would fail like every other write; the reserve's space
/// lets them through. The reserve is made again when the store next opens with space to spare.
struct SQLiteReserve {
    static let sizeBytes = 1 << 20
    let path: String

    /// The reserve of the database at `databasePath`, written now if it is missing and the disk
    /// has the space (a store on a full disk opens without it).
    init(databasePath: String) {
        path = databasePath + "-reserve"
        guard access(path, F_OK) != 0 else { return }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return }
        let zeros = [UInt8](repeating: 0, count: Self.sizeBytes)
        let written = zeros.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        if written != Self.sizeBytes { unlink(path) }
    }

    /// Deletes the reserve; returns whether there was one to give back.
    func release() -> Bool {
        unlink(path) == 0
    }
}
