import Foundation
import Sovaria
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import sovaria_crash_writer

/// Storage that cannot be written: a read-only mount (`mount -o remount,ro`) and an immutable
/// folder (`chattr +i`, which refuses root too).
///
/// Every engine answers with a typed ``OfflineStoreError/Code/permissionDenied`` whose message
/// says what to do; the file store instead opens read-only (``FileOfflineStore/readOnlyReason``,
/// its entries readable) or, for a folder it cannot create, falls back to memory with its
/// ``FileOfflineStore/fallbackReason``. Once the storage is writable again, the store opens with
/// everything it held and takes writes.
@Suite(.serialized) struct ReadOnlyStorageTests {
    /// How the storage is made read-only.
    enum Lock: String, Sendable, CaseIterable {
        case readOnlyMount, immutableFolder
    }

    /// A store written, made read-only, opened (and a new one beside it), made writable, opened again.
    @Test(arguments: TestEngine.onDisk, Lock.allCases)
    func readOnlyStorageIsATypedErrorAndComesBack(engine: String, lock: Lock) async throws {
        let disk = try SmallDisk(sizeBytes: 8 << 20)
        let parent = disk.child("parent")
        let folder = parent.appendingPathComponent("store")
        do {
            let store = try await CrashStores.open(engine, at: folder, durability: .synced)
            try await store.set("sov:k", "kept")
        }
        try makeReadOnly(lock, disk: disk, folder: parent, true)
        defer { try? makeReadOnly(lock, disk: disk, folder: parent, false) }

        if engine == "file" {
            let store = FileOfflineStore(directory: folder)
            let reason = try #require(store.readOnlyReason, "opened \(folder.path) as writable")
            #expect(store.isPersistent)
            #expect(reason.code == .permissionDenied, "\(reason)")
            #expect(reason.message.contains("make the folder writable"), "\(reason)")
            #expect(try await store.get("sov:k") == "kept")
            let refused = await #expect(throws: OfflineStoreError.self) { try await store.set("sov:k", "changed") }
            #expect(refused?.code == .permissionDenied, "\(String(describing: refused))")
            // A folder it cannot create: memory for this run, and the reason.
            let fallback = FileOfflineStore(directory: parent.appendingPathComponent("new"))
            #expect(!fallback.isPersistent)
            #expect(
                fallback.fallbackReason?.code == .permissionDenied, "\(String(describing: fallback.fallbackReason))")
        } else {
            for target in [folder, parent.appendingPathComponent("new")] {
                let what = "\(engine), \(lock), \(target.lastPathComponent)"
                do {
                    // LMDB writes its files in place: an immutable folder does not stop it.
                    let store = try await CrashStores.open(engine, at: target, durability: .synced)
                    try await store.set("sov:k", "changed")
                    #expect(try await store.get("sov:k") == "changed", "\(what): opened, wrote, and lost it")
                    #expect(lock == .immutableFolder && target == folder, "\(what): wrote on read-only storage")
                    try await store.set("sov:k", "kept")
                } catch let error as OfflineStoreError {
                    #expect(error.code == .permissionDenied, "\(what): \(error)")
                    #expect(
                        ["writable", "read-only", "permission"].contains { error.message.lowercased().contains($0) },
                        "\(what): the message says what to do: \(error)")
                }
            }
        }

        try makeReadOnly(lock, disk: disk, folder: parent, false)
        let store = try await CrashStores.open(engine, at: folder, durability: .synced)
        #expect(try await store.get("sov:k") == "kept")
        try await store.set("sov:k", "changed")
        #expect(try await store.get("sov:k") == "changed")
    }

    /// Makes the storage read-only (`readOnly`) or writable again.
    private func makeReadOnly(_ lock: Lock, disk: SmallDisk, folder: URL, _ readOnly: Bool) throws {
        switch lock {
        case .readOnlyMount: try disk.remount(readOnly: readOnly)
        case .immutableFolder:
            _ = try ChildProcess.run("/usr/bin/chattr", [readOnly ? "+i" : "-i", folder.path])
            _ = try ChildProcess.run(
                "/usr/bin/chattr", [readOnly ? "+i" : "-i", folder.appendingPathComponent("store").path])
        }
    }
}
