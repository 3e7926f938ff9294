import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

/// The file store under a full disk.
@Suite struct FileFaultTests {
    /// A batch that finds the disk full leaves nothing behind; the next write fails for itself,
    /// not for the batch; a reopen while the disk is still full opens the files (never an empty
    /// memory store), and deletes free space.
    @Test func aFullDiskLosesNothingAndLeavesNoHalfBatch() async throws {
        let disk = try SmallDisk(sizeBytes: 2 << 20)
        let directory = disk.child("store")
        var model: [String: String] = [:]
        do {
            let store = FileOfflineStore(directory: directory, durability: .synced)
            #expect(store.isPersistent)
            let full: OfflineStoreError?
            (model, full) = await fillUntilFull(store, valueBytes: 4_000)
            #expect(full?.code == .full, "\(String(describing: full))")
            let batch: [StoreWrite] = (0..<8).map { .set(key: "sov:batch:\($0)", value: letters(4_000, seed: -$0)) }
            let failed = await #expect(throws: OfflineStoreError.self) { try await store.write(batch) }
            #expect(failed?.code == .full)
            for write in batch { #expect(try await store.get(write.key) == nil, "\(write.key) of a failed batch") }
            let single = await #expect(throws: OfflineStoreError.self) {
                try await store.set("sov:single", letters(4_000, seed: 7))
            }
            #expect(single?.code == .full)
            #expect(single?.key == "sov:single")
        }
        let reopened = FileOfflineStore(directory: directory, durability: .synced)
        #expect(reopened.isPersistent)
        #expect(reopened.fallbackReason == nil)
        #expect(reopened.readOnlyReason == nil)
        for (key, value) in model { #expect(try await reopened.get(key) == value, "\(key)") }
        #expect(try await reopened.keys("sov:").count == model.count)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix(".tmp-") || $0 == ".journal" }
        #expect(leftovers.isEmpty)
        let victims = model.keys.sorted().prefix(4)
        try await reopened.write(victims.map { .delete(key: $0) })
        try await reopened.set("sov:after", "space freed")
        #expect(try await reopened.get("sov:after") == "space freed")
    }
}
