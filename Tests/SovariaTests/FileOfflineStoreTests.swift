import Foundation
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import Sovaria

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct FileOfflineStoreTests {
    @Test(arguments: OfflineStoreConformance.checks)
    func conformsWhenSynced(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("file(synced)", persistent: true) { FileOfflineStore(directory: $0, durability: .synced) })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsWhenFlushed(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("file(flushed)", persistent: true) {
                FileOfflineStore(directory: $0, durability: .flushed)
            })
    }

    /// Issue 27: the whole suite in a folder 3,100 bytes deep, the room a 511-byte key has below
    /// an app's Application Support folder on Apple platforms (1,024 bytes per path there, 4,096
    /// on Linux): a key's file is up to 1,031 bytes below the store, so only calls relative to an
    /// open folder reach it.
    @Test(arguments: OfflineStoreConformance.checks)
    func conformsInAFolder3100BytesDeepWhenSynced(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("file(synced, deep)", persistent: true) {
                FileOfflineStore(directory: try Self.deepFolder(in: $0), durability: .synced)
            })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsInAFolder3100BytesDeepWhenFlushed(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("file(flushed, deep)", persistent: true) {
                FileOfflineStore(directory: try Self.deepFolder(in: $0), durability: .flushed)
            })
    }

    @Test(arguments: [Durability.synced, .flushed])
    func theLongestKeysLiveInADeepFolderAndSurviveAReopen(durability: Durability) async throws {
        let folder = try TemporaryFolder()
        let deep = try Self.deepFolder(in: folder.url)
        let keys = [String(repeating: "k", count: 511), String(repeating: "é", count: 255) + "x", "short"]
        do {
            let store = FileOfflineStore(directory: deep, durability: durability)
            #expect(store.fallbackReason == nil && store.isPersistent)
            for key in keys { try await store.set(key, "value of \(key.utf8.count)") }
            try await store.write(keys.map { .set(key: $0, value: "batch \($0.utf8.count)") })
            try await store.delete(keys[2])
        }
        let reopened = FileOfflineStore(directory: deep, durability: durability)
        #expect(
            try await reopened.keys("") == keys.prefix(2).sorted { Array($0.utf8).lexicographicallyPrecedes($1.utf8) })
        for key in keys.prefix(2) { #expect(try await reopened.get(key) == "batch \(key.utf8.count)") }
        let entries = try await reopened.entries("", after: nil, limit: 10)
        #expect(entries.map(\.key) == (try await reopened.keys("")))
        let check = try FileStoreFolderCheck(directory: deep)
        #expect(check.entryFiles == 2 && check.strayNames.isEmpty && check.journal == .none)
    }

    /// A folder below `parent` whose path is at least 3,100 bytes long, made of 250-byte names.
    static func deepFolder(in parent: URL) throws -> URL {
        var folder = parent
        while folder.path.utf8.count < 3_100 {
            folder = folder.appendingPathComponent(String(repeating: "d", count: 250), isDirectory: true)
        }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Issue 26: synced writes that wait together are written as one group, and each caller
    /// gets its own outcome: a set whose folder is blocked (a file where the folder of a long key
    /// goes) and a batch through the journal that touches it fail alone, and everything else in
    /// the group is applied, in arrival order, and still there after a reopen.
    @Test(.timeLimit(.minutes(10))) func aGroupOfSyncedWritesGivesEachCallerItsOwnOutcome() async throws {
        let folder = try TemporaryFolder()
        let store = FileOfflineStore(directory: folder.url, durability: .synced)
        try await store.set("before", "0")
        let handle = try #require(store.sharedHandle)
        let blocked = String(repeating: "b", count: 300)  // its file lies in a folder of its own
        let blockingName = try #require(FileNameScheme.path(for: blocked).folders.first)
        _ = FileManager.default.createFile(atPath: folder.url.path + "/" + blockingName, contents: Data())

        // The queue is held, so every write below waits for one group.
        let (holding, held) = AsyncStream<Void>.makeStream()
        let (release, letGo) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await handle.queue.runAlone {
                held.yield()
                let done = DispatchSemaphore(value: 0)
                Task {
                    for await _ in release { break }
                    done.signal()
                }
                done.wait()
            }
        }
        for await _ in holding { break }
        let writes: [[StoreWrite]] = [
            [.set(key: "k1", value: "1")],
            [.set(key: blocked, value: "never")],
            [.set(key: "k1", value: "2"), .set(key: "k2", value: "2")],
            [.delete(key: "before")],
            [.set(key: "k3", value: "3"), .set(key: blocked, value: "never")],
            [.set(key: "k1", value: "3")],
        ]
        var outcomes: [Int: Bool] = [:]
        try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for (index, batch) in writes.enumerated() {
                // In order: each is queued before the next starts.
                let queued = handle.commits.waitingCount
                group.addTask {
                    do {
                        try await store.write(batch)
                        return (index, true)
                    } catch {
                        return (index, false)
                    }
                }
                while handle.commits.waitingCount == queued { await Task.yield() }
            }
            letGo.yield()
            for try await (index, succeeded) in group { outcomes[index] = succeeded }
        }
        try await holder.value
        #expect(handle.commits.lastGroupCount == writes.count, "one group")
        #expect(outcomes == [0: true, 1: false, 2: true, 3: true, 4: false, 5: true])
        for reading in [store, FileOfflineStore(directory: folder.url, durability: .synced)] {
            #expect(try await reading.get("k1") == "3", "the group's writes to k1 land in arrival order")
            #expect(try await reading.get("k2") == "2")
            #expect(try await reading.get("k3") == nil, "the failed batch left nothing")
            #expect(try await reading.get("before") == nil)
            #expect(try await reading.keys("") == ["k1", "k2"])
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter {
            $0.hasPrefix(".tmp-")
        }
        #expect(leftovers.isEmpty, "no temporary file is left")
    }

    @Test func fallsBackToMemoryWhenTheFolderCannotBeCreated() async throws {
        let folder = try TemporaryFolder()
        let blocker = folder.url.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: blocker)
        let store = FileOfflineStore(directory: blocker.appendingPathComponent("store"))
        #expect(!store.isPersistent)
        #expect(!store.capabilities.contains(.persistent))
        let reason = try #require(store.fallbackReason)
        #expect(reason.engine == "file")
        #expect(reason.nativeCode == ENOTDIR)
        try await store.set("k", "still works")
        #expect(try await store.get("k") == "still works")
    }

    @Test func opensAFolderItCannotWriteReadOnly() async throws {
        let folder = try TemporaryFolder()
        let readOnly = folder.child("read-only")
        try FileManager.default.createDirectory(at: readOnly, withIntermediateDirectories: true)
        try await FileOfflineStore(directory: readOnly).set("k", "v")
        // Root ignores permission bits; an immutable folder refuses root too.
        let immutable = chattr("+i", readOnly.path)
        defer { if immutable { _ = chattr("-i", readOnly.path) } }
        if !immutable { chmod(readOnly.path, 0o500) }
        guard immutable || getuid() != 0 else { return }  // root without chattr: nothing to refuse
        let store = FileOfflineStore(directory: readOnly)
        #expect(store.isPersistent)
        #expect(store.fallbackReason == nil)
        #expect(store.readOnlyReason?.code == .permissionDenied)
        #expect(try await store.get("k") == "v")
        #expect(try await store.keys("") == ["k"])
        let error = await #expect(throws: OfflineStoreError.self) { try await store.set("k2", "v") }
        #expect(error?.code == .permissionDenied)
    }

    @Test func keepsTheOwnersNarrowerFolderMode() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("store")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o500)
        defer { chmod(directory.path, 0o700) }
        _ = FileOfflineStore(directory: directory)
        #expect(try permissions(of: directory) == 0o500)
        chmod(directory.path, 0o755)
        _ = FileOfflineStore(directory: directory)
        #expect(try permissions(of: directory) == 0o700)
    }

    @Test func readsADamagedOrMovedFileAsCorrupt() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("store")
        let store = FileOfflineStore(directory: directory)
        try await store.write([.set(key: "a", value: "apple"), .set(key: "b", value: "berry")])
        let fileA = directory.appendingPathComponent(FileNameScheme.path(for: "a").file)
        let fileB = directory.appendingPathComponent(FileNameScheme.path(for: "b").file)
        // A file copied under another key's name: valid on its own, wrong for this key.
        try FileManager.default.removeItem(at: fileB)
        try FileManager.default.copyItem(at: fileA, to: fileB)
        let moved = await #expect(throws: OfflineStoreError.self) { try await store.get("b") }
        #expect(moved?.code == .corrupt)
        // One letter changed: still valid UTF-8, but not what was written.
        var bytes = try Data(contentsOf: fileA)
        bytes[bytes.count - 1] = UInt8(ascii: "x")
        try bytes.write(to: fileA)
        let changed = await #expect(throws: OfflineStoreError.self) { try await store.get("a") }
        #expect(changed?.code == .corrupt)
        #expect(changed?.key == "a")
    }

    @Test func createsPrivateFolderAndFiles() async throws {
        let folder = try TemporaryFolder()
        let store = FileOfflineStore(directory: folder.child("store"))
        try await store.set("secret", "value")
        #expect(try permissions(of: folder.child("store")) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.child("store").path)
        #expect(files.filter { !$0.hasPrefix(".") }.count == 1)  // the entry, beside the store's .lock and .reserve
        #expect(files.contains(".lock"))
        for file in files { #expect(try permissions(of: folder.child("store").appendingPathComponent(file)) == 0o600) }
    }

    @Test func namesEveryKeySafelyAndListsLongKeysInByteOrder() async throws {
        let folder = try TemporaryFolder()
        let store = FileOfflineStore(directory: folder.child("store"))
        let keys = [
            "/", ".", "..", "a/b", String(repeating: "é", count: 255) + "x", String(repeating: "z", count: 240),
            String(repeating: "z", count: 241), String(repeating: "z", count: 121), String(repeating: "z", count: 120),
            String(repeating: "z", count: 511),
        ]
        for key in keys { try await store.set(key, key) }
        #expect(
            try await store.keys("").map { Array($0.utf8) }
                == keys.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) })
        #expect(try await store.keys("zzz").count == 5)
        let reopened = FileOfflineStore(directory: folder.child("store"))
        for key in keys { #expect(try await reopened.get(key) == key) }
        let enumerator = FileManager.default.enumerator(atPath: folder.child("store").path)
        while let path = enumerator?.nextObject() as? String {
            #expect(path.split(separator: "/").allSatisfy { $0.utf8.count <= 255 })
        }
    }

    @Test func storesOnOneFolderShareOneHandle() async throws {
        let folder = try TemporaryFolder()
        let first = FileOfflineStore(directory: folder.child("store"))
        let second = FileOfflineStore(directory: URL(fileURLWithPath: folder.url.path + "/./store"))
        #expect(first.sharedHandle != nil && first.sharedHandle === second.sharedHandle)
        try await first.write([.set(key: "a", value: "1"), .set(key: "b", value: "2")])
        #expect(try await second.keys("") == ["a", "b"])
    }

    @Test func removesTemporaryFilesLeftByACrash() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("store")
        try await FileOfflineStore(directory: directory).set("k", "v")
        let leftover = directory.appendingPathComponent(".tmp-crashed")
        try Data("half".utf8).write(to: leftover)
        try Self.forgetCleanClose(directory)
        let store = FileOfflineStore(directory: directory)
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        #expect(try await store.get("k") == "v")
    }

    /// What a crash leaves that a clean close does not: no `.clean` mark.
    static func forgetCleanClose(_ directory: URL) throws {
        try FileManager.default.removeItem(at: directory.appendingPathComponent(CleanCloseMark.markName))
    }

    @Test func anOpenAfterACleanCloseDoesNotSweepTheFolder() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("store")
        try await FileOfflineStore(directory: directory).set("k", "v")
        let mark = directory.appendingPathComponent(CleanCloseMark.markName)
        #expect(FileManager.default.fileExists(atPath: mark.path), "the last close leaves the mark")
        // A file only a crash could leave: an open after a clean close does not list the folder
        // to look for it.
        let planted = directory.appendingPathComponent(".tmp-planted")
        try Data("x".utf8).write(to: planted)
        do {
            let store = FileOfflineStore(directory: directory)
            #expect(try await store.get("k") == "v")
            #expect(FileManager.default.fileExists(atPath: planted.path), "no sweep after a clean close")
            #expect(!FileManager.default.fileExists(atPath: mark.path), "an open takes the mark away")
        }
        try Self.forgetCleanClose(directory)
        let afterCrash = FileOfflineStore(directory: directory)
        #expect(!FileManager.default.fileExists(atPath: planted.path), "the open after a crash sweeps")
        #expect(try await afterCrash.get("k") == "v")
    }

    @Test func finishesABatchACrashInterrupted() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("store")
        try await FileOfflineStore(directory: directory).write([
            .set(key: "a", value: "old"), .set(key: "b", value: "old"),
        ])
        // A crash after the journal was renamed into place, before the batch was applied.
        try stage(["a": "new", "c": "new"], in: directory)
        let journal = BatchJournal.encode([
            .rename(stagedName: ".tmp-a", key: "a"), .remove(key: "b"), .rename(stagedName: ".tmp-c", key: "c"),
        ])
        try Data(journal).write(to: directory.appendingPathComponent(".journal"))
        let store = FileOfflineStore(directory: directory)
        #expect(try await store.get("a") == "new")
        #expect(try await store.get("b") == nil)
        #expect(try await store.get("c") == "new")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(left.filter { $0.hasPrefix(".tmp-") || $0 == ".journal" }.isEmpty)
    }

    @Test func ignoresADamagedJournal() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("store")
        try await FileOfflineStore(directory: directory).write([
            .set(key: "a", value: "old"), .set(key: "b", value: "old"),
        ])
        try stage(["a": "new", "b": "new"], in: directory)
        var journal = BatchJournal.encode([
            .rename(stagedName: ".tmp-a", key: "a"), .rename(stagedName: ".tmp-b", key: "b"),
        ])
        journal[journal.count / 2] ^= 0xFF
        try Data(journal).write(to: directory.appendingPathComponent(".journal"))
        try Self.forgetCleanClose(directory)
        let store = FileOfflineStore(directory: directory)
        #expect(try await store.get("a") == "old")
        #expect(try await store.get("b") == "old")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(left.filter { $0.hasPrefix(".tmp-") || $0 == ".journal" }.isEmpty)
    }

    @Test func defaultDirectoryPrefersOverrideThenEnvironment() throws {
        let override = URL(fileURLWithPath: "/tmp/sovaria-override", isDirectory: true)
        FileOfflineStore.directoryOverride = override
        defer { FileOfflineStore.directoryOverride = nil }
        #expect(FileOfflineStore.defaultDirectory() == override)
        FileOfflineStore.directoryOverride = nil
        let fromEnvironment = ProcessInfo.processInfo.environment["SOVARIA_OFFLINE_DIR"]
        if let fromEnvironment, !fromEnvironment.isEmpty {
            #expect(FileOfflineStore.defaultDirectory().path == fromEnvironment)
        } else {
            #expect(FileOfflineStore.defaultDirectory().path.hasSuffix("/sovaria/offline"))
        }
    }

    // MARK: - Helpers

    /// Writes staged files (`.tmp-<key>`) as a batch does before its journal.
    private func stage(_ values: [String: String], in directory: URL) throws {
        for (key, value) in values {
            try Data(EntryFile.encode(key: key, value: value)).write(
                to: directory.appendingPathComponent(".tmp-\(key)"))
        }
    }

    private func permissions(of url: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }

    private func chattr(_ flag: String, _ path: String) -> Bool {
        (try? ChildProcess.run("/usr/bin/chattr", [flag, path])) != nil
    }
}
