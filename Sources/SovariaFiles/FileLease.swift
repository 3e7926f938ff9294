import Foundation
import Synchronization

/// A cached file in use, from ``FileCache/open(_:)``: while the lease lasts, eviction keeps the
/// file, and ``fileHandle`` reads it.
///
/// A lifetime object, like GRDB's `DatabaseCancellable` and the query cache's `LiveReader`: a
/// class whose `deinit` ends the lease, so a lease that is simply dropped cannot pin the file
/// forever. (A `~Copyable` struct would end it at the end of a scope too, but could not be
/// kept in an array, an optional property or a SwiftUI model, nor handed to a task.) Call
/// ``end()`` to end it at a known moment; ending twice is harmless.
///
/// ```swift
/// if let lease = try await photos.open(url.absoluteString) {
///     let image = UIImage(contentsOfFile: lease.url.path)  // or read lease.fileHandle
///     lease.end()
/// }
/// ```
///
/// - Important: ``fileHandle`` was opened with the lease, so it reads the whole file even if
///   the file is removed (``FileCache/remove(_:)``) or downloaded again meanwhile; ``url``
///   names whatever the cache holds under the key now, and nothing after a removal. The lease
///   keeps its ``FileCache`` alive. Safe from any number of tasks.
public final class FileLease: Sendable {
    /// The cache key of the file.
    public let key: String
    /// Where the file is: `<directory>/files/<id>`. Read it, never write or move it.
    public let url: URL
    /// The file's size when the lease began.
    public let sizeBytes: Int
    /// A handle open for reading on the file, closed when the lease ends.
    public let fileHandle: FileHandle
    private let release: Mutex<(@Sendable () -> Void)?>

    init(key: String, url: URL, sizeBytes: Int, fileHandle: FileHandle, release: @escaping @Sendable () -> Void) {
        self.key = key
        self.url = url
        self.sizeBytes = sizeBytes
        self.fileHandle = fileHandle
        self.release = Mutex(release)
    }

    deinit { end() }

    /// Whether the lease has ended.
    public var isEnded: Bool { release.withLock { $0 == nil } }

    /// Ends the lease: closes ``fileHandle``, records the end as the file's last use (in the
    /// store shortly after, by a write the end starts), and lets eviction take the file again.
    /// Later calls do nothing.
    public func end() {
        guard
            let release = release.withLock({ current -> (@Sendable () -> Void)? in
                defer { current = nil }
                return current
            })
        else { return }
        try? fileHandle.close()
        release()
    }
}
