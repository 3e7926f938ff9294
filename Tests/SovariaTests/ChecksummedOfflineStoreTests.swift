import Foundation
import Sovaria
import SovariaTestEngines
import SovariaTestKit
import Testing

@Suite struct ChecksummedOfflineStoreTests {
    // MARK: - The conformance suite, around two stores

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundMemory(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("checksummed(memory)", persistent: false) { _ in
                ChecksummedOfflineStore(wrapping: MemoryOfflineStore())
            })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundFile(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("checksummed(file)", persistent: true) {
                ChecksummedOfflineStore(wrapping: FileOfflineStore(directory: $0))
            })
    }

    // MARK: - The stored form

    @Test func storesTheDocumentedForm() async throws {
        let inner = MemoryOfflineStore()
        let store = ChecksummedOfflineStore(wrapping: inner)
        try await store.set("sov:key", "value")
        #expect(try await inner.get("sov:key") == "c1:8181fb7fddf1216a:value")
        try await store.write([.set(key: "sov:key", value: "value"), .set(key: "sov:other", value: "value")])
        #expect(try await inner.get("sov:key") == "c1:8181fb7fddf1216a:value")
        let other = try #require(try await inner.get("sov:other"))
        #expect(other.hasPrefix("c1:") && other.hasSuffix(":value") && other != "c1:8181fb7fddf1216a:value")
    }

    @Test func storesBytesInTheSameFormAndChecksThem() async throws {
        let inner = MemoryOfflineStore()
        let store = ChecksummedOfflineStore(wrapping: inner)
        try await store.set("sov:key", data: Data("value".utf8))
        #expect(try await inner.get("sov:key") == "c1:8181fb7fddf1216a:value", "bytes of a string: the string's form")
        let binary = Data([0xFF, 0x00, 0xC3])
        try await store.write([.setData(key: "sov:bin", data: binary)])
        let stored = try #require(try await inner.data("sov:bin"))
        #expect(stored.prefix(3) == Data("c1:".utf8) && stored.suffix(4) == Data([0x3A]) + binary)
        #expect(try await store.data("sov:bin") == binary)
        #expect(try await store.dataEntries("sov:", after: nil, limit: 5).map(\.data) == [binary, Data("value".utf8)])
        var changed = stored
        changed[changed.count - 1] ^= 0x01
        try await inner.set("sov:bin", data: changed)
        let error = await #expect(throws: OfflineStoreError.self) { _ = try await store.data("sov:bin") }
        #expect(error?.code == .corrupt)
        #expect(error?.key == "sov:bin")
    }

    @Test func damageThatLeavesBytesThatAreNotUTF8IsCorruptNotNotUTF8() async throws {
        let inner = MemoryOfflineStore()
        let store = ChecksummedOfflineStore(wrapping: inner)
        try await store.set("sov:key", "value")
        var stored = try #require(try await inner.data("sov:key"))
        stored[stored.count - 1] = 0xFF
        try await inner.set("sov:key", data: stored)
        let error = await #expect(throws: OfflineStoreError.self) { _ = try await store.get("sov:key") }
        #expect(error?.code == .corrupt)
        #expect(error?.engine == .checksum)
        let pageError = await #expect(throws: OfflineStoreError.self) {
            _ = try await store.entries("sov:", after: nil, limit: 5)
        }
        #expect(pageError?.code == .corrupt)
        try await store.set("sov:bin", data: Data([0xFF]))
        let notText = await #expect(throws: OfflineStoreError.self) { _ = try await store.get("sov:bin") }
        #expect(notText?.code == .notUTF8, "intact bytes read as a string")
    }

    @Test func returnsEveryValueByteForByte() async throws {
        let store = ChecksummedOfflineStore(wrapping: MemoryOfflineStore())
        // A value that starts with a combining mark must not merge with the form's ":".
        let values = ["", "\u{301}", "\u{301}x", "a\0b", "é", "e\u{301}", "🎉", ":", "c1:0000000000000000:"]
        for (index, value) in values.enumerated() { try await store.set("sov:v\(index)", value) }
        for (index, value) in values.enumerated() {
            let read = try await store.get("sov:v\(index)")
            #expect(read.map { Array($0.utf8) } == Array(value.utf8), "value \(index)")
        }
        let page = try await store.entries("sov:v", after: nil, limit: 100)
        #expect(page.map { Array($0.value.utf8) } == values.map { Array($0.utf8) })
    }

    @Test func forwardsKeysDeleteAndCapabilities() async throws {
        let folder = try TemporaryFolder()
        let inner = FileOfflineStore(directory: folder.child("store"))
        let store = ChecksummedOfflineStore(wrapping: inner)
        #expect(store.isPersistent && store.capabilities == inner.capabilities)
        #expect(!ChecksummedOfflineStore(wrapping: MemoryOfflineStore()).isPersistent)
        try await store.write([.set(key: "sov:b", value: "2"), .set(key: "sov:a", value: "1")])
        #expect(try await store.keys("sov:") == ["sov:a", "sov:b"])
        try await store.delete("sov:a")
        #expect(try await inner.keys("") == ["sov:b"])
        #expect(try await store.get("sov:a") == nil)
    }

    // MARK: - Damage is detected, never returned

    /// 200 entries written through the wrapper (half one by one, half in a batch), then some
    /// of their raw stored values damaged in the inner store.
    struct DamagedStore {
        let inner: any OfflineStore
        let store: ChecksummedOfflineStore
        let originals: [(key: String, value: String)]
        let damaged: Set<String>

        static func key(_ index: Int) -> String { "sov:item:" + String(1_000 + index).dropFirst() }

        static func make(_ inner: any OfflineStore) async throws -> DamagedStore {
            let store = ChecksummedOfflineStore(wrapping: inner)
            let originals = (0..<200).map { index in
                (key: key(index), value: "value \(index) é \(String(repeating: "abc", count: index % 7))")
            }
            for entry in originals.prefix(100) { try await store.set(entry.key, entry.value) }
            try await store.write(originals.dropFirst(100).map { .set(key: $0.key, value: $0.value) })

            var damaged: Set<String> = []
            func damage(_ index: Int, _ change: (String) -> String) async throws {
                let raw = try #require(try await inner.get(key(index)))
                let changed = change(raw)
                try #require(changed != raw)
                try await inner.set(key(index), changed)
                damaged.insert(key(index))
            }
            // One ASCII letter of the value replaced by another: still valid UTF-8.
            try await damage(3) { replacingFirst("v", with: "w", in: $0, from: 20) }
            try await damage(50) { replacingFirst("e", with: "f", in: $0, from: 20) }
            try await damage(199) { String($0.dropLast()) + "d" }
            // A checksum digit changed to another lowercase digit, or to uppercase.
            try await damage(10) { flipDigit(at: 3, of: $0) }
            try await damage(11) { flipDigit(at: 18, of: $0) }
            try await damage(12) { $0.uppercased() }
            // Another key's raw value, moved; and one copied.
            let moved = try #require(try await inner.get(key(21)))
            try await inner.delete(key(21))
            try await damage(20) { _ in moved }
            let copied = try #require(try await inner.get(key(31)))
            try await damage(30) { _ in copied }
            // No form at all, a cut-off form, a new version, a byte added or removed.
            try await damage(40) { _ in "value 40 é " }
            try await damage(41) { _ in "" }
            try await damage(42) { String($0.utf8.prefix(19))! }
            try await damage(43) { "c2" + $0.dropFirst(2) }
            try await damage(44) { $0 + " " }
            try await damage(45) { String($0.dropLast()) }
            try await damage(46) { replacingFirst(":", with: ";", in: $0, from: 0) }

            let remaining = originals.filter { $0.key != key(21) }
            return DamagedStore(inner: inner, store: store, originals: remaining, damaged: damaged)
        }

        /// `text` with the first `old` at or after character `offset` replaced by `new`.
        static func replacingFirst(_ old: Character, with new: Character, in text: String, from offset: Int) -> String {
            var characters = Array(text)
            guard let index = characters.indices.dropFirst(offset).first(where: { characters[$0] == old }) else {
                return text
            }
            characters[index] = new
            return String(characters)
        }

        static func flipDigit(at offset: Int, of text: String) -> String {
            var bytes = Array(text.utf8)
            bytes[offset] = bytes[offset] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The engines the wrapper is damaged around: the package's one engine list.
    static let inners = TestEngine.standard()

    static func inner(_ engine: TestEngine, in folder: TemporaryFolder) async throws -> any OfflineStore {
        try await engine.open(folder.child("store"))
    }

    /// `true` when `body` throws `.corrupt` from the checksum naming `key`; records an issue
    /// for any other error.
    static func throwsCorrupt(_ key: String, _ body: () async throws -> Void) async -> Bool {
        do {
            try await body()
            return false
        } catch let error as OfflineStoreError {
            #expect(error.code == .corrupt, "\(key): \(error)")
            #expect(error.engine == "checksum", "\(key): \(error)")
            #expect(error.key == key, "\(key): \(error)")
            #expect(error.message.contains("damaged") && error.message.contains("backup"), "\(error.message)")
            return true
        } catch {
            Issue.record("\(key): \(error)")
            return true
        }
    }

    @Test(arguments: inners)
    func getThrowsForEveryDamagedValueAndReturnsEveryOther(_ innerName: TestEngine) async throws {
        let folder = try TemporaryFolder()
        let setup = try await DamagedStore.make(Self.inner(innerName, in: folder))
        #expect(setup.damaged.count == 15)
        var thrown: Set<String> = []
        for (key, value) in setup.originals {
            var read: String?
            if await Self.throwsCorrupt(key, { read = try await setup.store.get(key) }) {
                thrown.insert(key)
            } else {
                #expect(read.map { Array($0.utf8) } == Array(value.utf8), "\(key)")
            }
        }
        #expect(thrown == setup.damaged)
        #expect(try await setup.store.get(DamagedStore.key(21)) == nil)  // moved away: not detectable
    }

    @Test(arguments: inners)
    func entriesThrowsForEveryDamagedValueAndReturnsEveryOther(_ innerName: TestEngine) async throws {
        let folder = try TemporaryFolder()
        let setup = try await DamagedStore.make(Self.inner(innerName, in: folder))
        // One entry a page: each page is either the original entry or `.corrupt` naming its key.
        var thrown: Set<String> = []
        var after: String?
        for (key, value) in setup.originals {
            var page: [StoreEntry] = []
            if await Self.throwsCorrupt(key, { page = try await setup.store.entries("sov:", after: after, limit: 1) }) {
                thrown.insert(key)
            } else {
                #expect(page == [StoreEntry(key: key, value: value)], "\(key)")
            }
            after = key
        }
        #expect(thrown == setup.damaged)
        #expect(try await setup.store.entries("sov:", after: after, limit: 1).isEmpty)

        // A page with one damaged value in it is refused whole; the pages before it are served.
        let firstDamaged = DamagedStore.key(3)
        let wholePageThrows = await Self.throwsCorrupt(firstDamaged) {
            _ = try await setup.store.entries("sov:", after: nil, limit: 200)
        }
        #expect(wholePageThrows)
        let before = try await setup.store.entries("sov:", after: nil, limit: 3)
        #expect(before.map(\.key) == setup.originals.prefix(3).map(\.key))
        #expect(before.map(\.value) == setup.originals.prefix(3).map(\.value))
    }

    @Test func rewritingADamagedKeyRepairsIt() async throws {
        let setup = try await DamagedStore.make(MemoryOfflineStore())
        let key = DamagedStore.key(10)
        #expect(await Self.throwsCorrupt(key) { _ = try await setup.store.get(key) })
        try await setup.store.set(key, "fresh")
        #expect(try await setup.store.get(key) == "fresh")
    }
}
