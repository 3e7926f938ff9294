import Foundation
import Sovaria
import SovariaLevelDB
import SovariaTestKit
import SovariaTestServers
import Testing

/// LevelDB under a full disk and damaged files: no acknowledged write is dropped, no damage is
/// opened or read as good data.
@Suite struct LevelDBFaultTests {
    /// Fills a small disk, frees space, keeps writing on the same store: the store refuses the
    /// writes (LevelDB would put them behind a torn log record and drop them at the next open);
    /// every write it acknowledged is there after a reopen, and every delete stays done.
    @Test(arguments: [Durability.synced, .flushed], [3_000, 4_096, 5_000])
    func writesAfterAFullDiskSurviveReopen(_ durability: Durability, valueBytes: Int) async throws {
        let disk = try SmallDisk(sizeBytes: 2 << 20)
        let directory = disk.child("db")
        var model: [String: String] = [:]
        do {
            let store = try LevelDBOfflineStore(directory: directory, durability: durability)
            let full: OfflineStoreError?
            (model, full) = await fillUntilFull(store, valueBytes: valueBytes)
            #expect(full?.code == .full)
            try disk.resize(toBytes: 16 << 20)
            for index in 0..<5 {
                let key = "sov:after:\(index)"
                let value = letters(valueBytes, seed: -index)
                let error = await #expect(throws: OfflineStoreError.self) { try await store.set(key, value) }
                #expect(error?.code == .reopenRequired)
                #expect(try await store.get(key) == nil)
            }
            for key in model.keys.sorted().prefix(5) {
                let error = await #expect(throws: OfflineStoreError.self) { try await store.delete(key) }
                #expect(error?.code == .reopenRequired)
                #expect(try await store.get(key) == model[key])
            }
        }
        let reopened = try LevelDBOfflineStore(directory: directory, durability: .synced)

        for (key, value) in model { #expect(try await reopened.get(key) == value, "\(key)") }
        #expect(try await reopened.keys("sov:").count == model.count)
        try await reopened.set("sov:after:reopen", "works")
        try await reopened.delete(try #require(model.keys.min()))
        #expect(try await reopened.get("sov:after:reopen") == "works")
    }

    /// A MANIFEST cut short must not open as an empty database (LevelDB would then delete the
    /// table files that hold the data).
    @Test func aTruncatedManifestFailsToOpenAndKeepsTheTables() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("db")
        try await fill(directory, count: 1_000)
        let manifest = try #require(try Damage.files(in: directory) { $0.starts(with: "MANIFEST-") }.first)
        let tables = try Damage.files(in: directory) { $0.hasSuffix(".ldb") || $0.hasSuffix(".sst") }
        #expect(!tables.isEmpty)
        try Damage.truncate(manifest, toFraction: 0.5)
        let error = try #require(throws: OfflineStoreError.self) { try LevelDBOfflineStore(directory: directory) }
        #expect(error.code == .corrupt)
        #expect(error.message.contains("MANIFEST"))
        #expect(try Damage.files(in: directory) { $0.hasSuffix(".ldb") || $0.hasSuffix(".sst") } == tables)

        // The way out the error names: LevelDB's repair rebuilds the MANIFEST from the tables.
        try LevelDBOfflineStore.repair(directory: directory)
        let repaired = try LevelDBOfflineStore(directory: directory)
        #expect(try await repaired.keys("sov:k:").count == 1_000)
    }

    /// A damaged log is reported at open, not dropped with the writes it held.
    @Test func aDamagedLogFailsToOpen() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("db")
        do {
            let store = try LevelDBOfflineStore(directory: directory, durability: .synced)
            for index in 0..<1_000 { try await store.set("sov:k:\(1_000 + index)", letters(1_024, seed: index)) }
        }
        let log = try #require(try Damage.files(in: directory) { $0.hasSuffix(".log") }.last)
        try Damage.flipLetter(log, at: try Damage.fileSize(log) / 2)
        let error = try #require(throws: OfflineStoreError.self) { try LevelDBOfflineStore(directory: directory) }
        #expect(error.code == .corrupt)
    }

    /// Bytes changed inside a table: every read returns the written value or throws `.corrupt`;
    /// none returns another value, none silently finds nothing.
    @Test func damagedTablesAreNeverReadAsGoodValues() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("db")
        let values = try await fill(directory, count: 1_000)
        let table = try #require(try Damage.files(in: directory) { $0.hasSuffix(".ldb") }.first)
        var generator = SplitMix(seed: 9)
        let size = try Damage.fileSize(table)
        for _ in 0..<30 { try Damage.flipLetter(table, at: Int(generator.next() % UInt64(size))) }
        let store: LevelDBOfflineStore
        do {
            store = try LevelDBOfflineStore(directory: directory)
        } catch let error as OfflineStoreError {
            #expect(error.code == .corrupt)
            return
        }
        var detected = 0
        for (key, value) in values {
            do {
                #expect(try await store.get(key) == value, "\(key)")
            } catch let error as OfflineStoreError {
                #expect(error.code == .corrupt, "\(error)")
                detected += 1
            }
        }
        #expect(detected > 0)
    }

    /// A table cut short is damage (`.corrupt`), not an I/O error to retry.
    @Test func aTruncatedTableIsCorrupt() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("db")
        let values = try await fill(directory, count: 1_000)
        let table = try #require(try Damage.files(in: directory) { $0.hasSuffix(".ldb") }.first)
        try Damage.truncate(table, toFraction: 0.5)
        var codes: Set<String> = []
        var messages: Set<String> = []
        do {
            let store = try LevelDBOfflineStore(directory: directory)
            for key in values.keys {
                do { _ = try await store.get(key) } catch let error as OfflineStoreError {
                    codes.insert("\(error.code)"); messages.insert(error.message)
                }
            }
        } catch let error as OfflineStoreError {
            codes.insert("\(error.code)")
        }
        #expect(codes == ["corrupt"], "\(messages)")
    }

    /// Writes `count` 1 KiB entries, compacts them into a table and closes the store.
    @discardableResult
    private func fill(_ directory: URL, count: Int) async throws -> [String: String] {
        let store = try LevelDBOfflineStore(directory: directory, durability: .flushed)
        var values: [String: String] = [:]
        for index in 0..<count { values["sov:k:\(1_000 + index)"] = letters(1_024, seed: index) }
        try await store.write(values.map { .set(key: $0.key, value: $0.value) })
        try await store.compact()
        return values
    }
}
