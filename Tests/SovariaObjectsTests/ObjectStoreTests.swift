import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaObjects

/// Writing and reading objects: keys, ids, batches and pages, on every engine.
@Suite(.sharedPostgresDatabase) struct ObjectStoreTests {
    @Test(arguments: ObjectEngine.all)
    func insertedObjectsReadBackByIDAndAfterAReopen(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let notes = ObjectStore<Note>(store: try await engine.open(folder.url), collection: "notes")
        let note = Note(id: "n1", title: "Milk é\u{0}", stars: 3)
        try await notes.insert(note)
        #expect(try await notes.object("n1") == note)
        #expect(try await notes.object("missing") == nil)
        let reopened = ObjectStore<Note>(store: try await engine.open(folder.url), collection: "notes")
        #expect(try await reopened.object("n1") == note)
    }

    @Test func identifiableObjectsWithUUIDIdsUseTheirUUIDString() async throws {
        struct Photo: Codable, Sendable, Identifiable, Equatable {
            var id: UUID
        }
        let store = MemoryOfflineStore()
        let photos = ObjectStore<Photo>(store: store, collection: "photos")
        let photo = Photo(id: UUID())
        try await photos.insert(photo)
        #expect(try await store.keys("sov:objects:photos:") == ["sov:objects:photos:" + photo.id.uuidString])
        #expect(try await photos.object(photo.id.uuidString) == photo)
    }

    @Test(arguments: ObjectEngine.all)
    func objectsAreTheCodersBytesUnderPrefixAndID(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let notes = ObjectStore<Note>(store: store, collection: "notes", coder: JSONObjectCoder(sortsKeys: true))
        let note = Note(id: "a/b c", stars: 7)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try await notes.insert(note)
        #expect(notes.keyPrefix == "sov:objects:notes:")
        #expect(try await store.keys("sov:objects:notes:") == ["sov:objects:notes:a/b c"])
        #expect(try await store.data("sov:objects:notes:a/b c") == (try encoder.encode(note)), "bytes, no base64")
    }

    @Test(arguments: ObjectEngine.all)
    func insertReplacesTheObjectWithTheSameID(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let notes = ObjectStore<Note>(store: try await engine.open(folder.url), collection: "notes")
        try await notes.insert(Note(id: "a", title: "first"))
        try await notes.insert(Note(id: "a", title: "second"))
        #expect(try await notes.objects() == [Note(id: "a", title: "second")])
    }

    @Test(arguments: ObjectEngine.all)
    func removeByIDOrObjectAndAMissingIDIsNotAnError(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let notes = ObjectStore<Note>(store: try await engine.open(folder.url), collection: "notes")
        try await notes.insert(contentsOf: [Note(id: "a"), Note(id: "b"), Note(id: "c")])
        try await notes.remove("a")
        try await notes.remove(Note(id: "b", title: "another title, same id"))
        try await notes.remove("never-there")
        #expect(try await notes.ids() == ["c"])
    }

    @Test(arguments: ObjectEngine.all)
    func insertAndRemoveContentsOfAreOneBatchEach(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let spy = FailingStore(try await engine.open(folder.url))
        let notes = ObjectStore<Note>(store: spy, collection: "notes")
        try await notes.insert(contentsOf: (0..<50).map { Note(id: "n\($0)") })
        #expect(spy.batches.count == 1 && spy.batches[0].count == 50)
        try await notes.remove(contentsOf: (0..<25).map { "n\($0)" })
        #expect(spy.batches.count == 2 && spy.batches[1].count == 25)
        #expect(try await notes.count() == 25)
    }

    @Test(arguments: ObjectEngine.all)
    func aBatchWithAnInvalidIDChangesNothing(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let notes = ObjectStore<Note>(store: store, collection: "notes")
        let longest = String(repeating: "x", count: notes.maxIDByteCount)
        #expect(notes.maxIDByteCount == 511 - "sov:objects:notes:".utf8.count)
        for invalid in ["", longest + "y", String(repeating: "é", count: notes.maxIDByteCount / 2 + 1)] {
            let error = await #expect(throws: ObjectStoreError.self) {
                try await notes.insert(contentsOf: [Note(id: "good"), Note(id: invalid), Note(id: "good2")])
            }
            #expect(error?.code == .invalidID && error?.id == invalid)
        }
        await #expect(throws: ObjectStoreError.self) { try await notes.remove(contentsOf: ["good", ""]) }
        #expect(try await store.keys("sov:").isEmpty, "nothing written")
        try await notes.insert(Note(id: longest))
        #expect(try await notes.ids() == [longest], "the longest id fits")
    }

    @Test(arguments: ObjectEngine.all)
    func removeAllRemovesThisCollectionOnlyAndKeepsItsVersion(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let notes = try await ObjectStore<Note>.open(store: store, collection: "notes", version: 1) { _, data in data }
        let others = ObjectStore<Note>(store: store, collection: "notes2")
        try await notes.insert(contentsOf: (0..<30).map { Note(id: "n\($0)") })
        try await others.insert(Note(id: "kept"))
        #expect(try await notes.removeAll() == 30)
        #expect(try await notes.count() == 0)
        #expect(try await others.ids() == ["kept"])
        #expect(try await notes.version() == 1)
    }

    @Test(arguments: ObjectEngine.all)
    func objectsAndPagesFollowTheIDsBytesAndTheCursor(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let notes = ObjectStore<Note>(store: try await engine.open(folder.url), collection: "notes")
        let ids = ["b", "a", "é", "Z", "e\u{301}", "a0"] + (10..<29).map { "n\($0)" }
        try await notes.insert(contentsOf: ids.map { Note(id: $0) })
        let byteOrder = ids.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        #expect(try await notes.objects().map(\.id) == byteOrder)
        #expect(try await notes.ids() == byteOrder)
        var pages: [[String]] = []
        var page = try await notes.page(limit: 10)
        pages.append(page.ids)
        while let next = page.next {
            page = try await notes.page(after: next, limit: 10)
            pages.append(page.ids)
        }
        #expect(pages.map(\.count) == [10, 10, 5])
        #expect(pages.flatMap { $0 } == byteOrder)
        #expect(try await notes.page(after: byteOrder[9], limit: 3).ids == Array(byteOrder[10..<13]))
    }

    @Test func idsComeFromIdentifiableAKeyPathOrAClosure() async throws {
        struct Titled: Codable, Sendable { var title: String }
        let store = MemoryOfflineStore()
        let identified = ObjectStore<Note>(store: store, collection: "a")
        let byKeyPath = ObjectStore<Titled>(store: store, collection: "b", idKeyPath: \.title)
        let byClosure = ObjectStore<Titled>(store: store, collection: "c") { "t-" + $0.title }
        try await identified.insert(Note(id: "7"))
        try await byKeyPath.insert(Titled(title: "x"))
        try await byClosure.insert(Titled(title: "x"))
        #expect(try await store.keys("sov:objects:") == ["sov:objects:a:7", "sov:objects:b:x", "sov:objects:c:t-x"])
    }
}
