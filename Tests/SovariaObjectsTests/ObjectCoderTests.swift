import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaObjects

/// Both coders on every engine, and what a read does with bytes it cannot decode.
@Suite(.sharedPostgresDatabase) struct ObjectCoderTests {
    /// A store built on the four seed methods: text only.
    final class TextOnlyStore: OfflineStore {
        let inner = MemoryOfflineStore()
        func get(_ key: String) async throws -> String? { try await inner.get(key) }
        func set(_ key: String, _ value: String) async throws { try await inner.set(key, value) }
        func delete(_ key: String) async throws { try await inner.delete(key) }
        func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }
    }

    @Test func binaryObjectsOnAStoreOfTextAreRefusedAndNothingIsWritten() async throws {
        let store = TextOnlyStore()
        let notes = ObjectStore<Note>(store: store, collection: "notes", coder: .propertyList)
        let error = await #expect(throws: OfflineStoreError.self) {
            try await notes.insert(contentsOf: [Note(id: "a"), Note(id: "b")])
        }
        #expect(error?.code == .invalidValue)
        #expect(try await store.keys("") == [])
        let json = ObjectStore<Note>(store: store, collection: "notes", coder: .json)
        try await json.insert(Note(id: "a"))
        #expect(try await json.object("a") == Note(id: "a"), "JSON is UTF-8: a store of text keeps it")
    }

    @Test(arguments: ObjectEngine.all)
    func jsonObjectsAreUTF8TextAndReadBackExactly(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let notes = ObjectStore<Note>(store: store, collection: "notes", coder: .json)
        let note = Note(id: "a", title: "\u{0}é🙂", stars: -3, due: Date(timeIntervalSince1970: 1_234.25))
        try await notes.insert(note)
        #expect(try await notes.object("a") == note)
        #expect(try await store.get("sov:objects:notes:a")?.hasPrefix("{") == true, "text a string read can show")
    }

    @Test(arguments: ObjectEngine.all)
    func sortedKeysJSONWritesTheSameBytesForTheSameObject(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let notes = ObjectStore<Note>(store: store, collection: "notes", coder: JSONObjectCoder(sortsKeys: true))
        try await notes.insert(Note(id: "a", title: "t", stars: 1))
        let text = try #require(try await store.get("sov:objects:notes:a"))
        #expect(text.hasPrefix(#"{"due":"#) && text.hasSuffix(#""stars":1,"title":"t"}"#))
    }

    @Test(arguments: ObjectEngine.all)
    func propertyListObjectsAreBinaryBytesAndReadBack(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let notes = ObjectStore<Note>(store: store, collection: "notes", coder: .propertyList)
        let note = Note(id: "a", title: "é", stars: 9)
        try await notes.insert(note)
        let stored = try #require(try await store.data("sov:objects:notes:a"))
        #expect(stored.starts(with: Array("bplist00".utf8)), "a binary property list, as bytes")
        #expect(try await notes.object("a") == note)
        #expect(try await notes.objects() == [note])
    }

    @Test(arguments: ObjectEngine.all)
    func oneUndecodableObjectFailsAStrictReadWithItsIDAndKey(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let notes = ObjectStore<Note>(store: store, collection: "notes")
        try await notes.insert(contentsOf: [Note(id: "a"), Note(id: "c")])
        try await store.set("sov:objects:notes:b", #"{"id":"b"}"#)
        let error = await #expect(throws: ObjectStoreError.self) { try await notes.objects() }
        #expect(error?.code == .decodingFailed && error?.id == "b" && error?.key == "sov:objects:notes:b")
        #expect(error?.underlying is DecodingError)
        await #expect(throws: ObjectStoreError.self) { try await notes.object("b") }
        await #expect(throws: ObjectStoreError.self) { try await notes.page() }
        #expect(try await notes.object("c") == Note(id: "c"), "the others still read one by one")
    }

    @Test(arguments: ObjectEngine.all)
    func aSkippingReadShowsTheOthersAndReportsTheUndecodable(engine: ObjectEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let notes = ObjectStore<Note>(store: store, collection: "notes")
        try await notes.insert(contentsOf: [Note(id: "a"), Note(id: "c"), Note(id: "d")])
        try await store.set("sov:objects:notes:b", "not json")
        let first = try await notes.page(limit: 2, skippingUndecodable: true)
        #expect(first.ids == ["a"] && first.objects == [Note(id: "a")])
        #expect(first.failures.map(\.id) == ["b"] && first.failures.map(\.code) == [.decodingFailed])
        #expect(first.next == "b", "the cursor passes the undecodable entry")
        let second = try await notes.page(after: first.next, limit: 2, skippingUndecodable: true)
        #expect(second.ids == ["c", "d"] && second.failures.isEmpty)
    }
}
