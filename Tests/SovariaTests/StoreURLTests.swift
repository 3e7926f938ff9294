import Foundation
import Sovaria
import SovariaTestKit
import Synchronization
import Testing

/// The store-URL grammar and the opener with `Sovaria` alone linked (issue 36): every form
/// parses to its parts, the canonical text parses back to the same URL, and a bad URL is a typed
/// error naming its bad part. Engines of other modules are not linked in this target's checks:
/// they pass no scheme, so `sqlite:` says which registration is missing.
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
        Self.expectOneLinePointingToTheForms(error)
    }

    /// A message is one line: it names the bad part and points to ``StoreURL/forms``, never
    /// repeating the table of forms.
    static func expectOneLinePointingToTheForms(_ error: StoreURLError) {
        #expect(!error.description.contains("\n"), "one line: \(error)")
        #expect(!error.description.contains("Store URLs:"), "the table is not repeated: \(error)")
        #expect(error.description.contains("StoreURL.forms"), "points to the forms: \(error)")
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
    func anEngineNotRegisteredNamesTheMissingRegistration(text: String, part: String, product: String) async throws {
        let error = try #require(await #expect(throws: StoreURLError.self) { try await OfflineStores.open(text) })
        #expect(error.reason == .notRegistered(product: product), "\(error)")
        #expect(error.part == part)
        #expect(error.description.contains("is not registered"), "\(error)")
        #expect(error.description.contains("OfflineStores.register(.\(part))"), "\(error)")
        #expect(error.description.contains("import \(product)"), "\(error)")
        #expect(!error.description.contains("does not link"), "the program may well link it: \(error)")
        Self.expectOneLinePointingToTheForms(error)
    }

    /// A wrapper for the refusal checks: it takes `secret=right` and nothing else, and refuses
    /// before anything opens.
    static let sealed = StoreScheme.wrapper("sealed", product: "TestSealed", options: ["secret"]) { url, _ in
        guard url.options["secret"] == "right" else {
            throw StoreURLError(url: "\(url)", part: "sealed", reason: .missingKey)
        }
        return { store in store }
    }

    /// A URL refused for any of its schemes or options creates nothing: not the engine's folder,
    /// not a store without its wrapper (issue 47: an unregistered `encrypted+` left a plaintext
    /// store behind).
    @Test(arguments: [
        ("encrypted+file:STORE", StoreURLError.Reason.notRegistered(product: "SovariaSodium")),
        ("checksummed+encrypted+file:STORE", .notRegistered(product: "SovariaSodium")),
        ("checksummed+sqlite:STORE", .notRegistered(product: "SovariaSQLite")),
        ("encrypted+lmdb:STORE", .notRegistered(product: "SovariaSodium")),
        ("file:STORE?bogus=1", .unknownOption),
        ("checksummed+file:STORE?durability=fast", .badDurability),
        ("sealed+file:STORE", .missingKey),
        ("sealed+file:STORE?secret=wrong", .missingKey),
    ])
    func aRefusedURLCreatesNothing(text: String, reason: StoreURLError.Reason) async throws {
        let folder = try TemporaryFolder()
        let url = text.replacingOccurrences(of: "STORE", with: folder.url.path + "/store")
        let error = await #expect(throws: StoreURLError.self) {
            try await OfflineStores.open(url, using: [Self.sealed])
        }
        #expect(error?.reason == reason, "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == [], "\(url) created files")
    }

    /// The same for a URL made of its parts, which no parser checked, and for ``OfflineStores/validate(_:using:secrets:)``.
    @Test func aRefusedURLMadeOfItsPartsCreatesNothing() async throws {
        let folder = try TemporaryFolder()
        let place = folder.url.path + "/store"
        let refused: [(StoreURL, StoreURLError.Reason)] = [
            (StoreURL(engine: "file", location: place, options: ["bogus": "1"]), .unknownOption),
            (StoreURL(engine: "file", location: place, options: ["durability": "flushed"]), .unknownOption),
            (StoreURL(engine: "file", location: place, wrappers: ["nonesuch"]), .unknownWrapper),
            (StoreURL(engine: "file", location: place, wrappers: ["file"]), .unknownWrapper),
            (StoreURL(engine: "sealed", location: place), .unknownEngine),
            (
                StoreURL(engine: "file", location: place, wrappers: ["encrypted"]),
                .notRegistered(product: "SovariaSodium")
            ),
            (StoreURL(engine: "file"), .missingLocation),
            (StoreURL(engine: "memory", location: place), .unexpectedLocation),
        ]
        for (url, reason) in refused {
            let validated = await #expect(throws: StoreURLError.self) {
                try await OfflineStores.validate(url, using: [Self.sealed])
            }
            #expect(validated?.reason == reason, "validate \(url): \(String(describing: validated))")
            let opened = await #expect(throws: StoreURLError.self) {
                try await OfflineStores.open(url, using: [Self.sealed])
            }
            #expect(opened?.reason == reason, "open \(url): \(String(describing: opened))")
            let engine = await #expect(throws: StoreURLError.self) {
                try await OfflineStores.openEngine(url, using: [Self.sealed])
            }
            #expect(engine?.reason == reason, "openEngine \(url): \(String(describing: engine))")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == [], "\(url) created files")
        }
        // The form is right: the same URLs without their bad part open.
        try await OfflineStores.validate(
            StoreURL(engine: "file", location: place, wrappers: ["sealed"], options: ["secret": "right"]),
            using: [Self.sealed])
        _ = try await OfflineStores.open("sealed+file:\(place)?secret=right", using: [Self.sealed])
        #expect(FileManager.default.fileExists(atPath: place))
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

    /// A value an option does not take (``StoreScheme/optionValues``) is refused by `validate` as
    /// by `open`, before the engine opens; any case of a value it takes is one.
    @Test func anOptionValueTheSchemeDoesNotTakeIsRefusedBeforeItOpens() async throws {
        let opened = Mutex(0)
        let scheme = StoreScheme.engine(
            "testmodes", product: "TestModes", location: .optional, options: ["mode"],
            optionValues: ["mode": ["fast", "safe"]]
        ) { _ in
            opened.withLock { $0 += 1 }
            return MemoryOfflineStore()
        }
        let url = try OfflineStores.parse("testmodes:?mode=nearest", using: [scheme])
        let validated = await #expect(throws: StoreURLError.self) {
            try await OfflineStores.validate(url, using: [scheme])
        }
        #expect(validated?.reason == .badValue(option: "mode", allowed: ["fast", "safe"]))
        #expect(validated?.part == "nearest")
        #expect(validated?.explanation == "`nearest` is not a value of mode=: use mode=fast, mode=safe")
        let opening = await #expect(throws: StoreURLError.self) {
            try await OfflineStores.open(url, using: [scheme])
        }
        #expect(opening?.reason == validated?.reason)
        #expect(opened.withLock { $0 } == 0)
        try await OfflineStores.validate(OfflineStores.parse("testmodes:?mode=Safe", using: [scheme]), using: [scheme])
        _ = try await OfflineStores.open("testmodes:?mode=fast", using: [scheme])
        #expect(opened.withLock { $0 } == 1)
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
