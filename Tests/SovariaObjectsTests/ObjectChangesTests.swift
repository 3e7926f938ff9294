import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaObjects

/// ``ObjectStore/changes()``: what an event says, how bursts merge, who sees them, and how a
/// stream's end removes its registration.
@Suite(.sharedPostgresDatabase) struct ObjectChangesTests {
    @Test(arguments: ObjectEngine.all)
    func eventsTellInsertedUpdatedAndRemovedApart(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let notes = ObjectStore<Note>(store: try await engine.open(folder.url), collection: "notes")
        try await notes.insert(Note(id: "old"))
        var changes = notes.changes().makeAsyncIterator()
        try await notes.insert(contentsOf: [Note(id: "old", title: "new title"), Note(id: "new")])
        #expect(await changes.next() == ObjectChange(inserted: ["new"], updated: ["old"]))
        try await notes.remove("old")
        #expect(await changes.next() == ObjectChange(removed: ["old"]))
        try await notes.removeAll()
        #expect(await changes.next() == ObjectChange(removed: ["new"]))
    }

    @Test(arguments: ObjectEngine.all)
    func changesMadeWhileTheReaderIsAwayArriveAsOneEvent(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let notes = ObjectStore<Note>(store: try await engine.open(folder.url), collection: "notes")
        try await notes.insert(contentsOf: [Note(id: "kept"), Note(id: "gone")])
        var changes = notes.changes().makeAsyncIterator()
        try await notes.insert(Note(id: "a"))
        try await notes.insert(Note(id: "a", title: "again"))
        try await notes.insert(Note(id: "b"))
        try await notes.remove("b")
        try await notes.remove("gone")
        try await notes.insert(Note(id: "gone"))
        try await notes.insert(Note(id: "kept", title: "changed"))
        #expect(await changes.next() == ObjectChange(inserted: ["a"], updated: ["gone", "kept"], removed: ["b"]))
        try await notes.insert(Note(id: "c"))
        #expect(await changes.next() == ObjectChange(inserted: ["c"]), "the merged event was the only one")
    }

    @Test func idsThatStringCallsEqualAreTwoIDsAndCollectionsThatItCallsEqualAreTwo() async throws {
        let store = MemoryOfflineStore()
        let notes = ObjectStore<Note>(store: store, collection: "notes")
        try await notes.insert(Note(id: "\u{E9}"))
        var changes = notes.changes().makeAsyncIterator()
        try await notes.insert(contentsOf: [Note(id: "e\u{301}"), Note(id: "\u{E9}", title: "again")])
        let change = await changes.next()
        #expect(change?.inserted == [ObjectID("e\u{301}")], "the decomposed id is new")
        #expect(change?.updated == [ObjectID("\u{E9}")], "the precomposed one was there")
        #expect(try await notes.ids().count == 2)

        let precomposed = ObjectStore<Note>(store: store, collection: "caf\u{E9}")
        let decomposed = ObjectStore<Note>(store: store, collection: "cafe\u{301}")
        var decomposedChanges = decomposed.changes().makeAsyncIterator()
        #expect(precomposed.observerCount == 0, "another collection's observer")
        try await precomposed.insert(Note(id: "x"))
        try await decomposed.insert(Note(id: "y"))
        #expect(await decomposedChanges.next() == ObjectChange(inserted: ["y"]), "x went to the other collection")
    }

    @Test func aDamagedObjectIsReplacedWhileTheCollectionIsObserved() async throws {
        let inner = MemoryOfflineStore()
        let notes = ObjectStore<Note>(store: ChecksummedOfflineStore(wrapping: inner), collection: "notes")
        try await notes.insert(Note(id: "a"))
        try await inner.set("sov:objects:notes:a", data: Data([0xFF, 0x00]))  // damaged: no checksum form
        var changes = notes.changes().makeAsyncIterator()
        try await notes.insert(Note(id: "a", title: "repaired"))
        #expect(await changes.next() == ObjectChange(updated: ["a"]))
        #expect(try await notes.object("a")?.title == "repaired")
    }

    @Test func mergeKeepsEachIDsLastStateAsTheReaderSawIt() {
        var change = ObjectChange(inserted: ["i"], updated: ["u"], removed: ["r"])
        change.merge(ObjectChange(inserted: ["r"], updated: ["i", "x"], removed: ["u"]))
        #expect(change == ObjectChange(inserted: ["i"], updated: ["r", "x"], removed: ["u"]))
        change.merge(ObjectChange(removed: ["i"]))
        #expect(change == ObjectChange(updated: ["r", "x"], removed: ["u", "i"]))
    }

    @Test(arguments: ObjectEngine.all)
    func objectStoresOverOneStoreSeeEachOthersWrites(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let writer = ObjectStore<Note>(store: store, collection: "notes")
        let reader = ObjectStore<Note>(store: store, collection: "notes")
        let otherCollection = ObjectStore<Note>(store: store, collection: "drafts")
        var changes = reader.changes().makeAsyncIterator()
        #expect(writer.observerCount == 1, "one registry per store instance and collection")
        try await otherCollection.insert(Note(id: "draft"))
        try await writer.insert(Note(id: "a"))
        #expect(await changes.next() == ObjectChange(inserted: ["a"]), "the draft is another collection's")
        #expect(try await reader.object("a") == Note(id: "a"))
    }

    @Test func cancellingTheReadingTaskEndsTheStreamAndItsRegistration() async throws {
        let notes = ObjectStore<Note>(store: MemoryOfflineStore(), collection: "notes")
        let changes = notes.changes()
        #expect(notes.observerCount == 1)
        let (received, didReceive) = AsyncStream<ObjectChange>.makeStream()
        let reader = Task {
            for await change in changes { didReceive.yield(change) }
            return "ended"
        }
        try await notes.insert(Note(id: "a"))
        var receivedIterator = received.makeAsyncIterator()
        #expect(await receivedIterator.next() == ObjectChange(inserted: ["a"]))
        reader.cancel()
        #expect(await reader.value == "ended")
        #expect(notes.observerCount == 0)
        try await notes.insert(Note(id: "b"))
        #expect(notes.observerCount == 0, "a write after the end finds no one")
    }

    @Test func releasingAStreamRemovesItsRegistration() async throws {
        let notes = ObjectStore<Note>(store: MemoryOfflineStore(), collection: "notes")
        do {
            let first = notes.changes()
            let second = notes.changes()
            #expect(notes.observerCount == 2)
            _ = (first, second)
        }
        #expect(notes.observerCount == 0)
    }
}
