import Foundation
import Sovaria
import SovariaPlumbing

extension FileCache {
    /// Makes the folder and the metadata agree (rule 6) and returns the index of the files:
    /// metadata keys are read as borrowed bytes (names only, never a value, a `String` only for
    /// a key to delete), `files/` and `tmp/` are listed, and then
    /// - duplicate keys of one file (a crash of a store without atomic batches between the two
    ///   writes of a use record) keep the newest last use;
    /// - keys under `sov:file:` of another shape, and keys whose file is gone, are deleted;
    /// - a file without metadata (a crash between its rename and its metadata write, or a lost
    ///   store) is adopted: size from `stat`, last use now; a name in `files/` that is not an id
    ///   is not the cache's and is removed, so no byte goes uncounted;
    /// - temporary files more than a day old are deleted, the others counted in the total.
    static func reconcile(
        folder: CacheFolder, metadata: any OfflineStore, work: BlockingWorkQueue, now: Int64
    ) async throws -> FileIndex {
        var keys: [(id: FileID, sizeBytes: Int, lastUseMillis: Int64)] = []
        var deletes: [StoreWrite] = []
        // One page of every key, as `keys(_:)` lists them: pages would make a store without a
        // native `withKeys` list the prefix once per page.
        _ = try await metadata.withKeys(FileKeys.prefix, after: nil, limit: .max) { key in
            if let parsed = FileKeys.parse(key) {
                keys.append(parsed)
            } else {
                deletes.append(.delete(key: String(decoding: key, as: UTF8.self)))
            }
            return true
        }
        let listed = try await work.runConcurrently { (try folder.listFiles(), try folder.listTemporaryFiles()) }
        var onDisk = Set<FileID>(minimumCapacity: listed.0.count)
        var strays: [String] = []
        for name in listed.0 {
            if let id = FileKeys.id(fileName: name) { onDisk.insert(id) } else { strays.append(name) }
        }
        var recorded: [FileID: RecordedFile] = [:]
        recorded.reserveCapacity(keys.count)
        for (id, size, lastUse) in keys {
            // A key that parses is the key its fields make (FileKeys.parse): no String was kept.
            let key = { FileKeys.metadataKey(id: id, sizeBytes: size, lastUseMillis: lastUse) }
            guard onDisk.contains(id) else {
                deletes.append(.delete(key: key()))
                continue
            }
            let found = RecordedFile(id: id, sizeBytes: size, lastUseMillis: lastUse)
            guard let other = recorded[id] else {
                recorded[id] = found
                continue
            }
            // Two keys for one file: keep the newer use.
            let (keep, drop) = other.lastUseMillis >= lastUse ? (other, found) : (found, other)
            recorded[id] = keep
            deletes.append(.delete(key: drop.key))
        }
        let orphans = onDisk.filter { recorded[$0] == nil }
        let expired = listed.1.filter { now - $0.modifiedMillis > temporaryFileMaxAgeMillis }
        let adopted: [(id: FileID, sizeBytes: Int)] = try await work.runConcurrently { [strays] in
            for name in strays { try folder.remove(folder.filesPath + "/" + name) }
            for file in expired { try folder.remove(folder.temporaryPath + "/" + file.name) }
            return orphans.compactMap { id in CacheFolder.status(folder.filePath(id)).map { (id, $0.sizeBytes) } }
        }
        var writes = deletes
        for file in adopted {
            writes.append(
                .set(
                    key: FileKeys.metadataKey(id: file.id, sizeBytes: file.sizeBytes, lastUseMillis: now),
                    value: FileKeys.value(key: nil)))
        }
        for start in stride(from: 0, to: writes.count, by: 1_000) {
            try await metadata.write(Array(writes[start..<min(writes.count, start + 1_000)]))
        }
        var index = FileIndex(
            files: recorded.map { (id: $0.key, sizeBytes: $0.value.sizeBytes, lastUseMillis: $0.value.lastUseMillis) }
                + adopted.map { (id: $0.id, sizeBytes: $0.sizeBytes, lastUseMillis: now) })
        let expiredNames = Set(expired.map(\.name))
        for file in listed.1 where !expiredNames.contains(file.name) {
            index.addLeftover(file.name, sizeBytes: file.sizeBytes, modifiedMillis: file.modifiedMillis)
        }
        return index
    }

    /// A file's metadata key found at open.
    private struct RecordedFile {
        var id: FileID
        var sizeBytes: Int
        var lastUseMillis: Int64

        /// The metadata key it was read from.
        var key: String { FileKeys.metadataKey(id: id, sizeBytes: sizeBytes, lastUseMillis: lastUseMillis) }
    }
}
