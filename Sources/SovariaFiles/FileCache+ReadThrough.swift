import Foundation
import Sovaria

extension FileCache {
    /// The file cached under `key` as a lease; on a miss, the file downloaded by `write` once, however
    /// many callers ask for it at the same time (single-flight).
    ///
    /// Twelve cells that show one avatar call this twelve times: the first call that misses starts
    /// the download, the eleven others wait for it, and each gets a lease of its own on the same
    /// committed file. A call made while that download runs joins it wherever the download is (the
    /// body, the fsync, the commit to the metadata store); a call made after it ended finds the
    /// file. `write` is ``download(_:using:)``'s: it gets a temporary file to fill.
    ///
    /// ```swift
    /// let lease = try await photos.open(url.absoluteString) { destination in
    ///     let (location, _) = try await URLSession.shared.download(from: url)
    ///     try FileManager.default.moveItem(at: location, to: destination)
    /// }
    /// show(lease.url)
    /// ```
    ///
    /// A cached file deleted behind the cache is dropped (as ``open(_:)`` does) and downloaded
    /// again.
    ///
    /// - Important: A download that fails (`write` throws, or the commit does: a metadata store
    ///   that cannot write) throws its error to every caller waiting on it, once, and caches
    ///   nothing: the next call downloads anew. A cancelled caller stops waiting at once and throws
    ///   `CancellationError`, and the download goes on for the others; when every caller waiting
    ///   on it has been cancelled, the download is cancelled too (`write`'s task is). To replace a
    ///   cached file, call ``download(_:using:)``. `write` runs in a task of its own.
    public func open(
        _ key: String, orDownload write: @escaping @Sendable (_ temporaryFile: URL) async throws -> Void
    ) async throws -> FileLease {
        while true {
            let number = flights.newWaiterNumber()
            let answer = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { waiter in
                    flights.join(key, as: number, waiter: waiter, claim: { claim(key) }) { flight in
                        Task { await runDownloadFlight(flight, key: key, write: write) }
                    }
                }
            } onCancel: {
                flights.leave(key, waiter: number)
            }
            switch answer {
            case .downloaded(let lease):
                state.withLock { $0.counters.misses += 1 }
                return lease
            case .cached(let claimed):
                if let lease = try await openClaimed(claimed) {
                    state.withLock { $0.counters.hits += 1 }
                    return lease
                }
            // No file: removed since the claim, or deleted behind the cache, and then its entry was
            // dropped. Look again: the key is a miss now, or holds a newer download.
            }
        }
    }

    /// The body of a download flight: the download and a lease on the committed file, handed to
    /// every waiter as a lease of its own.
    private func runDownloadFlight(
        _ flight: UInt64, key: String, write: @Sendable (_ temporaryFile: URL) async throws -> Void
    ) async {
        let outcome: Result<FileLease, any Error>
        do {
            try await download(key, using: write)
            // The file just committed, leased until each waiter has its own lease; a removal
            // between the commit and this claim is the removal's to win.
            guard let claimed = claim(key), let lease = try await openClaimed(claimed) else {
                throw OfflineStoreError(
                    .notFound, "The file downloaded for \(key) was removed before it could be opened: call again.")
            }
            outcome = .success(lease)
        } catch {
            outcome = .failure(error)
        }
        let waiters = flights.finish(key, flight: flight)
        switch outcome {
        case .failure(let error):
            for waiter in waiters { waiter.resume(throwing: error) }
        case .success(let lease):
            let leases: [Result<FileLease, any Error>]
            do {
                leases = try await work.runConcurrently {
                    waiters.map { _ in Result { try self.additionalLease(on: lease) } }
                }
            } catch {
                leases = waiters.map { _ in .failure(error) }
            }
            for (waiter, lease) in zip(waiters, leases) { waiter.resume(with: lease.map { .downloaded($0) }) }
            lease.end()
        }
    }

    /// A lease of its own on the file `lease` holds open, with a handle of its own (its own read
    /// offset): the file the download committed, even if the key was downloaded again since. Blocks.
    private func additionalLease(on lease: FileLease) throws -> FileLease {
        let id = FileKeys.id(of: lease.key)
        #if os(Linux)
            // The open file itself, by its descriptor's name: a new handle on the same file.
            var descriptor = Glibc.open("/proc/self/fd/\(lease.fileHandle.fileDescriptor)", O_RDONLY | O_CLOEXEC)
            if descriptor < 0 { descriptor = Glibc.open(lease.url.path, O_RDONLY | O_CLOEXEC) }
        #else
            // The key's file by its name (replaced only by a later download of the key, which wins).
            let descriptor = Darwin.open(lease.url.path, O_RDONLY | O_CLOEXEC)
        #endif
        guard descriptor >= 0 else {
            throw OfflineStoreError(
                .io, "Opening the file downloaded for \(lease.key) failed (errno \(errno)): call again.",
                nativeCode: errno)
        }
        state.withLock { $0.index.addLease(id) }
        return FileLease(
            key: lease.key, url: lease.url, sizeBytes: lease.sizeBytes,
            fileHandle: FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        ) { [self] in endLease(id, key: lease.key) }
    }
}
