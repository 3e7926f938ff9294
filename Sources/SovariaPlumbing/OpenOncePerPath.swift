import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Keeps at most one open engine handle per path in this process, for engines that must not
/// open a path twice (LMDB, LevelDB) or that share one connection pool (SQLite).
///
/// Stores ask ``handle(for:open:)`` and hold the handle strongly; the registry holds it weakly,
/// so the handle closes when its last store goes. A handle's `deinit` closes the engine and then
/// calls ``didClose(_:)``; an open of the same path waits from the moment the old handle's last
/// reference goes until ``didClose(_:)``, instead of racing the close.
///
/// - Important: Every handle registered here must call ``didClose(_:)`` at the end of its
///   `deinit`, or the next open of its path waits forever.
package final class OpenOncePerPath<Handle: AnyObject & Sendable>: Sendable {
    private struct Entry {
        weak var handle: Handle?
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// Creates an empty registry; keep one per engine, in a `static let`.
    package init() {}

    /// The handle open for `path`, or a new one from `open` when there is none.
    ///
    /// `path` should be canonical (see ``canonicalPath(_:)``), so two spellings of one folder
    /// share a handle.
    package func handle(for path: String, open: () throws -> Handle) throws -> Handle {
        while true {
            let found: Result<Handle, any Error>? = entries.withLock { entries in
                if let entry = entries[path] {
                    if let handle = entry.handle { return .success(handle) }
                    // The handle's last reference is gone but ``didClose(_:)`` has not removed the
                    // entry yet: its `deinit` is running and the engine may still be open.
                    // Opening now could open the path twice.
                    return nil
                }
                do {
                    let handle = try open()
                    entries[path] = Entry(handle: handle)
                    return .success(handle)
                } catch {
                    return .failure(error)
                }
            }
            if let found { return try found.get() }
            sched_yield()  // another thread is closing this path's handle right now: a few microseconds
        }
    }

    /// Whether a handle for `path` is open (or closing) in this process.
    package func isOpen(_ path: String) -> Bool {
        entries.withLock { $0[path] != nil }
    }

    /// Called by a handle's `deinit` after it closed the engine.
    package func didClose(_ path: String) {
        entries.withLock { entries in
            if let entry = entries[path], entry.handle == nil { entries[path] = nil }
        }
    }

    /// `path` with symbolic links, `.` and `..` resolved, when it exists; otherwise `path`.
    package static func canonicalPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
