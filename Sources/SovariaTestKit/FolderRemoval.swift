import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Removes `url` and everything under it, however deep: what ``TemporaryFolder`` and a
/// conformance check's folders do when released.
///
/// `FileManager.removeItem` names each file by its whole path, and fails with "File name too
/// long" on a tree whose paths pass `PATH_MAX` (4,096 bytes on Linux): the file store's long keys
/// make such trees, and the tests that write them left them behind for good. So what it leaves is
/// removed a folder at a time, each file named relative to its folder (`openat`, `unlinkat`).
func removeFolder(at url: URL) {
    guard (try? FileManager.default.removeItem(at: url)) == nil else { return }
    let parent = url.deletingLastPathComponent().path
    let folder = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard folder >= 0 else { return }
    defer { close(folder) }
    removeEntry(named: url.lastPathComponent, in: folder)
}

/// Removes the entry `name` of the open folder `parent`: a file, or a folder with all it holds.
private func removeEntry(named name: String, in parent: Int32) {
    let folder = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
    guard folder >= 0 else {
        unlinkat(parent, name, 0)  // not a folder (or a link to one): the entry itself goes
        return
    }
    guard let listing = fdopendir(folder) else {
        close(folder)
        return
    }
    defer { closedir(listing) }  // closes `folder` too
    // Listed first, removed after: a folder changed while it is read may list an entry twice or
    // not at all.
    var names: [String] = []
    while let entry = readdir(listing) {
        let child = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        if child != ".", child != ".." { names.append(child) }
    }
    for child in names { removeEntry(named: child, in: folder) }
    unlinkat(parent, name, AT_REMOVEDIR)
}
