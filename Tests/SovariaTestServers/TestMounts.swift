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
/// A disk is unmounted when its test releases it, which a killed test process (Ctrl-C, a
/// timeout, `kill -9`) never does. So each folder's name carries the process that mounted it,
/// `sovaria-mount-<pid>-<pid namespace>-<UUID>`, and every new disk first sweeps the folders of
/// processes of its own pid namespace that no longer run: unmounted (lazily, so nothing can hold
/// it) and removed. A folder of another pid namespace (a container sharing the temporary
/// directory) is left alone: its process cannot be seen from here.
public enum TestMounts {
    /// What every mount folder's name starts with.
    public static let namePrefix = "sovaria-mount-"

    /// One sweep at a time in this process: a sweep that finds a folder another is removing
    /// would return before it is gone.
    private static let sweeping = Mutex(())

    /// A new, empty folder under the temporary directory, named for this process.
    public static func makeFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent(folderName(pid: getpid()), isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// A new folder name for a disk of process `pid`, of this process's pid namespace.
    public static func folderName(pid: pid_t) -> String {
        "\(namePrefix)\(pid)-\(pidNamespace)-\(UUID().uuidString)"
    }

    /// The process that made the mount folder `name` (a folder's last path component), and its
    /// pid namespace; `nil` when the name is not one ``folderName(pid:)`` gives.
    public static func owner(ofFolderNamed name: String) -> (pid: pid_t, namespace: UInt64)? {
        guard name.hasPrefix(namePrefix) else { return nil }
        let parts = name.dropFirst(namePrefix.count).split(separator: "-", maxSplits: 2)
        guard parts.count == 3, let pid = pid_t(parts[0]), let namespace = UInt64(parts[1]) else { return nil }
        return (pid, namespace)
    }

    /// Unmounts and removes the mount folders in `root` (the temporary directory) of processes
    /// of this pid namespace that no longer run; returns the folders it removed. A folder of a
    /// running process (this one, or another test run's) is left alone, and so is one whose
    /// disk would not unmount.
    @discardableResult
    public static func sweepLeftovers(in root: URL = FileManager.default.temporaryDirectory) -> [URL] {
        sweeping.withLock { _ in sweep(root) }
    }

    private static func sweep(_ root: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        // As the mount table writes it: symbolic links resolved.
        let resolvedRoot = root.resolvingSymlinksInPath()
        var removed: [URL] = []
        for name in names {
            guard let owner = owner(ofFolderNamed: name), owner.namespace == pidNamespace, !isRunning(owner.pid)
            else { continue }
            let folder = resolvedRoot.appendingPathComponent(name, isDirectory: true)
            // The disk itself, or (a loop disk) one inside the folder: deepest first.
            for mountPoint in mountPoints(under: folder.path).sorted(by: { $0.count > $1.count }) {
                _ = try? ChildProcess.run("/bin/umount", ["-l", mountPoint])
            }
            // Never the files of a disk still mounted.
            guard mountPoints(under: folder.path).isEmpty else { continue }
            if (try? FileManager.default.removeItem(at: folder)) != nil { removed.append(folder) }
        }
        return removed
    }

    /// Whether a process `pid` runs (or is a zombie not reaped yet).
    static func isRunning(_ pid: pid_t) -> Bool {
        pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH)
    }

    /// This process's pid namespace (the inode of `/proc/self/ns/pid`); 0 where there is none.
    public static let pidNamespace: UInt64 = {
        #if os(Linux)
            guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/pid") else {
                return 0
            }
            // "pid:[4026531836]"
            return UInt64(link.filter(\.isNumber)) ?? 0
        #else
            return 0
        #endif
    }()

    /// The text of a `/proc` file, read to its end. (`String(contentsOfFile:)` reads such a file,
    /// whose size says 0, only as far as its first 4 KB: a busy machine's mount table is longer.)
    static func procFile(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path), let data = try? handle.readToEnd() else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The mount points at `path` or under it, as this process sees them.
    public static func mountPoints(under path: String) -> [String] {
        #if os(Linux)
            guard let table = procFile("/proc/self/mounts") else { return [] }
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
