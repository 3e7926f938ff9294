import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaSQLite
@_spi(Benchmarks) import SovariaTestKit
import Testing

/// The recorder as a store: it conforms around any store, passes the wrapped store's traits through,
/// hashes keys stably, and never fails a call when its trace cannot be written. What it writes is
/// read back by the Benchmarks package's trace reader (`RecordedTraceTests` there).
@Suite struct RecordingOfflineStoreTests {
    // MARK: - The conformance suite, through the recorder

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundMemory(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("recording(memory)", persistent: false) { folder in
                RecordingOfflineStore(
                    wrapping: MemoryOfflineStore(), traceFile: folder.appendingPathComponent("calls.sovtrace"))
            })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundSQLite(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("recording(sqlite)", persistent: true) { folder in
                RecordingOfflineStore(
                    wrapping: try SQLiteOfflineStore(fileURL: folder.appendingPathComponent("store.sqlite")),
                    traceFile: folder.appendingPathComponent("calls.sovtrace"))
            })
    }

    @Test func passesCapabilitiesAndPersistenceThrough() throws {
        let folder = try TemporaryFolder()
        let inner = try SQLiteOfflineStore(fileURL: folder.child("store.sqlite"), durability: .flushed)
        let store = RecordingOfflineStore(wrapping: inner, traceFile: folder.child("calls.sovtrace"))
        #expect(store.capabilities == inner.capabilities)
        #expect(store.isPersistent)
        let memory = RecordingOfflineStore(wrapping: MemoryOfflineStore(), traceFile: folder.child("m.sovtrace"))
        #expect(memory.capabilities == [.atomicBatch, .byteValues] && !memory.isPersistent)
    }

    // MARK: - Hashed keys

    @Test func hashedKeysKeepTheirNamespaceAndAreStable() {
        // 1001e27928b3de65: FNV-1a 64 of "feed".
        #expect(RecordingOfflineStore.hashedKey("sov:cache:feed") == "sov:cache:1001e27928b3de65")
        #expect(RecordingOfflineStore.hashedKey("sov:cache:feed:extra").hasPrefix("sov:cache:"))
        #expect(RecordingOfflineStore.hashedKey("sov:cache:feed:extra").utf8.count == "sov:cache:".utf8.count + 16)
        #expect(RecordingOfflineStore.hashedKey("sov:cache:") == "sov:cache:")
        #expect(RecordingOfflineStore.hashedKey("app:feed") == "app:1001e27928b3de65")
        #expect(RecordingOfflineStore.hashedKey("feed") == "1001e27928b3de65")
        #expect(RecordingOfflineStore.hashedKey("sov:cache:a") != RecordingOfflineStore.hashedKey("sov:cache:b"))
    }

    // MARK: - Recording never fails a call

    @Test func aTraceThatCannotBeCreatedStopsRecordingAndCallsGoOn() async throws {
        let folder = try TemporaryFolder()
        try Data("not a folder".utf8).write(to: folder.child("file"))
        let path = folder.child("file").appendingPathComponent("calls.sovtrace")
        let store = RecordingOfflineStore(wrapping: MemoryOfflineStore(), traceFile: path)
        #expect(store.recordingState == .stopped(.creatingFailed(path: path.path, errno: ENOTDIR)))
        try await RecordedSession.run(on: store)
        #expect(try await store.get("sov:queue:0002") == "")
    }

    @Test func aFullDiskStopsRecordingAndCallsGoOn() async throws {
        // /dev/full fails every write with ENOSPC, as a full disk does.
        let folder = try TemporaryFolder()
        let path = folder.child("full.sovtrace")
        try FileManager.default.createSymbolicLink(atPath: path.path, withDestinationPath: "/dev/full")
        let store = RecordingOfflineStore(wrapping: MemoryOfflineStore(), traceFile: path)
        #expect(store.recordingState == .stopped(.writingFailed(path: path.path, errno: ENOSPC)))
        try await RecordedSession.run(on: store)
        #expect(try await store.keys("sov:queue:") == ["sov:queue:0002"])
    }

    @Test func aFolderThatStopsTakingWritesStopsRecordingAtTheNextRotation() async throws {
        // Rotation renames files in the folder: an immutable folder refuses (root included).
        let folder = try TemporaryFolder()
        var configuration = RecordingOfflineStore.Configuration()
        configuration.maxFileBytes = 256
        let store = RecordingOfflineStore(
            wrapping: MemoryOfflineStore(), traceFile: folder.child("calls.sovtrace"), configuration: configuration)
        let chattr = Process()
        chattr.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
        chattr.arguments = ["+i", folder.url.path]
        try chattr.run()
        chattr.waitUntilExit()
        defer {
            let undo = Process()
            undo.executableURL = URL(fileURLWithPath: "/usr/bin/chattr")
            undo.arguments = ["-i", folder.url.path]
            try? undo.run()
            undo.waitUntilExit()
        }
        try #require(chattr.terminationStatus == 0, "chattr +i is needed (root, ext4 or tmpfs)")
        for call in 0..<100 { try await store.set("sov:cache:\(call)", "value") }
        guard case .stopped(.rotatingFailed(_, let code)) = store.recordingState else {
            Issue.record("recording did not stop: \(store.recordingState)")
            return
        }
        #expect(code == EPERM)
        #expect(try await store.keys("sov:cache:").count == 100)
    }
}
