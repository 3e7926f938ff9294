import Foundation

/// What a ``FileOfflineStore`` folder holds besides its entries, read without opening it: the
/// batch journal, temporary files, and names that are no key's. `sovaria verify` runs it before
/// it opens the store, because an open finishes (or, when it is damaged, drops) a pending batch
/// and removes temporary files.
///
/// Each entry's own checksum is checked by reading it through the store; this check sees what a
/// read cannot: a file whose name no longer decodes to a key is never listed, so its entry is
/// silently missing.
package struct FileStoreFolderCheck: Sendable {
    /// The state of the batch journal (`.journal`).
    package enum Journal: Sendable, Equatable {
        /// No batch was interrupted.
        case none
        /// A batch committed but not finished when its process stopped; the next open finishes it.
        case pending(steps: Int)
        /// A journal that fails its checksum: a torn write of a batch never acknowledged (a
        /// `.flushed` store after a power cut), or damage. The next open drops it and the batch.
        case damaged(sizeBytes: Int)
    }

    /// The state of `.journal`.
    package var journal: Journal = .none
    /// Temporary files (`.tmp-*`) a crash left, removed by the next open.
    package var temporaryFiles: [String] = []
    /// Paths (relative to the folder) of files and folders whose names are not a key's: renamed or
    /// damaged names. Their entries are not listed and cannot be read.
    package var strayNames: [String] = []
    /// Entry files whose names decode to a key.
    package var entryFiles = 0

    /// Reads the folder at `directory` (changing nothing).
    ///
    /// - Throws: ``OfflineStoreError`` with code ``OfflineStoreError/Code/io`` or
    ///   ``OfflineStoreError/Code/permissionDenied`` when a folder cannot be listed or the journal read.
    package init(directory: URL) throws(OfflineStoreError) {
        let root = directory.path
        if let bytes = try POSIXFile.readFile(root + "/" + FileTree.journalName, key: nil) {
            journal = BatchJournal.decode(bytes).map { .pending(steps: $0.count) } ?? .damaged(sizeBytes: bytes.count)
        }
        let folder: DirectoryDescriptor
        do {
            folder = try DirectoryDescriptor(opening: root)
        } catch  where error.nativeCode == ENOENT {
            return  // a folder that does not exist holds nothing
        }
        for (name, isDirectory) in try folder.list() {
            if name.utf8.starts(with: FileTree.temporaryPrefix.utf8) {
                temporaryFiles.append(name)
            } else if !name.hasPrefix(".") {
                try visit(name, isDirectory: isDirectory, in: folder, relative: "", digits: [])
            }
        }
        temporaryFiles.sort()
        strayNames.sort()
    }

    private mutating func visit(
        _ name: String, isDirectory: Bool, in folder: DirectoryDescriptor, relative: String, digits: [UInt8]
    ) throws(OfflineStoreError) {
        let prefix = isDirectory ? FileNameScheme.folderPrefix : FileNameScheme.filePrefix
        guard let nameDigits = FileNameScheme.digits(ofName: name, prefix: prefix) else {
            strayNames.append(relative + name)
            return
        }
        let full = digits + nameDigits
        if isDirectory {
            guard let subfolder = try folder.child(name, create: false, sync: false) else { return }
            for (child, childIsDirectory) in try subfolder.list() {
                try visit(
                    child, isDirectory: childIsDirectory, in: subfolder, relative: relative + name + "/", digits: full)
            }
        } else if FileNameScheme.decodeKey(full) != nil {
            entryFiles += 1
        } else {
            strayNames.append(relative + name)
        }
    }
}
