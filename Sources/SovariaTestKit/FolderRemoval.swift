import Foundation
import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Removes `url` and everything under it, however deep: what ``TemporaryFolder`` and a
/// conformance check's folders do when released.
///
/// `FileManager.removeItem` names each file by its whole path, and fails with "File name too
/// long" where a path passes `PATH_MAX` (a store made in a folder thousands of bytes deep, as the
/// conformance suite's deep-folder runs make). What it leaves is removed a folder at a time, each
/// entry named relative to its folder (`openat`, `unlinkat`), listed as the stores list folders
/// (`POSIXFile.listDirectory`). A symbolic link is removed, never followed.
func removeFolder(at url: URL) {
    guard (try? FileManager.default.removeItem(at: url)) == nil else { return }
    let parent = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard parent >= 0 else { return }
    defer { close(parent) }
    removeEntry(named: url.lastPathComponent, in: parent)
}

/// Removes the entry `name` of the open folder `parent`: a file or a link, or a folder with all
/// it holds.
private func removeEntry(named name: String, in parent: Int32) {
    let folder = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    guard folder >= 0 else {
        unlinkat(parent, name, 0)  // not a folder (or a link to one): the entry itself goes
        return
    }
    defer { close(folder) }
    // Listed first, removed after: a folder changed while it is read may list an entry twice or
    // not at all.
    for child in (try? POSIXFile.listDirectory(".", at: folder)) ?? [] { removeEntry(named: child.name, in: folder) }
    unlinkat(parent, name, AT_REMOVEDIR)
}
