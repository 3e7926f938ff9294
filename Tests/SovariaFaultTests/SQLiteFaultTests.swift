import Foundation
import Sovaria
import SovariaSQLite
import SovariaTestKit
import SovariaTestServers
import Testing

/// SQLite under a full disk and a read-only mount.
@Suite struct SQLiteFaultTests {
    /// A store on a full disk opens, reads everything, and deletes to free space (with the space of
    /// its reserve file: not one byte is left on the disk).
    @Test func opensReadsAndDeletesOnAFullDisk() async throws {
        let disk = try SmallDisk(sizeBytes: 2 << 20)
        let file = disk.child("store.sqlite")
        var model: [String: String] = [:]
        do {
            let store = try SQLiteOfflineStore(fileURL: file)
            let full: OfflineStoreError?
            (model, full) = await fillUntilFull(store)
            #expect(full?.code == .full, "\(String(describing: full))")
        }
        #expect(model.count > 20)
        let reopened = try SQLiteOfflineStore(fileURL: file)
        for (key, value) in model { #expect(try await reopened.get(key) == value, "\(key)") }
        let victims = model.keys.sorted().prefix(10)
        try await reopened.write(victims.map { .delete(key: $0) })
        for key in victims { #expect(try await reopened.get(key) == nil) }
    }

    /// A store on a read-only mount: a typed error that names the cause, not "check the folder exists".
    @Test func aReadOnlyMountIsReportedAsSuch() async throws {
        let disk = try SmallDisk(sizeBytes: 4 << 20)
        let file = disk.child("store.sqlite")
        do {
            let store = try SQLiteOfflineStore(fileURL: file)
            try await store.set("sov:k", "v")
        }
        try disk.remount(readOnly: true)
        defer { try? disk.remount(readOnly: false) }
        let error = try #require(throws: OfflineStoreError.self) { try SQLiteOfflineStore(fileURL: file) }
        #expect(error.code == .permissionDenied, "\(error)")
        #expect(error.message.contains("read-only"), "\(error)")
    }
}
