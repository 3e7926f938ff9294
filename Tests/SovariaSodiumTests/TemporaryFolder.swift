import Foundation

/// A folder of its own for one test, removed when the value is released.
final class TemporaryFolder: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("sovaria-sodium-test-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func child(_ name: String) -> URL { url.appendingPathComponent(name, isDirectory: true) }

    /// The contents of every file under the folder.
    func allFileContents() throws -> [Data] {
        let enumerator = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey])
        var contents: [Data] = []
        while let file = enumerator?.nextObject() as? URL {
            guard try file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            contents.append(try Data(contentsOf: file))
        }
        return contents
    }
}
