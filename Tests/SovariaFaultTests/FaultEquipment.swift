import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Damage done to files the way a bad disk or a careless copy does it.
enum Damage {
    /// Cuts the file at `path` to `fraction` of its size.
    static func truncate(_ path: String, toFraction fraction: Double) throws {
        let size = try fileSize(path)
        try #require(Glibc.truncate(path, off_t(Double(size) * fraction)) == 0)
    }

    /// Changes the byte at `offset` so that it stays printable ASCII (the value stays valid UTF-8).
    static func flipLetter(_ path: String, at offset: Int) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: [byte == UInt8(ascii: "q") ? UInt8(ascii: "r") : UInt8(ascii: "q")])
    }

    /// Flips every bit of the byte at `offset`.
    static func invert(_ path: String, at offset: Int) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: [~byte])
    }

    static func fileSize(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require((attributes[.size] as? NSNumber)?.intValue)
    }

    /// The files in `folder` whose names end with `suffix` (or start with it, for `MANIFEST-`).
    static func files(in folder: URL, matching predicate: (String) -> Bool) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter(predicate).sorted()
            .map { folder.appendingPathComponent($0).path }
    }
}

/// A value of `count` letters that differ from key to key.
func letters(_ count: Int, seed: Int) -> String {
    var generator = SplitMix(seed: UInt64(bitPattern: Int64(seed)))
    return String((0..<count).map { _ in Character(Unicode.Scalar(UInt8(97 + generator.next() % 26))) })
}

/// Sets `sov:fill:<n>` entries of `valueBytes` letters until the store refuses one; returns what
/// it acknowledged and the error that stopped it (`nil` if 2,000 entries fit).
func fillUntilFull(
    _ store: any OfflineStore, valueBytes: Int = 4_096
) async -> (acknowledged: [String: String], error: OfflineStoreError?) {
    var acknowledged: [String: String] = [:]
    for index in 0..<2_000 {
        let key = "sov:fill:\(1_000 + index)"
        let value = letters(valueBytes, seed: index)
        do {
            try await store.set(key, value)
            acknowledged[key] = value
        } catch let error as OfflineStoreError {
            return (acknowledged, error)
        } catch {
            return (acknowledged, OfflineStoreError(.io, "\(error)"))
        }
    }
    return (acknowledged, nil)
}
