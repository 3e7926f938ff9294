import Foundation
import Sovaria

extension OfflineStoreConformance {
    static let lifeChecks: [ConformanceCheck] = [
        ConformanceCheck("storesShareNothing", "Two stores from one factory share no entries.") { context in
            let first = try await context.makeStore().store
            let second = try await context.makeStore().store
            try await first.set("shared?", "first")
            try context.expectBytes(try await second.get("shared?"), nil, "second store sees the first's entry")
            try await second.set("shared?", "second")
            try context.expectBytes(try await first.get("shared?"), "first", "first store after the second's write")
            try await second.delete("shared?")
            try context.expectBytes(try await first.get("shared?"), "first", "first store after the second's delete")
        },
        ConformanceCheck("manyTasksAtOnce", "64 tasks calling one store at once each see their own writes.") {
            context in
            let store = try await context.makeStore().store
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<64 {
                    group.addTask {
                        let prefix = "t\(task):"
                        for item in 0..<12 { try await store.set(prefix + "\(item)", "\(task)-\(item)") }
                        try await store.write([.set(key: prefix + "b", value: "batch"), .delete(key: prefix + "0")])
                        for item in stride(from: 1, to: 12, by: 2) { try await store.delete(prefix + "\(item)") }
                        try await store.set("shared", "\(task)")
                        _ = try await store.get("shared")
                        _ = try await store.entries("t", after: nil, limit: 7)
                        let expected = byteSorted(
                            (2..<12).filter { $0 % 2 == 0 }.map { prefix + "\($0)" } + [prefix + "b"])
                        try context.expectKeys(try await store.keys(prefix), expected, "task \(task)'s keys")
                        for key in expected where key != prefix + "b" {
                            try context.expectBytes(
                                try await store.get(key), "\(task)-\(key.dropFirst(prefix.count))", "get(\(key))")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let shared = Int(try await store.get("shared") ?? "") ?? -1
            try context.expect((0..<64).contains(shared), "shared key holds one task's write, got \(shared)")
            try context.expect(try await store.keys("t").count == 64 * 6, "6 keys left for each of 64 tasks")
        },
        ConformanceCheck(
            "persistentStoresKeepDataAcrossReopen",
            "A persistent store, closed and opened again, has every entry, and nothing deleted."
        ) { context in
            let folder = try context.makeFolder()
            let long = String(repeating: "L", count: context.factory.maxKeyUTF8Count)
            do {
                let store = try await context.factory.open(folder)
                if let expected = context.factory.persistent {
                    try context.expect(
                        store.isPersistent == expected, "isPersistent is \(expected), as the factory says")
                }
                guard store.isPersistent else { return }
                try await store.set("kept", "value")
                try await store.set("deleted", "value")
                try await store.write([
                    .set(key: "batch1", value: "1"), .set(key: "batch2", value: ""), .delete(key: "deleted"),
                ])
                try await store.set(long, "long")
            }  // the first store is released here, so the next open is a real reopen
            let store = try await context.factory.open(folder)
            try context.expectKeys(
                try await store.keys(""), byteSorted(["kept", "batch1", "batch2", long]), "keys after reopen")
            try context.expectBytes(try await store.get("kept"), "value", "get(kept) after reopen")
            try context.expectBytes(try await store.get("batch2"), "", "get(batch2) after reopen")
            try context.expectBytes(try await store.get("deleted"), nil, "get(deleted) after reopen")
        },
        ConformanceCheck("compactKeepsData", "compact() keeps every entry and deletes nothing else.") { context in
            let store = try await context.makeStore().store
            let value = String(repeating: "c", count: 1_000)
            try await store.write((0..<300).map { .set(key: "c:\(1_000 + $0)", value: value) })
            try await store.write((0..<300).filter { $0 % 3 != 0 }.map { .delete(key: "c:\(1_000 + $0)") })
            try await store.compact()
            let expected = (0..<300).filter { $0 % 3 == 0 }.map { "c:\(1_000 + $0)" }
            try context.expectKeys(try await store.keys("c:"), expected, "keys after compact")
            for key in expected {
                try context.expectBytes(try await store.get(key), value, "get(\(key)) after compact")
            }
            try await store.set("after", "compact")
            try context.expectBytes(try await store.get("after"), "compact", "a write after compact")
        },
        ConformanceCheck(
            "descriptorsAreCloseOnExec",
            "Every file the store keeps open in its folder is close-on-exec: a child process the app starts does not "
                + "keep the store's files open (checked where the system lists a process's files: Linux, Apple "
                + "platforms)."
        ) { context in
            let (store, folder) = try await context.makeStore()
            try await store.set("k", "v")
            _ = try await store.entries("", after: nil, limit: 10)
            let root = canonicalPath(folder.path) + "/"
            for (descriptor, target) in openDescriptorPaths() where target.hasPrefix(root) {
                let flags = fcntl(descriptor, F_GETFD)
                try context.expect(
                    flags < 0 || flags & FD_CLOEXEC != 0,
                    "\(target) is open without close-on-exec: a child process keeps it open")
            }
            withExtendedLifetime(store) {}
        },
    ]
}

/// This process's open descriptors and the paths of the files they are open on, symbolic links
/// resolved: on Linux from `/proc/self/fd`, on Apple platforms by `F_GETPATH` on each descriptor;
/// none elsewhere.
private func openDescriptorPaths() -> [(descriptor: Int32, path: String)] {
    #if os(Linux)
        let files = FileManager.default
        let names = (try? files.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap { name in
            guard let descriptor = Int32(name),
                let target = try? files.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name)
            else { return nil }
            return (descriptor, target)
        }
    #elseif canImport(Darwin)
        var paths: [(descriptor: Int32, path: String)] = []
        var buffer = [UInt8](repeating: 0, count: Int(MAXPATHLEN))
        for descriptor in 0..<min(getdtablesize(), 1 << 16) {
            let found = buffer.withUnsafeMutableBytes { fcntl(descriptor, F_GETPATH, $0.baseAddress!) }
            guard found != -1 else { continue }
            paths.append((descriptor, String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)))
        }
        return paths
    #else
        return []
    #endif
}

/// `path` with every symbolic link resolved, as the system names an open file (`realpath`).
private func canonicalPath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return URL(fileURLWithPath: path).standardizedFileURL.path }
    defer { free(resolved) }
    return String(cString: resolved)
}
