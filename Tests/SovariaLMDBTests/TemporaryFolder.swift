import Foundation

/// A folder of its own for one test, removed when the value is released.
final class TemporaryFolder: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("sovaria-lmdb-test-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func child(_ name: String) -> URL { url.appendingPathComponent(name, isDirectory: true) }

    /// The size in bytes of the file at `path` under this folder.
    func fileSize(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.appendingPathComponent(path).path)
        return (attributes[.size] as? NSNumber)?.intValue ?? -1
    }
}
