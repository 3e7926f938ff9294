import Foundation
import Sovaria
import SovariaPlumbing

extension FileCache {
    /// Caches the file `write` produces under `key`, replacing what the key held, and returns
    /// its size.
    ///
    /// `write` gets the URL of a temporary file that does not exist yet, in the cache's `tmp/`
    /// folder (same volume as the cache): it writes the body there, or moves a finished download
    /// there (`URLSession`'s `download(from:)` location). When it returns, the file is fsynced,
    /// renamed into place, the folder fsynced, and the metadata written: only then is the file
    /// visible, whole, under `key`. If `write` throws, or the cache cannot commit, the
    /// temporary file is deleted and nothing changes. A download that leaves the total over the
    /// bound starts an eviction pass behind its answer.
    ///
    /// ```swift
    /// try await photos.download(url.absoluteString) { destination in
    ///     let (location, _) = try await URLSession.shared.download(from: url)
    ///     try FileManager.default.moveItem(at: location, to: destination)
    /// }
    /// ```
    ///
    /// - Important: `write` runs on the caller's executor, outside every lock of the cache:
    ///   downloads of any keys run at once. Two downloads of one key both complete; the later
    ///   commit wins. The file counts as used now (protected for 30 seconds).
    @discardableResult
    public func download(_ key: String, using write: (_ temporaryFile: URL) async throws -> Void) async throws -> Int {
        let id = FileKeys.id(of: key)
        let temporary = folder.newTemporaryPath(id)
        let sizeBytes: Int
        do {
            try await write(URL(fileURLWithPath: temporary))
            sizeBytes = try await work.runConcurrently { [folder] in
                try folder.syncDownloadedFile(temporary, key: key)
            }
            try await commit(temporary, id: id, key: key, sizeBytes: sizeBytes)
        } catch {
            _ = try? await work.runConcurrently { [folder] in try folder.remove(temporary) }
            throw error
        }
        checkSizeBehindDownload()
        return sizeBytes
    }

    /// Caches a copy of the file at `source` under `key`, with the guarantees of
    /// ``download(_:using:)``; the source is left as it is.
    @discardableResult
    public func store(_ key: String, contentsOf source: URL) async throws -> Int {
        try await download(key) { destination in
            try await work.runConcurrently {
                try CacheFolder.copyFile(from: source.path, to: destination.path, key: key)
            }
        }
    }

    /// Caches `data` under `key`, with the guarantees of ``download(_:using:)``.
    @discardableResult
    public func store(_ key: String, data: Data) async throws -> Int {
        try await download(key) { destination in
            try await work.runConcurrently {
                try POSIXFile.createFile(destination.path, contents: Array(data), sync: false, key: key)
            }
        }
    }

    /// Makes a synced download at `temporary` the file of `id`. The old file's metadata goes
    /// first, so that at every moment a named file's metadata, if any, carries its size: a crash
    /// after that delete leaves a file without metadata, which the next open adopts with its
    /// real size.
    private func commit(_ temporary: String, id: FileID, key: String, sizeBytes: Int) async throws {
        try await gate.withGate { gated in
            try await commit(gated, temporary, id: id, key: key, sizeBytes: sizeBytes)
        }
    }

    private func commit(
        _ gated: borrowing GateToken<FileCache>, _ temporary: String, id: FileID, key: String, sizeBytes: Int
    ) async throws {
        let previous = state.withLock { $0.index.entries[id] }
        if let previous {
            try await metadata.delete(
                FileKeys.metadataKey(id: id, sizeBytes: previous.sizeBytes, lastUseMillis: previous.storedUseMillis)
            )
        }
        do {
            try await work.runConcurrently { [folder] in try folder.commit(temporary, as: id, key: key) }
        } catch {
            // The old file is still there: give it its metadata back (a crash or a failure
            // here leaves it without, and the next open adopts it).
            if let previous {
                try? await metadata.set(
                    FileKeys.metadataKey(
                        id: id, sizeBytes: previous.sizeBytes, lastUseMillis: previous.storedUseMillis),
                    FileKeys.value(key: key))
            }
            throw error
        }
        let now = self.now
        do {
            // A metadata store failing over may not say whether this landed: it finds out.
            try await metadata.writeLearningOutcome([
                .set(
                    key: FileKeys.metadataKey(id: id, sizeBytes: sizeBytes, lastUseMillis: now),
                    value: FileKeys.value(key: key))
            ])
        } catch {
            // The file is in place but not recorded: the next open adopts it. Count it now.
            state.withLock { _ = $0.index.insert(id, sizeBytes: sizeBytes, lastUseMillis: now, storedUseMillis: -1) }
            throw error
        }
        state.withLock { _ = $0.index.insert(id, sizeBytes: sizeBytes, lastUseMillis: now, storedUseMillis: now) }
    }
}
