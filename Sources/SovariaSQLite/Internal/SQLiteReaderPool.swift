import Sovaria
import Synchronization

/// Read-only connections handed out one caller at a time, so reads run on the caller's thread,
/// in parallel, without a hop to a queue.
///
/// The lock is held only to take a reader from the pool or put it back, never while SQLite
/// works. A reader is opened when none is free, so the pool grows to the number of threads
/// reading at once; at most ``maxIdleReaders`` are kept.
final class SQLiteReaderPool: Sendable {
    /// More free readers than this are closed when they come back.
    static let maxIdleReaders = 8

    private let path: String
    private let busyTimeoutMilliseconds: Int32
    private let idle = Mutex<[SQLiteReader]>([])

    /// A pool of readers on `path`, with one reader opened now so a problem shows at open time.
    init(path: String, busyTimeoutMilliseconds: Int32) throws(OfflineStoreError) {
        self.path = path
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        let first = try SQLiteReader(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        idle.withLock { $0.append(first) }
    }

    /// Runs `body` with a reader no one else uses until it returns.
    func withReader<Result>(
        _ body: (SQLiteReader) throws(OfflineStoreError) -> Result
    ) throws(OfflineStoreError)
        -> Result
    {
        let reader: SQLiteReader
        if let free = idle.withLock({ $0.popLast() }) {
            reader = free
        } else {
            reader = try SQLiteReader(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        }
        defer {
            let kept = idle.withLock { readers in
                guard readers.count < Self.maxIdleReaders else { return false }
                readers.append(reader)
                return true
            }
            if !kept { reader.close() }
        }
        return try body(reader)
    }

    /// Closes every reader; called when the database closes, when none is handed out.
    func closeAll() {
        let readers = idle.withLock { readers in
            defer { readers.removeAll() }
            return readers
        }
        for reader in readers { reader.close() }
    }
}
