import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A tmpfs of a fixed size mounted on a folder of its own: a disk that fills up on demand.
///
/// Needs root (CI and the development machines run tests as root); unmounted and removed when
/// released, or by the next disk's sweep when its test process was killed (``TestMounts``).
public final class SmallDisk: Sendable {
    /// The mounted folder.
    public let url: URL

    /// Mounts a tmpfs of `sizeBytes` on a new folder of its own (``TestMounts``).
    public init(sizeBytes: Int) throws {
        try #require(getuid() == 0, "a small disk is a tmpfs mount, which needs root (make test runs as root in CI)")
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
    public func resize(toBytes sizeBytes: Int) throws {
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
    public func remount(readOnly: Bool) throws {
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
    public struct DiskBusy: Error, CustomStringConvertible {
        /// What `mount` said, and at which try.
        public let failure: String
        /// What held files on the disk then (``SmallDisk/holders(of:)``).
        public let holders: [String]
        /// The failure, then the holders.
        public var description: String { failure + "\nopen on the disk: " + holders.joined(separator: "; ") }
    }

    /// "pid (command): file" for every descriptor any process has open under `path`.
    public static func holders(of path: String) -> [String] {
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
            let maps = TestMounts.procFile("/proc/\(pid)/maps") ?? ""
            let mapped = maps.split(separator: "\n").filter { $0.contains(path) }.map { line in
                "\(pid) (\(name)) map: \(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") "
                    + (line.split(separator: " ", omittingEmptySubsequences: true).last.map(String.init) ?? "")
            }
            return open + Set(mapped).sorted()
        }
    }

    /// The URL of `name` on the disk (not created).
    public func child(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Runs `tool` to its end; throws with its error output when it fails.
    static func run(_ tool: String, _ arguments: String...) throws {
        _ = try ChildProcess.run(tool, arguments)  // throws with the tool's error output on failure
    }
}
