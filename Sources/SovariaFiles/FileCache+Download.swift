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
    /// cached, whole, under `key`. If `write` throws, or the cache cannot commit (the rename or
    /// the metadata write fails), the call throws that error, the temporary file is deleted, and
    /// the key holds what it held before: nothing, or the old file with its old bytes, size and
    /// metadata (kept under a second name until the new metadata is written, then put back).
    /// Should putting it back fail too, the key holds nothing. A lease opened on the key while
    /// the commit runs may read the new bytes. A download that leaves the total over the bound
    /// starts an eviction pass behind its answer.
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

    /// Makes a synced download at `temporary` the file of `id`, or throws and leaves the key as it
    /// was. The steps, in the order the crash argument needs (docs/ARCHITECTURE.md, "The file
    /// cache"): at every moment a named file's metadata key, if any, carries its size.
    /// 1. The old file's key goes: a crash from here on leaves a file without metadata, which the
    ///    next open adopts with its real size.
    /// 2. The old file gets a second name in `tmp/` (a hard link), so that a failed commit can put
    ///    it back.
    /// 3. The download is renamed over the file's name and `files/` fsynced.
    /// 4. The new key is written; only then is the new file in the index, and the old file's
    ///    second name goes.
    /// When step 3 or 4 fails, ``undoCommit(_:id:key:sizeBytes:newKey:previous:kept:)`` puts the
    /// old file back.
    private func commit(_ temporary: String, id: FileID, key: String, sizeBytes: Int) async throws {
        try await gate.withGate { gated in
            try await commit(gated, temporary, id: id, key: key, sizeBytes: sizeBytes)
        }
    }

    private func commit(
        _ gated: borrowing GateToken<FileCache>, _ temporary: String, id: FileID, key: String, sizeBytes: Int
    ) async throws {
        let previous = state.withLock { $0.index.entries[id] }
        if let previous { try await metadata.delete(previous.metadataKey(id)) }
        // No second name when the old file is gone (deleted behind the cache) or the file system
        // cannot link: a failed commit then leaves the key without a file.
        let kept = previous == nil ? nil : try? await work.runConcurrently { [folder] in folder.keepAside(id) }
        do {
            try await work.runConcurrently { [folder] in try folder.commit(temporary, as: id, key: key) }
        } catch {
            // The rename may or may not have happened.
            await undoCommit(gated, id: id, key: key, sizeBytes: sizeBytes, newKey: nil, previous: previous, kept: kept)
            throw error
        }
        let now = self.now
        let newKey = FileKeys.metadataKey(id: id, sizeBytes: sizeBytes, lastUseMillis: now)
        do {
            // A metadata store failing over may not say whether this landed: it finds out.
            try await metadata.writeLearningOutcome([.set(key: newKey, value: FileKeys.value(key: key))])
        } catch {
            await undoCommit(
                gated, id: id, key: key, sizeBytes: sizeBytes, newKey: newKey, previous: previous, kept: kept)
            throw error
        }
        state.withLock { _ = $0.index.insert(id, sizeBytes: sizeBytes, lastUseMillis: now, storedUseMillis: now) }
        if let kept, (try? await work.runConcurrently({ [folder] in try folder.remove(kept) })) == nil {
            // Still on disk: counted, and deleted with the other leftovers after a day.
            let name = String(kept.dropFirst(folder.temporaryPath.count + 1))
            state.withLock { $0.index.addLeftover(name, sizeBytes: previous?.sizeBytes ?? 0, modifiedMillis: now) }
        }
    }

    /// A commit that failed after its old key went: the new file must not be served, and the key
    /// gets back what it held. The new key, if it was written (`newKey`), is deleted first (a
    /// write that threw may have landed); then the old file is renamed back from its second name
    /// (`kept`), `files/` fsynced, and only then its key written, so that no key names a file of
    /// another size. Without an old file to put back, the file under the key is deleted and the
    /// entry dropped: the key holds nothing, and a new key the store may have kept names no file,
    /// which the next open drops. Only when even that deletion fails does the file stay, counted
    /// in the index as the next open would adopt it.
    private func undoCommit(
        _ gated: borrowing GateToken<FileCache>, id: FileID, key: String, sizeBytes: Int, newKey: String?,
        previous: FileIndex.Entry?, kept: String?
    ) async {
        var newKeyGone = true
        if let newKey { newKeyGone = (try? await metadata.writeLearningOutcome([.delete(key: newKey)])) != nil }
        if newKeyGone, let kept, let previous,
            (try? await work.runConcurrently({ [folder] in try folder.restore(kept, as: id, key: key) })) != nil
        {
            // The index keeps the entry as it was. A failure here leaves the old file without
            // metadata: the next open adopts it.
            try? await metadata.set(previous.metadataKey(id), FileKeys.value(key: key))
            return
        }
        let removed = (try? await work.runConcurrently { [folder] in try folder.remove(folder.filePath(id)) }) != nil
        if let kept { _ = try? await work.runConcurrently { [folder] in try folder.remove(kept) } }
        let now = self.now
        state.withLock { state in
            if removed {
                _ = state.index.remove(id)
            } else {
                _ = state.index.insert(id, sizeBytes: sizeBytes, lastUseMillis: now, storedUseMillis: -1)
            }
        }
    }
}
