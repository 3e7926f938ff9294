#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The on-disk side of ``FileOfflineStore``: one file per key under ``root``, named by
/// ``FileNameScheme``, every write a temp file renamed into place. Synchronous; the store runs
/// it on its own queue. `sync` on each write says whether to fsync (``Durability/synced``).
struct FileTree: Sendable {
    let root: String

    static let temporaryPrefix = ".tmp-"
    static let journalName = ".journal"

    /// Opens the tree at `root`, which exists: restricts it to 0700, checks that it can be
    /// written, removes the temporary files a crash left and finishes a batch a crash
    /// interrupted.
    init(root: String, sync: Bool) throws(OfflineStoreError) {
        self.root = root
        guard chmod(root, 0o700) == 0 else { throw POSIXFile.error("Restricting folder", root) }
        for (name, _) in try POSIXFile.listDirectory(root) where name.utf8.starts(with: Self.temporaryPrefix.utf8) {
            try POSIXFile.removeFile(root + "/" + name, key: nil)
        }
        let probe = temporaryPath()
        try POSIXFile.createFile(probe, contents: [], sync: false, key: nil)
        try POSIXFile.removeFile(probe, key: nil)
        try recoverJournal(sync: sync)
    }

    func read(_ key: String) throws(OfflineStoreError) -> String? {
        guard let bytes = try POSIXFile.readFile(filePath(for: key), key: key) else { return nil }
        guard let value = bytes.withUnsafeBufferPointer({ String(validatingUTF8Bytes: $0) }) else {
            throw OfflineStoreError(
                .corrupt, "The file of this key is not valid UTF-8: delete the key or restore the folder.",
                engine: POSIXFile.engine, key: key)
        }
        return value
    }

    /// Applies `write`; returns the folder whose entries changed, for the caller to sync.
    @discardableResult
    func apply(_ write: StoreWrite, sync: Bool, syncFolder: Bool) throws(OfflineStoreError) -> String {
        let (folders, file) = FileNameScheme.path(for: write.key)
        var folder = root
        switch write {
        case .set(let key, let value):
            for name in folders {
                let child = folder + "/" + name
                if try POSIXFile.makeDirectories(child, mode: 0o700), sync { try POSIXFile.syncDirectory(folder) }
                folder = child
            }
            let temporary = temporaryPath()
            try POSIXFile.createFile(temporary, contents: Array(value.utf8), sync: sync, key: key)
            try POSIXFile.rename(temporary, to: folder + "/" + file, key: key)
        case .delete(let key):
            folder = folders.reduce(root) { $0 + "/" + $1 }
            // Nothing removed, nothing to sync (the folder of a long key may not even exist).
            guard try POSIXFile.removeFile(folder + "/" + file, key: key) else { return folder }
        // Empty folders of long keys are left behind; they cost an inode and nothing else.
        }
        if syncFolder, sync { try POSIXFile.syncDirectory(folder) }
        return folder
    }

    /// Writes `batch` whole to the journal (temp + rename, so it exists complete or not at all).
    /// When this throws, nothing of the batch is applied.
    func writeJournal(_ batch: [StoreWrite], sync: Bool) throws(OfflineStoreError) {
        let temporary = temporaryPath()
        try POSIXFile.createFile(temporary, contents: BatchJournal.encode(batch), sync: sync, key: nil)
        try POSIXFile.rename(temporary, to: root + "/" + Self.journalName, key: nil)
        if sync { try POSIXFile.syncDirectory(root) }
    }

    /// Applies a batch whose journal is written, then removes the journal. If this throws, the
    /// journal stays, and ``recoverJournal(sync:)`` finishes the batch.
    func applyJournaled(_ batch: [StoreWrite], sync: Bool) throws(OfflineStoreError) {
        var touched: Set<String> = []
        for write in batch { touched.insert(try apply(write, sync: sync, syncFolder: false)) }
        if sync {
            for folder in touched { try POSIXFile.syncDirectory(folder) }
        }
        try POSIXFile.removeFile(root + "/" + Self.journalName, key: nil)
        if sync { try POSIXFile.syncDirectory(root) }
    }

    /// Finishes the batch in the journal, if there is one.
    func recoverJournal(sync: Bool) throws(OfflineStoreError) {
        let journal = root + "/" + Self.journalName
        guard let bytes = try POSIXFile.readFile(journal, key: nil) else { return }
        // A journal that fails its checksum was never acknowledged (its rename was not synced).
        guard let batch = BatchJournal.decode(bytes) else {
            try POSIXFile.removeFile(journal, key: nil)
            return
        }
        try applyJournaled(batch, sync: sync)
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

    private func filePath(for key: String) -> String {
        let (folders, file) = FileNameScheme.path(for: key)
        return folders.reduce(root) { $0 + "/" + $1 } + "/" + file
    }

    private func temporaryPath() -> String {
        let suffix = (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 16) }.joined()
        return root + "/" + Self.temporaryPrefix + suffix
    }
}
