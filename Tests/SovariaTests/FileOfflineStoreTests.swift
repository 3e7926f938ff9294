import Foundation
import SovariaTestKit
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

    @Test func fallsBackToMemoryWhenTheFolderIsNotWritable() async throws {
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
        #expect(!store.isPersistent)
        #expect(store.fallbackReason?.code == .permissionDenied)
    }

    @Test func createsPrivateFolderAndFiles() async throws {
        let folder = try TemporaryFolder()
        let store = FileOfflineStore(directory: folder.child("store"))
        try await store.set("secret", "value")
        #expect(try permissions(of: folder.child("store")) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.child("store").path)
        #expect(files.count == 1)
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
        let store = FileOfflineStore(directory: directory)
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        #expect(try await store.get("k") == "v")
    }

    @Test func finishesABatchACrashInterrupted() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("store")
        try await FileOfflineStore(directory: directory).write([
            .set(key: "a", value: "old"), .set(key: "b", value: "old"),
        ])
        // A crash after the journal was renamed into place, before the batch was applied.
        let journal = BatchJournal.encode([
            .set(key: "a", value: "new"), .delete(key: "b"), .set(key: "c", value: "new"),
        ])
        try Data(journal).write(to: directory.appendingPathComponent(".journal"))
        let store = FileOfflineStore(directory: directory)
        #expect(try await store.get("a") == "new")
        #expect(try await store.get("b") == nil)
        #expect(try await store.get("c") == "new")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent(".journal").path))
    }

    @Test func ignoresADamagedJournal() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("store")
        try await FileOfflineStore(directory: directory).write([
            .set(key: "a", value: "old"), .set(key: "b", value: "old"),
        ])
        var journal = BatchJournal.encode([.set(key: "a", value: "new"), .set(key: "b", value: "new")])
        journal[journal.count / 2] ^= 0xFF
        try Data(journal).write(to: directory.appendingPathComponent(".journal"))
        let store = FileOfflineStore(directory: directory)
        #expect(try await store.get("a") == "old")
        #expect(try await store.get("b") == "old")
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

    private func permissions(of url: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }

    private func chattr(_ flag: String, _ path: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        process.arguments = [flag, path]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }
}
