import Foundation
import Observation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaObjects

/// The `@Observable` model: a view that reads it is told when another object store writes.
@Suite(.sharedPostgresDatabase) struct ObjectCollectionTests {
    @MainActor @Test(.timeLimit(.minutes(10)), arguments: ObjectEngine.all)
    func theModelTellsAViewAfterAnInsertThroughAnotherObjectStore(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let writer = ObjectStore<Note>(store: store, collection: "notes")
        try await writer.insert(Note(id: "b"))
        let model = ObjectCollection(ObjectStore<Note>(store: store, collection: "notes"), limit: 10)
        let (changed, didChange) = AsyncStream<Void>.makeStream()
        func track() {
            withObservationTracking {
                _ = model.objects
                _ = model.revision
            } onChange: {
                didChange.yield()
            }
        }
        track()
        var iterator = changed.makeAsyncIterator()
        while model.revision == 0 {
            await iterator.next()
            track()
        }
        #expect(model.objects == [Note(id: "b")] && model.ids == ["b"])
        try await writer.insert(Note(id: "a", title: "from the writer"))
        while model.ids != ["a", "b"] {
            await iterator.next()
            track()
        }
        #expect(model.objects.first == Note(id: "a", title: "from the writer"))
        try await writer.remove("b")
        while model.ids != ["a"] {
            await iterator.next()
            track()
        }
        #expect(model.failures.isEmpty && model.readError == nil)
    }

    @MainActor @Test(arguments: ObjectEngine.all)
    func theModelShowsTheGoodObjectsAndReportsTheUndecodable(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let notes = ObjectStore<Note>(store: store, collection: "notes")
        try await notes.insert(contentsOf: [Note(id: "a"), Note(id: "c")])
        try await store.set("sov:objects:notes:b", "[]")
        let model = ObjectCollection(notes, limit: 2)
        await model.refresh()
        #expect(model.ids == ["a"], "the window is two entries: a and the undecodable b")
        #expect(model.failures.map(\.id) == ["b"] && model.failures.first?.code == .decodingFailed)
    }
}
