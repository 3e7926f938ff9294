import Foundation

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
    /// The root folder, open: every call on a key's file is made relative to it (or to one of
    /// its sub-folders), so no path handed to the system is longer than one name, however deep
    /// the root is (``DirectoryDescriptor``).
    let directory: DirectoryDescriptor

    static let temporaryPrefix = ".tmp-"
    static let journalName = ".journal"

    /// Opens the tree at `root` (an existing folder); throws when it cannot be opened.
    init(root: String) throws(OfflineStoreError) {
        self.root = root
        directory = try DirectoryDescriptor(opening: root)
        POSIXFile.protectUntilFirstUnlock(directory.fd)
    }

    /// Takes group and other permissions away from the folder (0700 when it is new); an owner's own
    /// narrower mode (0500) is kept. A folder this process cannot chmod (another user's) is left as is.
    func restrictMode() {
        guard let mode = directory.mode, mode & 0o077 != 0 else { return }
        _ = fchmod(directory.fd, mode & 0o700)
    }

    /// Creates and removes a temporary file: throws when the folder cannot be written.
    func probeWritable() throws(OfflineStoreError) {
        let probe = Self.temporaryName()
        try directory.createFile(probe, contents: [], sync: false, key: nil)
        try directory.removeFile(probe, key: nil)
    }

    /// Removes the temporary files a crash left; call holding the folder's lock, after
    /// ``recoverJournal(sync:)`` (whose batch may still need them).
    func removeTemporaryFiles() throws(OfflineStoreError) {
        for (name, _) in try directory.list() where name.utf8.starts(with: Self.temporaryPrefix.utf8) {
            try directory.removeFile(name, key: nil)
        }
    }

    /// The value of `key` as a string (see ``EntryFile/decode(_:key:path:)``), or `nil`.
    func read(_ key: String) throws(OfflineStoreError) -> String? {
        try readFile(key) { (bytes, path) throws(OfflineStoreError) in try EntryFile.decode(bytes, key: key, path: path)
        }
    }

    /// The value of `key` as bytes, or `nil`.
    func readData(_ key: String) throws(OfflineStoreError) -> Data? {
        try readFile(key) { (bytes, path) throws(OfflineStoreError) in
            try EntryFile.decodeData(bytes, key: key, path: path)
        }
    }

    /// Appends the value of `key` to `buffer`; `false` when there is none.
    func appendValue(_ key: String, to buffer: inout [UInt8]) throws(OfflineStoreError) -> Bool {
        try readFile(key) { (bytes, path) throws(OfflineStoreError) in
            try EntryFile.appendValue(bytes, key: key, path: path, to: &buffer)
        } != nil
    }

    private func readFile<Value>(
        _ key: String, _ decode: ([UInt8], String) throws(OfflineStoreError) -> Value
    ) throws(OfflineStoreError) -> Value? {
        let (folders, file) = FileNameScheme.path(for: key)
        guard let folder = try folder(folders, create: false, sync: false),
            let bytes = try folder.readFile(file, key: key)
        else { return nil }
        return try decode(bytes, folder.shown(file))
    }

    /// Applies one write: a set is a temp file renamed into place.
    func apply(_ write: StoreWrite, sync: Bool) throws(OfflineStoreError) {
        switch write {
        case .set, .setData:
            let staged = try stage(write, sync: sync)
            try writeTemporary(staged, sync: sync)
            try place(staged)
            if sync { try staged.folder.sync() }
        case .delete(let key):
            // Nothing removed, nothing to sync (the folder of a long key may not even exist).
            if let folder = try remove(key), sync { try folder.sync() }
        }
    }

    /// A set made in three steps, so a group commit can write many values side by side and sync
    /// their folder once: ``stage(_:sync:)``, ``writeTemporary(_:sync:)``, ``place(_:)``.
    struct StagedSet: Sendable {
        let key: String
        let contents: [UInt8]
        /// The temporary file's name in the root.
        let temporary: String
        /// The entry's file name in ``folder``.
        let file: String
        /// The folder the entry goes in (made, and synced into its parent when `sync`).
        let folder: DirectoryDescriptor
    }

    /// Makes the folder of the key `write` sets if needed, and names the set's temporary file.
    func stage(_ write: StoreWrite, sync: Bool) throws(OfflineStoreError) -> StagedSet {
        let key = write.key
        let (folders, file) = FileNameScheme.path(for: key)
        return StagedSet(
            key: key, contents: Self.contents(of: write), temporary: Self.temporaryName(), file: file,
            folder: try folder(folders, create: true, sync: sync) ?? directory)
    }

    /// The file of the value `write` sets.
    private static func contents(of write: StoreWrite) -> [UInt8] {
        write.withValueBytes { EntryFile.encode(key: write.key, value: $0) } ?? []
    }

    /// Writes the staged value to its temporary file (fsynced when `sync`); a failure leaves no file.
    func writeTemporary(_ staged: StagedSet, sync: Bool) throws(OfflineStoreError) {
        try directory.createFile(staged.temporary, contents: staged.contents, sync: sync, key: staged.key)
    }

    /// Renames the written value into place; its folder is not synced (the caller does that).
    func place(_ staged: StagedSet) throws(OfflineStoreError) {
        try directory.rename(staged.temporary, to: staged.file, in: staged.folder, key: staged.key)
    }

    /// Removes a staged value's temporary file (a set that will not be placed).
    func discard(_ staged: StagedSet) {
        unlinkat(directory.fd, staged.temporary, 0)
    }

    /// Removes `key`'s file without syncing its folder; returns the folder, or `nil` when there
    /// was no file.
    func remove(_ key: String) throws(OfflineStoreError) -> DirectoryDescriptor? {
        let (folders, file) = FileNameScheme.path(for: key)
        guard let folder = try folder(folders, create: false, sync: false), try folder.removeFile(file, key: key)
        else { return nil }
        return folder
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
                case .set(let key, _), .setData(let key, _):
                    _ = try folder(FileNameScheme.path(for: key).folders, create: true, sync: sync)
                    let name = Self.temporaryName()
                    try directory.createFile(name, contents: Self.contents(of: write), sync: sync, key: key)
                    staged.append(name)
                    steps.append(.rename(stagedName: name, key: key))
                case .delete(let key):
                    steps.append(.remove(key: key))
                }
            }
            let temporary = Self.temporaryName()
            try directory.createFile(temporary, contents: BatchJournal.encode(steps), sync: sync, key: nil)
            try directory.rename(temporary, to: Self.journalName, in: directory, key: nil)
            if sync { try directory.sync() }
        } catch {
            for name in staged { unlinkat(directory.fd, name, 0) }
            throw error
        }
        try run(steps, sync: sync)
    }

    /// Whether a batch's journal is in the folder (committed, not yet finished).
    var hasJournal: Bool { faccessat(directory.fd, Self.journalName, F_OK, 0) == 0 }

    /// Finishes the batch in the journal, if there is one.
    func recoverJournal(sync: Bool) throws(OfflineStoreError) {
        guard let bytes = try directory.readFile(Self.journalName, key: nil) else { return }
        // A journal that fails its checksum was never acknowledged (its rename was not synced).
        guard let steps = BatchJournal.decode(bytes) else {
            try directory.removeFile(Self.journalName, key: nil)
            return
        }
        try run(steps, sync: sync)
    }

    /// Runs a journal's steps, then removes the journal. Each key appears once, so running the
    /// steps again after an interruption ends in the same state: a staged file already renamed is
    /// gone, and a key already removed is missing.
    private func run(_ steps: [BatchJournal.Step], sync: Bool) throws(OfflineStoreError) {
        var rootTouched = false
        for step in steps {
            let (folders, file) = FileNameScheme.path(for: step.key)
            let touched: DirectoryDescriptor
            switch step {
            case .rename(let stagedName, let key):
                let folder = try folder(folders, create: true, sync: sync) ?? directory
                guard try directory.renameIfPresent(stagedName, to: file, in: folder, key: key) else { continue }
                touched = folder
            case .remove(let key):
                guard let folder = try folder(folders, create: false, sync: false),
                    try folder.removeFile(file, key: key)
                else { continue }
                touched = folder
            }
            // A long key's folder is synced at its step (it is open now); the root once, at the end.
            if folders.isEmpty {
                rootTouched = true
            } else if sync {
                try touched.sync()
            }
        }
        if sync, rootTouched { try directory.sync() }
        try directory.removeFile(Self.journalName, key: nil)
        if sync { try directory.sync() }
    }

    /// The folder that holds a key's file: the root, or the chain of `folders` below it, opened one
    /// name at a time (and made, each synced into its parent when `sync`, when `create` is set);
    /// `nil` when one is missing and `create` is not.
    private func folder(
        _ folders: [String], create: Bool, sync: Bool
    ) throws(OfflineStoreError) -> DirectoryDescriptor? {
        var folder = directory
        for name in folders {
            guard let child = try folder.child(name, create: create, sync: sync) else { return nil }
            folder = child
        }
        return folder
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
        try collectKeys(in: directory, digits: [], into: &found)
        return found.sorted()
    }

    private func collectKeys(
        in folder: DirectoryDescriptor, digits: [UInt8], into found: inout [StoreKey.Bytes]
    ) throws(OfflineStoreError) {
        for (name, isDirectory) in try folder.list() {
            let prefix = isDirectory ? FileNameScheme.folderPrefix : FileNameScheme.filePrefix
            guard let nameDigits = FileNameScheme.digits(ofName: name, prefix: prefix) else { continue }
            let full = digits + nameDigits
            if isDirectory {
                // Gone since the listing (another process removed it): nothing to collect.
                guard let child = try folder.child(name, create: false, sync: false) else { continue }
                try collectKeys(in: child, digits: full, into: &found)
            } else if let key = FileNameScheme.decodeKey(full) {
                found.append(StoreKey.Bytes(key))
            }
        }
    }

    private static func temporaryName() -> String {
        temporaryPrefix + (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 16) }.joined()
    }
}
