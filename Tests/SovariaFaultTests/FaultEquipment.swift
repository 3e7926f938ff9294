import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A tmpfs of a fixed size mounted on a folder of its own: a disk that fills up on demand.
///
/// Needs root (CI and the development machines run tests as root); unmounted and removed when
/// released, or by the next disk's sweep when its test process was killed (``TestMounts``).
final class SmallDisk: Sendable {
    /// The mounted folder.
    let url: URL

    init(sizeBytes: Int) throws {
        try #require(getuid() == 0, "fault tests mount a tmpfs and need root (make test runs as root in CI)")
        TestMounts.sweepLeftovers()
        url = try TestMounts.makeFolder()
        do {
            try Self.run("/bin/mount", "-t", "tmpfs", "-o", "size=\(sizeBytes),mode=0755", "tmpfs", url.path)
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw error
        }
    }

    deinit {
        try? Self.run("/bin/umount", "-l", url.path)
        try? FileManager.default.removeItem(at: url)
    }

    /// Gives the disk a new size (more space after a full disk, as an app freeing space would).
    func resize(toBytes sizeBytes: Int) throws {
        try Self.run("/bin/mount", "-o", "remount,size=\(sizeBytes)", url.path)
    }

    /// Makes the mount read-only, or writable again.
    ///
    /// A read-only remount fails as busy while any process has a file on the disk open for
    /// writing. The test's own store is closed by then, but a child that another test of this
    /// process forks holds a copy of every open descriptor from its fork until its exec (or, for
    /// the file cache's lock test, until it closes them): a few microseconds to a millisecond. So
    /// a busy remount is tried again, up to 2,000 times (each try is a `mount` process, a few
    /// milliseconds, long enough for such a child to move on; on a loaded machine 50 and then 200
    /// were once not enough, with no holder left by the time the error was written); the error then
    /// names what holds files on the disk: descriptors, and shared mappings (which keep a file
    /// open for writing after its descriptor is closed and show in no `fd` folder).
    func remount(readOnly: Bool) throws {
        var attempt = 0
        while true {
            attempt += 1
            do {
                try Self.run("/bin/mount", "-o", readOnly ? "remount,ro" : "remount,rw", url.path)
                return
            } catch  where "\(error)".contains("busy") && attempt < 2_000 {
                continue
            } catch {
                throw DiskBusy(failure: "\(error) (try \(attempt))", holders: Self.holders(of: url.path))
            }
        }
    }

    /// The failure of a remount, with what held files on the disk at that moment.
    struct DiskBusy: Error, CustomStringConvertible {
        let failure: String
        let holders: [String]
        var description: String { failure + "\nopen on the disk: " + holders.joined(separator: "; ") }
    }

    /// "pid (command): file" for every descriptor any process has open under `path`.
    static func holders(of path: String) -> [String] {
        let files = FileManager.default
        let processes = (try? files.contentsOfDirectory(atPath: "/proc")) ?? []
        return processes.filter { Int($0) != nil }.flatMap { pid -> [String] in
            let command = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "?"
            let name = command.trimmingCharacters(in: .whitespacesAndNewlines)
            let descriptors = (try? files.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            let open = descriptors.compactMap { descriptor -> String? in
                guard let target = try? files.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)"),
                    target.hasPrefix(path)
                else { return nil }
                return "\(pid) (\(name)) fd \(descriptor): \(target)"
            }
            // /proc/<pid>/maps lines end in the mapped file's path; "rw-s" is a shared writable map.
            let maps = (try? String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)) ?? ""
            let mapped = maps.split(separator: "\n").filter { $0.contains(path) }.map { line in
                "\(pid) (\(name)) map: \(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") "
                    + (line.split(separator: " ", omittingEmptySubsequences: true).last.map(String.init) ?? "")
            }
            return open + Set(mapped).sorted()
        }
    }

    func child(_ name: String) -> URL { url.appendingPathComponent(name) }

    static func run(_ tool: String, _ arguments: String...) throws {
        _ = try ChildProcess.run(tool, arguments)  // throws with the tool's error output on failure
    }
}

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
