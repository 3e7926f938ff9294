import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaObjects

/// Schema versions: a migration runs once, in one batch with its version when the collection is
/// small, and resumes after a crash without transforming any object twice.
@Suite(.sharedPostgresDatabase) struct ObjectMigrationTests {
    /// Version 1 of a note: `name` where version 2 says `title`.
    struct NoteV1: Codable, Sendable {
        var id: String
        var name: String
    }

    /// Version 1 → 2: renames `name` to `title` and records which ids it was called for.
    final class Renaming: Sendable {
        let calls = Mutex<[String]>([])

        func transform(_ from: Int, _ data: Data) throws -> Data? {
            let old = try JSONDecoder().decode(NoteV1.self, from: data)
            calls.withLock { $0.append(old.id) }
            if old.name == "drop me" { return nil }
            return try JSONEncoder().encode(Note(id: old.id, title: old.name))
        }
    }

    static func writeVersion1(_ store: any OfflineStore, count: Int) async throws {
        let v1 = ObjectStore<NoteV1>(store: store, collection: "notes") { $0.id }
        try await v1.insert(contentsOf: (0..<count).map { NoteV1(id: String(format: "n%03d", $0), name: "name \($0)") })
        try await v1.migrate(toVersion: 1) { _, data in data }
    }

    @Test(arguments: ObjectEngine.all)
    func aMigrationRunsOnceAndStoresTheVersionWithTheObjectsInOneBatch(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        try await Self.writeVersion1(try await engine.open(folder.url), count: 5)
        try await ObjectStore<NoteV1>(store: try await engine.open(folder.url), collection: "notes") { $0.id }
            .insert(NoteV1(id: "z", name: "drop me"))
        let spy = FailingStore(try await engine.open(folder.url))
        let renaming = Renaming()
        let notes = try await ObjectStore<Note>.open(
            store: spy, collection: "notes", version: 2, migrate: renaming.transform)
        #expect(renaming.calls.withLock { $0 } == ["n000", "n001", "n002", "n003", "n004", "z"])
        #expect(spy.batches.count == 1, "objects and version in one batch")
        #expect(spy.batches.first?.contains(.set(key: "sov:meta:objects:notes", value: "2")) == true)
        #expect(try await notes.version() == 2)
        #expect(try await notes.objects().map(\.title) == (0..<5).map { "name \($0)" }, "z was removed")
        let again = Renaming()
        _ = try await ObjectStore<Note>.open(
            store: try await engine.open(folder.url), collection: "notes", version: 2, migrate: again.transform)
        #expect(again.calls.withLock { $0 }.isEmpty, "at version 2 already")
    }

    @Test func twoOpensAtOnceMigrateTheObjectsOnce() async throws {
        let store = MemoryOfflineStore()
        try await Self.writeVersion1(store, count: 50)
        let renaming = Renaming()
        async let first = ObjectStore<Note>.open(
            store: store, collection: "notes", version: 2, migrate: renaming.transform)
        async let second = ObjectStore<Note>.open(
            store: store, collection: "notes", version: 2, migrate: renaming.transform)
        _ = try await (first, second)
        #expect(renaming.calls.withLock { $0.count } == 50, "each object transformed once")
        #expect(try await ObjectStore<Note>(store: store, collection: "notes").objects().count == 50)
    }

    @Test func aVersionKeyThatIsNotANumberIsCorruptVersion() async throws {
        let store = MemoryOfflineStore()
        let notes = ObjectStore<Note>(store: store, collection: "notes")
        for stored in [Data("two".utf8), Data([0xFF, 0x32])] {
            try await store.set(notes.versionKey, data: stored)
            let error = await #expect(throws: ObjectStoreError.self) { try await notes.version() }
            #expect(error?.code == .corruptVersion)
        }
    }

    @Test(arguments: ObjectEngine.all)
    func aCrashMidwayResumesAndTransformsEachObjectOnce(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        try await Self.writeVersion1(try await engine.open(folder.url), count: 25)
        let renaming = Renaming()
        let crashing = ObjectStore<Note>(
            store: FailingStore(try await engine.open(folder.url), allowedBatches: 1), collection: "notes")
        await #expect(throws: OfflineStoreError.self) {
            try await crashing.migrate(toVersion: 2, pageSize: 10, renaming.transform)
        }
        #expect(renaming.calls.withLock { $0.count } == 20, "the first page written, the second lost")
        let store = try await engine.open(folder.url)
        #expect(try await store.get("sov:meta:objects:notes") == "1", "the version is written last")
        #expect(try await store.get("sov:meta:objects:notes:migration") == "1:2:n009")
        let resumed = ObjectStore<Note>(store: store, collection: "notes")
        renaming.calls.withLock { $0.removeAll { $0 >= "n010" } }  // the lost page's calls
        #expect(try await resumed.migrate(toVersion: 2, pageSize: 10, renaming.transform) == 15)
        let calls = renaming.calls.withLock { $0 }
        #expect(calls == (0..<25).map { String(format: "n%03d", $0) }, "every object once, in order")
        #expect(try await resumed.version() == 2)
        #expect(try await store.get("sov:meta:objects:notes:migration") == nil)
        #expect(try await resumed.objects().count == 25)
    }

    @Test(arguments: ObjectEngine.all)
    func aNewerStoredVersionIsRefusedAndNothingChanges(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        try await Self.writeVersion1(store, count: 2)
        let error = await #expect(throws: ObjectStoreError.self) {
            try await ObjectStore<Note>.open(store: store, collection: "notes", version: 0) { _, _ in nil }
        }
        #expect(error?.code == .newerVersion)
        #expect(try await store.keys("sov:objects:notes:").count == 2)
    }

    @Test func aMigrationToAnotherVersionWaitsForTheInterruptedOne() async throws {
        let store = MemoryOfflineStore()
        try await Self.writeVersion1(store, count: 25)
        let crashing = ObjectStore<Note>(store: FailingStore(store, allowedBatches: 1), collection: "notes")
        await #expect(throws: OfflineStoreError.self) {
            try await crashing.migrate(toVersion: 2, pageSize: 10, Renaming().transform)
        }
        let error = await #expect(throws: ObjectStoreError.self) {
            try await ObjectStore<Note>(store: store, collection: "notes").migrate(toVersion: 3) { _, data in data }
        }
        #expect(error?.code == .migrationInProgress)
    }
}
