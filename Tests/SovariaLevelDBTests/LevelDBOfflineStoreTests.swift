import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaLevelDB

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct LevelDBOfflineStoreTests {
    @Test(arguments: OfflineStoreConformance.checks)
    func conformsWhenSynced(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("leveldb(synced)", persistent: true) { folder in
                try LevelDBOfflineStore(directory: folder, durability: .synced)
            })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsWhenFlushed(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("leveldb(flushed)", persistent: true) { folder in
                try LevelDBOfflineStore(directory: folder, durability: .flushed)
            })
    }

    @Test func reportsEveryCapability() throws {
        let folder = try TemporaryFolder()
        let store = try LevelDBOfflineStore(directory: folder.child("db"))
        #expect(store.capabilities == [.atomicBatch, .persistent, .orderedScan, .compaction, .byteValues])
        #expect(store.isPersistent)
        #expect(store.durability == .synced)
    }

    @Test func secondOpenOfOnePathSharesTheHandle() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("db")
        var first: LevelDBOfflineStore? = try LevelDBOfflineStore(directory: directory, durability: .flushed)
        try FileManager.default.createSymbolicLink(at: folder.child("link"), withDestinationURL: directory)
        // Another spelling of the same folder (a symbolic link, then "/.") still finds the open handle.
        let second = try LevelDBOfflineStore(directory: folder.child("link").appendingPathComponent("."))
        #expect(first?.handle === second.handle)
        #expect(second.durability == .synced)

        try await first?.set("from", "first")
        #expect(try await second.get("from") == "first")
        first = nil  // the second store keeps the database open
        try await second.set("after", "close of the first")
        #expect(try await second.keys("") == ["after", "from"])
    }

    @Test func compactGivesTheSpaceOfDeletedEntriesBack() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("db")
        let store = try LevelDBOfflineStore(directory: directory, durability: .flushed)
        let keys = (0..<2_000).map { "sov:cache:\(1_000_000 + $0)" }
        for chunk in stride(from: 0, to: keys.count, by: 250) {
            // Random letters do not compress away under Snappy, so the files really hold ~8 MB.
            try await store.write(keys[chunk..<chunk + 250].map { .set(key: $0, value: Self.randomText(bytes: 4_096)) })
        }
        let filled = try Self.sizeBytes(of: directory)
        try await store.write(keys.map { .delete(key: $0) })
        let deleted = try Self.sizeBytes(of: directory)
        try await store.compact()
        let compacted = try Self.sizeBytes(of: directory)

        #expect(filled > 4_000_000, "the filled store holds the values")
        #expect(deleted >= filled, "deletes alone give nothing back")
        #expect(compacted < filled / 20, "compact() shrank \(filled) bytes to \(compacted)")
        #expect(try await store.keys("sov:").isEmpty)
    }

    @Test(.enabled(if: LockingProcess.python != nil, "needs python3 to hold the LOCK file from another process"))
    func folderLockedByAnotherProcessThrowsLocked() throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("db")
        _ = try LevelDBOfflineStore(directory: directory)  // creates the database, with its LOCK file
        let lockFile = directory.appendingPathComponent("LOCK")
        do {
            let other = try LockingProcess(locking: lockFile)
            defer { other.release() }
            let error = try #require(throws: OfflineStoreError.self) { try LevelDBOfflineStore(directory: directory) }
            #expect(error.code == .locked)
            #expect(error.engine == "leveldb")
            #expect(error.message.contains("Another process holds"))
        }
        // Once the other process let go, the folder opens again.
        _ = try LevelDBOfflineStore(directory: directory)
    }

    @Test func damagedFilesThrowCorrupt() throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("db")
        _ = try LevelDBOfflineStore(directory: directory)
        try Data("MANIFEST-no-newline".utf8).write(to: directory.appendingPathComponent("CURRENT"))
        let error = try #require(throws: OfflineStoreError.self) { try LevelDBOfflineStore(directory: directory) }
        #expect(error.code == .corrupt)
        #expect(error.engine == "leveldb")
        #expect(error.message.contains("Corruption"))
        #expect(error.message.contains("restore the folder"))
    }

    @Test func aValueThatIsNotUTF8ReadsAsBytesAndThrowsNotUTF8AsAString() async throws {
        let folder = try TemporaryFolder()
        let store = try LevelDBOfflineStore(directory: folder.child("db"))
        let key: [UInt8] = Array("bad".utf8)
        let value: [UInt8] = [0x61, 0xFF, 0xFE]
        try key.withUnsafeBufferPointer { key in
            try value.withUnsafeBufferPointer { value in try store.handle.put(key, value, sync: false) }
        }
        let getError = await #expect(throws: OfflineStoreError.self) { try await store.get("bad") }
        #expect(getError?.code == .notUTF8)
        #expect(getError?.engine == "leveldb")
        #expect(getError?.key == "bad")
        let scanError = await #expect(throws: OfflineStoreError.self) {
            try await store.entries("b", after: nil, limit: 10)
        }
        #expect(scanError?.code == .notUTF8)
        #expect(try await store.data("bad") == Data(value))
        #expect(
            try await store.dataEntries("b", after: nil, limit: 10) == [StoreDataEntry(key: "bad", data: Data(value))])
        #expect(try await store.keys("") == ["bad"], "the key itself is fine")
    }

    @Test func folderThatCannotBeWrittenThrowsPermissionDenied() throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("db")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Root ignores permission bits; an immutable folder refuses root too.
        let immutable = Self.chattr("+i", directory.path)
        defer { if immutable { _ = Self.chattr("-i", directory.path) } }
        if !immutable {
            guard getuid() != 0 else { return }  // root without chattr: nothing refuses a write
            chmod(directory.path, 0o500)
        }
        let error = try #require(throws: OfflineStoreError.self) { try LevelDBOfflineStore(directory: directory) }
        #expect(error.code == .permissionDenied)
        #expect(error.engine == "leveldb")
    }

    @Test func scansLongerThanTheInlineBudgetListEverythingInOrder() async throws {
        let folder = try TemporaryFolder()
        let store = try LevelDBOfflineStore(directory: folder.child("db"), durability: .flushed)
        let count = LevelDBOfflineStore.inlineScanMaxEntries * 3 + 7
        let keys = (0..<count).map { "p:\(String($0, radix: 5))" }
        try await store.write(keys.shuffled().map { .set(key: $0, value: "v" + $0) } + [.set(key: "q", value: "")])
        let sorted = keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(try await store.keys("p:") == sorted)

        let after = sorted[10]
        let page = try await store.entries("p:", after: after, limit: count)
        #expect(page.map(\.key) == Array(sorted[11...]))
        #expect(page.allSatisfy { $0.value == "v" + $0.key })

        let large = String(repeating: "x", count: LevelDBOfflineStore.inlineScanMaxBytes)
        try await store.write([
            .set(key: "r:1", value: large), .set(key: "r:2", value: large), .set(key: "r:3", value: ""),
        ])
        #expect(try await store.entries("r:", after: nil, limit: 10).map(\.value) == [large, large, ""])
    }

    @Test(arguments: [
        ("IO error: lock /d/LOCK: Resource temporarily unavailable", OfflineStoreError.Code.locked),
        ("IO error: lock /d/LOCK: already held by process", .locked),
        ("Corruption: CURRENT file does not end with newline", .corrupt),
        ("IO error: /d/000005.log: No space left on device", .full),
        ("IO error: /d/LOCK: Permission denied", .permissionDenied),
        ("IO error: /d/LOCK: Read-only file system", .permissionDenied),
        ("IO error: /d/000005.ldb: Input/output error", .io),
        ("Invalid argument: leveldb.BytewiseComparator does not match existing comparator", .unsupported),
    ])
    func mapsLevelDBStatusToErrorCodes(_ status: String, _ code: OfflineStoreError.Code) {
        let error = OfflineStoreError.leveldb(status, operation: "Opening", path: "/d")
        #expect(error.code == code)
        #expect(error.engine == "leveldb")
        #expect(error.message.contains(status))
    }

    // MARK: - Helpers

    /// `bytes` random letters: 6 bits of entropy a byte, which Snappy cannot compress.
    private static func randomText(bytes: Int) -> String {
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var generator = SystemRandomNumberGenerator()
        return String(unsafeUninitializedCapacity: bytes) { buffer in
            var bits: UInt64 = 0
            for index in 0..<bytes {
                if index % 10 == 0 { bits = generator.next() }
                buffer[index] = letters[Int(bits & 63)]
                bits >>= 6
            }
            return bytes
        }
    }

    /// The bytes of every file in `directory`.
    private static func sizeBytes(of directory: URL) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).reduce(0) { total, name in
            let path = directory.appendingPathComponent(name).path
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            return total + ((attributes[.size] as? Int) ?? 0)
        }
    }

    private static func chattr(_ flag: String, _ path: String) -> Bool {
        (try? ChildProcess.run("/usr/bin/chattr", [flag, path])) != nil
    }
}

/// Another process that holds a POSIX record lock (`fcntl(F_SETLK)`, what LevelDB takes) on a
/// file until ``release()``.
private final class LockingProcess {
    static let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    private let process: ChildProcess

    /// Starts the process and returns once it holds the lock.
    init(locking file: URL) throws {
        process = try ChildProcess(
            Self.python ?? "/usr/bin/python3",
            [
                "-c",
                "import fcntl, sys, time; f = open(sys.argv[1], 'r+'); fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB); "
                    + "print('locked', flush=True); import signal; signal.pause()",
                file.path,
            ], captureOutput: true)
        // Blocks until the child printed (it holds the lock then) or exited (it failed to lock).
        let line = process.output?.readData(ofLength: 7) ?? Data()
        guard String(decoding: line, as: UTF8.self) == "locked\n" else {
            release()
            throw CocoaError(.fileLocking)
        }
    }

    /// Ends the process, which drops its lock.
    func release() {
        process.send(SIGKILL)
        process.waitBlocking()
    }
}
