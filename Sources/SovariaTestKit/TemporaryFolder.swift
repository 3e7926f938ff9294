import Foundation

/// A folder of its own for one test, removed with everything in it when the value is released.
///
/// ```swift
/// let folder = try TemporaryFolder()
/// let store = try MyStore(folder: folder.child("store"))
/// ```
///
/// Keep the value for as long as the folder is used: `try TemporaryFolder().url` removes the
/// folder as soon as its URL is read, and a store opened there makes it again, for good
/// (`make lint` refuses that form).
public final class TemporaryFolder: Sendable {
    /// The folder, created empty.
    public let url: URL

    /// Creates a new, empty folder under the system's temporary directory.
    public init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("sovaria-test-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { removeFolder(at: url) }

    /// The URL of `name` inside the folder (not created).
    public func child(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// The size in bytes of the file at `path` under the folder.
    public func fileSize(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: child(path).path)
        return (attributes[.size] as? NSNumber)?.intValue ?? -1
    }
}
