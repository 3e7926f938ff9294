import Foundation
import Sovaria
import SovariaTestKit
import Synchronization
import Testing

/// The store-URL grammar and the opener with `Sovaria` alone linked (issue 36): every form
/// parses to its parts, the canonical text parses back to the same URL, and a bad URL is a typed
/// error naming its bad part. Engines of other modules are not linked in this target's checks:
/// they pass no scheme, so `sqlite:` says which product to add.
@Suite struct StoreURLTests {
    struct Form: Sendable, CustomStringConvertible {
        let text: String
        let engine: String
        var location = ""
        var durability = Durability.synced
        var wrappers: [String] = []
        var options: [String: String] = [:]
        var description: String { text }
    }

    static let forms: [Form] = [
        Form(text: "memory:", engine: "memory"),
        Form(text: "file:/var/lib/app/store", engine: "file", location: "/var/lib/app/store"),
        Form(text: "FILE:relative/store", engine: "file", location: "relative/store"),
        Form(
            text: "sqlite:/var/lib/app/offline.sqlite?durability=flushed", engine: "sqlite",
            location: "/var/lib/app/offline.sqlite", durability: .flushed),
        Form(text: "sqlite:///var/lib/app/offline.sqlite", engine: "sqlite", location: "/var/lib/app/offline.sqlite"),
        Form(text: "lmdb:/data/lmdb?durability=synced", engine: "lmdb", location: "/data/lmdb"),
        Form(text: "leveldb:/data/a%20b%3Fc%25d", engine: "leveldb", location: "/data/a b?c%d"),
        Form(text: "file:/data/caf%C3%A9", engine: "file", location: "/data/café"),
        Form(text: "postgres:", engine: "postgres"),
        Form(
            text: "postgres:host=db dbname=app?table=notes&durability=flushed", engine: "postgres",
            location: "host=db dbname=app", durability: .flushed, options: ["table": "notes"]),
        Form(
            text: "postgres:postgresql://me@db/app?sslmode=require", engine: "postgres",
            location: "postgresql://me@db/app?sslmode=require"),
        Form(
            text: "encrypted+sqlite:/x.sqlite?key-file=/etc/app/key&durability=flushed", engine: "sqlite",
            location: "/x.sqlite", durability: .flushed, wrappers: ["encrypted"], options: ["key-file": "/etc/app/key"]),
        Form(
            text: "Encrypted+Checksummed+lmdb:/d", engine: "lmdb", location: "/d",
            wrappers: ["encrypted", "checksummed"]),
    ]

    @Test(arguments: forms)
    func everyFormParsesToItsParts(_ form: Form) throws {
        let url = try StoreURL(form.text)
        #expect(url.engine == form.engine)
        #expect(url.location == form.location)
        #expect(url.durability == form.durability)
        #expect(url.wrappers == form.wrappers)
        #expect(url.options == form.options)
    }

    @Test(arguments: forms)
    func theCanonicalTextParsesBackToTheSameURL(_ form: Form) throws {
        let url = try StoreURL(form.text)
        #expect(try StoreURL(url.description) == url, "\(url.description)")
    }

    /// URLs made of generated parts (locations with `?`, `%`, `&`, `=`, spaces, controls and
    /// non-ASCII letters) print and parse back to equal values.
    @Test func generatedURLsRoundTrip() throws {
        var random = SplitMix(seed: 36)
        let letters = Array("ab/._-?%&=# é\t~+:") + ["\u{1}", "日"]
        for _ in 0..<2_000 {
            let engine = ["file", "sqlite", "lmdb", "leveldb", "memory", "postgres"].randomElement(using: &random)!
            var location = String(
                (0..<Int.random(in: 1...12, using: &random)).map { _ in letters.randomElement(using: &random)! })
            if engine == "memory" { location = "" }
            if engine == "postgres" { location = location.filter { !"?%&=".contains($0) } }
            var options: [String: String] = [:]
            if engine == "postgres", Bool.random(using: &random) {
                options["table"] = "t\(Int.random(in: 0...9, using: &random))"
            }
            let wrappers = Bool.random(using: &random) ? ["checksummed"] : []
            let url = StoreURL(
                engine: engine, location: location, durability: Bool.random(using: &random) ? .synced : .flushed,
                wrappers: wrappers, options: options)
            let parsed: StoreURL
            do {
                parsed = try StoreURL(url.description)
            } catch {
                Issue.record("\(url.description) does not parse: \(error.reason) \(error.part)")
                continue
            }
            #expect(parsed == url, "\(url.description)")
        }
    }

    struct Bad: Sendable, CustomStringConvertible {
        let text: String
        let part: String
        let reason: StoreURLError.Reason
        var description: String { text }
    }

    static let bad: [Bad] = [
        Bad(text: "/var/lib/app/offline.sqlite", part: "/var/lib/app/offline.sqlite", reason: .missingScheme),
        Bad(text: ":/x", part: ":", reason: .missingScheme),
        Bad(text: "sqlit:/x", part: "sqlit", reason: .unknownEngine),
        Bad(text: "encrypted:/x", part: "encrypted", reason: .unknownEngine),
        Bad(text: "secret+sqlite:/x", part: "secret", reason: .unknownWrapper),
        Bad(text: "sqlite+lmdb:/x", part: "sqlite", reason: .unknownWrapper),
        Bad(text: "sqlite:/x?durabilty=flushed", part: "durabilty", reason: .unknownOption),
        Bad(text: "sqlite:/x?table=t", part: "table", reason: .unknownOption),
        Bad(text: "lmdb:/x?durability=fast", part: "fast", reason: .badDurability),
        Bad(text: "lmdb:/x?durability", part: "durability", reason: .badOption),
        Bad(text: "lmdb:/x?durability=synced&durability=flushed", part: "durability=flushed", reason: .badOption),
        Bad(text: "file:/a%2", part: "%2", reason: .badPercentEncoding),
        Bad(text: "file:/a%zz", part: "%zz", reason: .badPercentEncoding),
        Bad(text: "file:/a%FF", part: "/a%FF", reason: .badPercentEncoding),
        Bad(text: "file:/a%+F", part: "%+F", reason: .badPercentEncoding),
        Bad(text: "sqlite:/tmp/a%00b", part: "%00", reason: .badPercentEncoding),
        Bad(text: "sqlite:", part: "sqlite:", reason: .missingLocation),
        Bad(text: "leveldb:?durability=flushed", part: "leveldb:", reason: .missingLocation),
        Bad(text: "memory:/tmp/x", part: "/tmp/x", reason: .unexpectedLocation),
    ]

    @Test(arguments: bad)
    func aBadURLIsATypedErrorNamingItsBadPart(_ bad: Bad) throws {
        let error = try #require(throws: StoreURLError.self) { try StoreURL(bad.text) }
        #expect(error.reason == bad.reason, "\(error)")
        #expect(error.part == bad.part, "\(error)")
        #expect(error.url == bad.text)
        #expect(error.description.contains("`\(bad.part)`") || bad.reason == .missingScheme, "\(error)")
        #expect(error.description.contains("Store URLs:"), "the message lists the forms: \(error)")
    }

    /// Strings made of URL pieces, most of them wrong: parsing never crashes, and every error
    /// names a part that is in the text.
    @Test func theParserNamesAPartOfEveryStringItRefuses() {
        var random = SplitMix(seed: 3_600)
        let pieces = [
            "sqlite", "lmdb", "memory", "file", "postgres", "encrypted", "checksummed", "x", "+", ":", "//", "/", "?",
            "&", "=", "%", "%4", "%41", "%C3", "%+F", "%-0", "%00", "durability", "flushed", "synced", "table",
            "key-file", " ", "é", "",
        ]
        var refused = 0
        for _ in 0..<20_000 {
            let text = (0..<Int.random(in: 0...9, using: &random)).map { _ in pieces.randomElement(using: &random)! }
                .joined()
            do {
                _ = try StoreURL(text)
            } catch {
                refused += 1
                #expect(error.url == text)
                #expect(
                    text.contains(error.part) || (text.isEmpty && error.part.isEmpty),
                    "`\(text)`: `\(error.part)` \(error.reason)")
            }
        }
        #expect(refused > 1_000, "the generator makes bad URLs")
    }

    @Test func sovariaAloneOpensMemoryFileAndChecksummed() async throws {
        let folder = try TemporaryFolder()
        let memory = try await OfflineStores.open("memory:")
        #expect(memory is MemoryOfflineStore)
        let file = try await OfflineStores.open("file:\(folder.url.path)/store?durability=flushed")
        let fileStore = try #require(file as? FileOfflineStore)
        #expect(fileStore.durability == .flushed)
        try await file.set("sov:k", "v")
        #expect(try await FileOfflineStore(directory: folder.child("store")).get("sov:k") == "v")
        #expect(try await OfflineStores.open("checksummed+memory:") is ChecksummedOfflineStore)
    }

    @Test(arguments: [
        ("sqlite:/tmp/x", "sqlite", "SovariaSQLite"), ("lmdb:/tmp/x", "lmdb", "SovariaLMDB"),
        ("leveldb:/tmp/x", "leveldb", "SovariaLevelDB"), ("postgres:host=db", "postgres", "SovariaPostgres"),
        ("encrypted+memory:", "encrypted", "SovariaSodium"),
    ])
    func anEngineNotLinkedSaysWhichProductToAdd(text: String, part: String, product: String) async throws {
        let error = await #expect(throws: StoreURLError.self) { try await OfflineStores.open(text) }
        #expect(error?.reason == .notLinked(product: product), "\(String(describing: error))")
        #expect(error?.part == part)
        #expect(error?.description.contains(product) == true)
    }

    @Test func aFileFolderThatCannotBeMadeIsAnErrorNotMemory() async throws {
        let folder = try TemporaryFolder()
        try Data("a file".utf8).write(to: folder.child("taken"))
        await #expect(throws: OfflineStoreError.self) {
            try await OfflineStores.open("file:\(folder.url.path)/taken/store")
        }
    }

    @Test func anAppsOwnSchemeOpensByURLPassedOrRegistered() async throws {
        let opened = Mutex<[StoreURL]>([])
        let scheme = StoreScheme.engine("testkv", product: "TestKV", location: .required, options: ["shards"]) {
            url in
            opened.withLock { $0.append(url) }
            return MemoryOfflineStore()
        }
        _ = try await OfflineStores.open("testkv:/a?shards=4", using: [scheme])
        #expect(opened.withLock { $0.last?.options["shards"] } == "4")
        #expect(throws: StoreURLError.self) { try StoreURL("testkv-unregistered:/a") }
        OfflineStores.register(scheme)
        #expect(try StoreURL("testkv:/b").location == "/b")
        _ = try await OfflineStores.open("testkv:/b")
        #expect(opened.withLock { $0.count } == 2)
    }

    @Test func sovariaStoreChoosesTheStoreWhenTheAppPassesNone() async throws {
        let folder = try TemporaryFolder()
        let configured = try await OfflineStores.openConfigured(
            otherwise: "memory:", environment: [OfflineStores.environmentVariable: "file:\(folder.url.path)"])
        #expect(configured is FileOfflineStore)
        let fallback = try await OfflineStores.openConfigured(otherwise: "memory:", environment: [:])
        #expect(fallback is MemoryOfflineStore)
        let error = await #expect(throws: StoreURLError.self) {
            try await OfflineStores.openConfigured(environment: [OfflineStores.environmentVariable: ""])
        }
        #expect(error?.reason == .missingStore)
        #expect(error?.part == OfflineStores.environmentVariable)
    }
}
