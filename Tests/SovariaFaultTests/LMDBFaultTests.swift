import Foundation
import Sovaria
import SovariaLMDB
import SovariaTestKit
import SovariaTestServers
import Testing

/// LMDB under a full disk and damaged files.
@Suite struct LMDBFaultTests {
    /// A `data.mdb` cut short is reported at open; reading it would kill the process with SIGBUS.
    @Test func aTruncatedDataFileFailsToOpen() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("db")
        do {
            let store = try LMDBOfflineStore(directory: directory)
            try await store.write((0..<1_000).map { .set(key: "sov:k:\(1_000 + $0)", value: letters(1_024, seed: $0)) })
        }
        try Damage.truncate(directory.appendingPathComponent("data.mdb").path, toFraction: 0.5)
        let error = try #require(throws: OfflineStoreError.self) { try LMDBOfflineStore(directory: directory) }
        #expect(error.code == .corrupt)
        #expect(error.message.contains("data.mdb"))
    }

    /// A full disk is `.full`, every time, with advice; acknowledged writes survive; after space is
    /// freed the store writes again.
    @Test func aFullDiskIsFullAndLosesNothing() async throws {
        let disk = try SmallDisk(sizeBytes: 2 << 20)
        let directory = disk.child("db")
        var model: [String: String] = [:]
        do {
            let store = try LMDBOfflineStore(directory: directory)
            let full: OfflineStoreError?
            (model, full) = await fillUntilFull(store)
            #expect(full?.code == .full, "\(String(describing: full))")
            #expect(full?.message.contains("free") == true)
            // Still full: another write says so again, rather than a generic I/O error.
            let again = await #expect(throws: OfflineStoreError.self) {
                try await store.set("sov:fill:again", letters(4_096, seed: -1))
            }
            #expect(again?.code == .full, "\(String(describing: again))")
            try disk.resize(toBytes: 16 << 20)
            let key = try #require(model.keys.min())
            try await store.delete(key)
            model[key] = nil
            try await store.set("sov:after", "space freed")
            model["sov:after"] = "space freed"
        }
        let reopened = try LMDBOfflineStore(directory: directory)
        for (key, value) in model { #expect(try await reopened.get(key) == value, "\(key)") }
        #expect(try await reopened.keys("sov:").count == model.count)
    }
}
