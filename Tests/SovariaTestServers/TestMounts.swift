import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The folders tests mount a disk on (a tmpfs that fills up, a loop-mounted ext4 whose power is
/// cut), and the sweep that takes away those a killed test run left mounted.
///
/// A disk is unmounted when its test releases it. A test process that is killed (a developer's
/// Ctrl-C, a timeout, `kill -9`) releases nothing, and its mounts stayed for good: a development
/// machine held 26 of them after a day of runs. Each folder's name carries the process that
/// mounted it, `sovaria-mount-<pid>-<UUID>`, and every new disk first sweeps the folders of
/// processes that no longer run: unmounted (lazily, so nothing can hold it) and removed.
public enum TestMounts {
    /// One sweep at a time in this process: a sweep that finds a folder another is removing
    /// would return before it is gone.
    private static let sweeping = Mutex(())

    /// What every mount folder's name starts with.
    public static let namePrefix = "sovaria-mount-"

    /// A new, empty folder under the temporary directory, named for this process.
    public static func makeFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(namePrefix)\(getpid())-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// The process that made the mount folder `name` (a folder's last path component), or `nil`
    /// when the name is not one ``makeFolder()`` gives.
    public static func owner(ofFolderNamed name: String) -> pid_t? {
        guard name.hasPrefix(namePrefix) else { return nil }
        let rest = name.dropFirst(namePrefix.count)
        guard let dash = rest.firstIndex(of: "-") else { return nil }
        return pid_t(rest[..<dash])
    }

    /// Unmounts and removes the mount folders in `root` (the temporary directory) of processes
    /// that no longer run; returns the folders it removed. A folder of a running process (this
    /// one, or another test run's) is left alone.
    @discardableResult
    public static func sweepLeftovers(in root: URL = FileManager.default.temporaryDirectory) -> [URL] {
        sweeping.withLock { _ in sweep(root) }
    }

    private static func sweep(_ root: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        var removed: [URL] = []
        for name in names {
            guard let owner = owner(ofFolderNamed: name), !isRunning(owner) else { continue }
            let folder = root.appendingPathComponent(name, isDirectory: true)
            // The disk itself, or (a loop disk) one inside the folder: deepest first.
            for mountPoint in mountPoints(under: folder.path).sorted(by: { $0.count > $1.count }) {
                _ = try? ChildProcess.run("/bin/umount", ["-l", mountPoint])
            }
            // A read-only storage test makes files immutable; on the disk they went with it.
            _ = try? ChildProcess.run("/usr/bin/chattr", ["-R", "-i", folder.path])
            if (try? FileManager.default.removeItem(at: folder)) != nil { removed.append(folder) }
        }
        return removed
    }

    /// Whether a process `pid` runs (or is a zombie not reaped yet).
    static func isRunning(_ pid: pid_t) -> Bool {
        pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH)
    }

    /// The mount points at `path` or under it, as this process sees them.
    public static func mountPoints(under path: String) -> [String] {
        #if os(Linux)
            guard let table = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return [] }
            return table.split(separator: "\n").compactMap { line in
                // "device mount-point type options 0 0"; a space in a path is written `\040`.
                let fields = line.split(separator: " ")
                guard fields.count > 1 else { return nil }
                let point = String(fields[1]).replacingOccurrences(of: "\\040", with: " ")
                return point == path || point.hasPrefix(path + "/") ? point : nil
            }
        #else
            // The tests that mount disks run on Linux only (tmpfs, loop devices, ext4).
            return []
        #endif
    }
}
