#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The on-disk side of ``FileOfflineStore``: one file per key under ``root``, named by
/// ``FileNameScheme`` and laid out by ``EntryFile``, every write a temp file renamed into place.
/// Synchronous; the store runs it on its own queue, holding the folder's lock for writes. `sync`
/// on each write says whether to fsync (``Durability/synced``).
///
/// A batch of several writes first stages every new value in a temporary file. Only when all are
/// written (the step that needs free space) is the journal written: from then on the batch is
/// renames and removals, which a crash or an error interrupts only to be finished by the next
/// write or open. A batch that fails before its journal exists leaves nothing behind.
struct FileTree: Sendable {
    let root: String

    static let temporaryPrefix = ".tmp-"
    static let journalName = ".journal"

    /// Takes group and other permissions away from the folder (0700 when it is new); an owner's own
    /// narrower mode (0500) is kept. A folder this process cannot chmod (another user's) is left as is.
    func restrictMode() {
        var info = stat()
        guard stat(root, &info) == 0, info.st_mode & 0o077 != 0 else { return }
        _ = chmod(root, info.st_mode & 0o700)
    }

    /// Creates and removes a temporary file: throws when the folder cannot be written.
    func probeWritable() throws(OfflineStoreError) {
        let probe = temporaryPath()
        try POSIXFile.createFile(probe, contents: [], sync: false, key: nil)
        try POSIXFile.removeFile(probe, key: nil)
    }

    /// Removes the temporary files a crash left; call holding the folder's lock, after
    /// ``recoverJournal(sync:)`` (whose batch may still need them).
    func removeTemporaryFiles() throws(OfflineStoreError) {
        for (name, _) in try POSIXFile.listDirectory(root) where name.utf8.starts(with: Self.temporaryPrefix.utf8) {
            try POSIXFile.removeFile(root + "/" + name, key: nil)
        }
    }

    func read(_ key: String) throws(OfflineStoreError) -> String? {
        let path = filePath(for: key).file
        guard let bytes = try POSIXFile.readFile(path, key: key) else { return nil }
        return try EntryFile.decode(bytes, key: key, path: path)
    }

    /// Applies one write: a set is a temp file renamed into place.
    func apply(_ write: StoreWrite, sync: Bool) throws(OfflineStoreError) {
        let (folder, file) = filePath(for: write.key)
        switch write {
        case .set(let key, let value):
            try makeFolders(for: key, sync: sync)
            let temporary = temporaryPath()
            try POSIXFile.createFile(
                temporary, contents: EntryFile.encode(key: key, value: value), sync: sync, key: key)
            try POSIXFile.rename(temporary, to: file, key: key)
        case .delete(let key):
            // Nothing removed, nothing to sync (the folder of a long key may not even exist).
            guard try POSIXFile.removeFile(file, key: key) else { return }
        }
        if sync { try POSIXFile.syncDirectory(folder) }
    }

    /// Applies `batch` all or nothing: stages its values, writes the journal, then renames and removes.
    ///
    /// Throws without a trace when staging or the journal fails (a full disk); when a rename fails
    /// after the journal was written, the batch is committed and the journal stays for
    /// ``recoverJournal(sync:)`` to finish.
    func applyBatch(_ batch: [StoreWrite], sync: Bool) throws(OfflineStoreError) {
        var steps: [BatchJournal.Step] = []
        var staged: [String] = []
        do {
            for write in Self.lastWritePerKey(batch) {
                switch write {
                case .set(let key, let value):
                    try makeFolders(for: key, sync: sync)
                    let name = Self.temporaryPrefix + Self.randomSuffix()
                    try POSIXFile.createFile(
                        root + "/" + name, contents: EntryFile.encode(key: key, value: value), sync: sync, key: key)
                    staged.append(name)
                    steps.append(.rename(stagedName: name, key: key))
                case .delete(let key):
                    steps.append(.remove(key: key))
                }
            }
            let temporary = temporaryPath()
            try POSIXFile.createFile(temporary, contents: BatchJournal.encode(steps), sync: sync, key: nil)
            try POSIXFile.rename(temporary, to: root + "/" + Self.journalName, key: nil)
            if sync { try POSIXFile.syncDirectory(root) }
        } catch {
            for name in staged { unlink(root + "/" + name) }
            throw error
        }
        try run(steps, sync: sync)
    }

    /// Finishes the batch in the journal, if there is one.
    func recoverJournal(sync: Bool) throws(OfflineStoreError) {
        let journal = root + "/" + Self.journalName
        guard let bytes = try POSIXFile.readFile(journal, key: nil) else { return }
        // A journal that fails its checksum was never acknowledged (its rename was not synced).
        guard let steps = BatchJournal.decode(bytes) else {
            try POSIXFile.removeFile(journal, key: nil)
            return
        }
        try run(steps, sync: sync)
    }

    /// Runs a journal's steps, then removes the journal. Each key appears once, so running the
    /// steps again after an interruption ends in the same state: a staged file already renamed is
    /// gone, and a key already removed is missing.
    private func run(_ steps: [BatchJournal.Step], sync: Bool) throws(OfflineStoreError) {
        var touched: Set<String> = []
        for step in steps {
            let (folder, file) = filePath(for: step.key)
            switch step {
            case .rename(let stagedName, let key):
                guard try POSIXFile.renameIfPresent(root + "/" + stagedName, to: file, key: key) else { continue }
            case .remove(let key):
                guard try POSIXFile.removeFile(file, key: key) else { continue }
            }
            touched.insert(folder)
        }
        if sync {
            for folder in touched { try POSIXFile.syncDirectory(folder) }
        }
        try POSIXFile.removeFile(root + "/" + Self.journalName, key: nil)
        if sync { try POSIXFile.syncDirectory(root) }
    }

    /// The writes of `batch` that decide its outcome: the last one of each key (by bytes), in order.
    private static func lastWritePerKey(_ batch: [StoreWrite]) -> [StoreWrite] {
        var last: [StoreKey.Bytes: Int] = [:]
        for (index, write) in batch.enumerated() { last[StoreKey.Bytes(write.key)] = index }
        guard last.count < batch.count else { return batch }
        return batch.enumerated().filter { last[StoreKey.Bytes($0.element.key)] == $0.offset }.map(\.element)
    }

    /// Every key in the tree, in byte order.
    func sortedKeys() throws(OfflineStoreError) -> [StoreKey.Bytes] {
        var found: [StoreKey.Bytes] = []
        try collectKeys(in: root, digits: [], into: &found)
        return found.sorted()
    }

    private func collectKeys(
        in folder: String, digits: [UInt8], into found: inout [StoreKey.Bytes]
    ) throws(OfflineStoreError) {
        for (name, isDirectory) in try POSIXFile.listDirectory(folder) {
            let prefix = isDirectory ? FileNameScheme.folderPrefix : FileNameScheme.filePrefix
            guard let nameDigits = FileNameScheme.digits(ofName: name, prefix: prefix) else { continue }
            let full = digits + nameDigits
            if isDirectory {
                try collectKeys(in: folder + "/" + name, digits: full, into: &found)
            } else if let key = FileNameScheme.decodeKey(full) {
                found.append(StoreKey.Bytes(key))
            }
        }
    }

    /// Creates the sub-folders a long key's file lives in.
    private func makeFolders(for key: String, sync: Bool) throws(OfflineStoreError) {
        var folder = root
        for name in FileNameScheme.path(for: key).folders {
            let child = folder + "/" + name
            if try POSIXFile.makeDirectories(child, mode: 0o700), sync { try POSIXFile.syncDirectory(folder) }
            folder = child
        }
    }

    /// The folder that holds `key`'s file, and the file's path.
    private func filePath(for key: String) -> (folder: String, file: String) {
        let (folders, file) = FileNameScheme.path(for: key)
        let folder = folders.reduce(root) { $0 + "/" + $1 }
        return (folder, folder + "/" + file)
    }

    private func temporaryPath() -> String {
        root + "/" + Self.temporaryPrefix + Self.randomSuffix()
    }

    private static func randomSuffix() -> String {
        (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 16) }.joined()
    }
}
