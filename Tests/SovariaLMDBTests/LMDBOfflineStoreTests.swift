import Foundation
import Sovaria
import SovariaTestKit
import Testing

@testable import SovariaLMDB

@Suite struct LMDBOfflineStoreTests {
    static let durabilities: [Durability] = [.synced, .flushed]

    static func factory(_ durability: Durability) -> StoreFactory {
        StoreFactory("lmdb(\(durability))", persistent: true) { folder in
            try LMDBOfflineStore(directory: folder, durability: durability)
        }
    }

    @Test(arguments: OfflineStoreConformance.checks, durabilities)
    func conforms(_ check: ConformanceCheck, durability: Durability) async throws {
        try await check.run(on: Self.factory(durability))
    }

    @Test func declaresItsCapabilities() throws {
        let folder = try TemporaryFolder()
        let store = try LMDBOfflineStore(directory: folder.url)
        #expect(store.isPersistent)
        #expect(store.capabilities == [.atomicBatch, .persistent, .orderedScan, .compaction, .byteValues])
    }

    @Test func createsAMissingFolderPrivately() throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("a/b/store")
        _ = try LMDBOfflineStore(directory: directory)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("data.mdb").path))
    }

    @Test func growsPastItsInitialMapSize() async throws {
        let folder = try TemporaryFolder()
        let initial = 64 * 1_024
        let store = try LMDBOfflineStore(directory: folder.url, configuration: mapOf(initial))
        #expect(store.mapSizeBytes == initial)
        let value = String(repeating: "g", count: 1_000)
        for batch in 0..<40 {
            try await store.write((0..<50).map { .set(key: "k:\(batch * 50 + $0 + 10_000)", value: value + "\($0)") })
        }
        let large = String(repeating: "L", count: 3 * 1_024 * 1_024)
        try await store.set("large", large)

        #expect(store.mapSizeBytes > 4 * 1_024 * 1_024)
        #expect(try folder.fileSize("data.mdb") > 32 * initial)
        let keys = try await store.keys("k:")
        #expect(keys.count == 2_000)
        for index in stride(from: 0, to: 2_000, by: 37) {
            #expect(try await store.get("k:\(index + 10_000)") == value + "\(index % 50)")
        }
        #expect(try await store.get("large")?.utf8.count == large.utf8.count)
    }

    @Test func readersKeepWorkingWhileTheMapGrows() async throws {
        let folder = try TemporaryFolder()
        let store = try LMDBOfflineStore(directory: folder.url, configuration: mapOf(32 * 1_024))
        try await store.write([.set(key: "x", value: "0"), .set(key: "y", value: "0")])
        let filler = String(repeating: "f", count: 8_000)
        let rounds = 120
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 1...rounds {
                    try await store.write([
                        .set(key: "x", value: "\(round)"), .set(key: "fill:\(round)", value: filler),
                        .set(key: "y", value: "\(round)"),
                    ])
                }
            }
            for _ in 0..<3 {
                group.addTask {
                    var last = 0
                    while last < rounds {
                        // get() runs inline and never suspends: yield so the writer's queue gets a thread.
                        await Task.yield()
                        try Task.checkCancellation()
                        let x = Int(try await store.get("x") ?? "") ?? -1
                        let y = Int(try await store.get("y") ?? "") ?? -1
                        #expect(x >= last && y >= x, "read x = \(x), y = \(y) after \(last)")
                        last = max(last, y)
                        _ = try await store.entries("fill:", after: nil, limit: 3)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(store.mapSizeBytes >= 1_024 * 1_024)
        #expect(try await store.keys("fill:").count == rounds)
    }

    @Test func aMapThatCannotGrowSaysSo() async throws {
        let folder = try TemporaryFolder()
        let store = try LMDBOfflineStore(
            directory: folder.url, configuration: mapOf(64 * 1_024, growingTo: 256 * 1_024))
        try await store.set("small", "kept")
        let tooLarge = String(repeating: "t", count: 1_024 * 1_024)
        do {
            try await store.write([.set(key: "first", value: "1"), .set(key: "huge", value: tooLarge)])
            Issue.record("a 1 MiB value fit in a 256 KiB map")
        } catch let error as OfflineStoreError {
            #expect(error.code == .full)
            #expect(error.engine == "lmdb")
            #expect(error.nativeCode == -30_792)  // MDB_MAP_FULL
            #expect(error.message.hasPrefix("LMDB map is full and could not grow: "))
        }
        #expect(try await store.get("first") == nil)
        #expect(try await store.get("small") == "kept")
        try await store.set("after", "still writable")
        #expect(try await store.keys("") == ["after", "small"])
    }

    @Test func aSecondOpenOfOneFolderSharesTheEnvironment() async throws {
        let folder = try TemporaryFolder()
        let first = try LMDBOfflineStore(directory: folder.url)
        let link = folder.url.deletingLastPathComponent().appendingPathComponent("link-\(UUID().uuidString)")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: folder.url)
        defer { try? FileManager.default.removeItem(at: link) }
        var second: LMDBOfflineStore? = try LMDBOfflineStore(directory: link, durability: .flushed)
        #expect(second?.environment === first.environment)

        try await first.set("from-first", "1")
        #expect(try await second?.get("from-first") == "1")
        try await second?.write([.set(key: "from-second", value: "2"), .delete(key: "from-first")])
        #expect(try await first.get("from-second") == "2")
        #expect(try await first.get("from-first") == nil)

        second = nil  // the environment stays open for the first store
        try await first.set("after-release", "3")
        #expect(try await first.keys("") == ["after-release", "from-second"])
        let third = try LMDBOfflineStore(directory: folder.url.appendingPathComponent("."))
        #expect(third.environment === first.environment)
        #expect(try await third.get("after-release") == "3")
    }

    @Test func compactShrinksTheDataFile() async throws {
        let folder = try TemporaryFolder()
        let store = try LMDBOfflineStore(directory: folder.url)
        let value = String(repeating: "c", count: 2_000)
        let keys = (0..<2_000).map { "c:\($0 + 10_000)" }
        for start in stride(from: 0, to: keys.count, by: 250) {
            try await store.write(keys[start..<start + 250].map { .set(key: $0, value: value) })
        }
        try await store.write(keys.map { .delete(key: $0) })
        try await store.set("survivor", "kept")
        let before = try folder.fileSize("data.mdb")
        #expect(before > 4_000_000)

        try await store.compact()

        let after = try folder.fileSize("data.mdb")
        #expect(after < before / 10, "data.mdb was \(before) bytes, \(after) after compact()")
        #expect(try await store.keys("") == ["survivor"])
        #expect(try await store.get("survivor") == "kept")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted()
        #expect(leftovers == ["data.mdb", "lock.mdb"])
    }

    @Test func compactSwapsTheFileForEveryStoreSharingIt() async throws {
        let folder = try TemporaryFolder()
        let first = try LMDBOfflineStore(directory: folder.url)
        let second = try LMDBOfflineStore(directory: folder.url)
        let value = String(repeating: "s", count: 1_000)
        try await first.write((0..<500).map { .set(key: "s:\($0 + 1_000)", value: value) })
        try await first.write((0..<500).filter { $0 % 10 != 0 }.map { .delete(key: "s:\($0 + 1_000)") })
        let before = try folder.fileSize("data.mdb")

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await first.compact() }
            group.addTask {
                for round in 0..<200 {
                    #expect(try await second.get("s:1000") == value)
                    _ = try await second.entries("s:", after: "s:\(1_000 + round)", limit: 5)
                }
            }
            try await group.waitForAll()
        }

        #expect(try folder.fileSize("data.mdb") < before)
        #expect(try await second.keys("s:").count == 50)
        try await second.set("written-after", "compact")
        #expect(try await first.get("written-after") == "compact")
        #expect(try await first.get("s:1490") == value)
    }

    @Test func aDamagedFileIsReportedAsCorrupt() throws {
        let folder = try TemporaryFolder()
        try Data(repeating: 0x5A, count: 16 * 1_024).write(to: folder.url.appendingPathComponent("data.mdb"))
        do {
            _ = try LMDBOfflineStore(directory: folder.url)
            Issue.record("opened a file of garbage")
        } catch let error as OfflineStoreError {
            #expect(error.code == .corrupt)
            #expect(error.engine == "lmdb")
            #expect(error.nativeCode == -30_793)  // MDB_INVALID
        }
    }

    @Test(arguments: [[0x61, 0xFF], [0xF0, 0x9F, 0x98], [0xC3], [0xED, 0xA0, 0x80], [0x80, 0x61]] as [[UInt8]])
    func bytesThatAreNotUTF8AreCorrupt(_ bytes: [UInt8]) throws {
        let error = #expect(throws: OfflineStoreError.self) {
            try bytes.withUnsafeBytes { try String(copyingUTF8: $0, "value") }
        }
        #expect(error?.code == .corrupt)
        #expect(error?.engine == "lmdb")
        let valid = "a\0é😀\u{FFFD}"
        let copied = try Array(valid.utf8).withUnsafeBytes { try String(copyingUTF8: $0, "value") }
        #expect(Array(copied.utf8) == Array(valid.utf8))
    }

    @Test func dataSurvivesReopenAfterCompact() async throws {
        let folder = try TemporaryFolder()
        do {
            let store = try LMDBOfflineStore(directory: folder.url, durability: .flushed)
            try await store.write((0..<100).map { .set(key: "r:\($0)", value: "\($0)") })
            try await store.compact()
            try await store.set("r:last", "after compact")
        }
        let store = try LMDBOfflineStore(directory: folder.url)
        #expect(try await store.keys("r:").count == 101)
        #expect(try await store.get("r:last") == "after compact")
        #expect(try await store.entries("r:", after: "r:98", limit: 5).map(\.key) == ["r:99", "r:last"])
    }
}

extension LMDBOfflineStoreTests {
    @Test func staleReadersAreClearedAtOpen() async throws {
        let folder = try TemporaryFolder()
        // This process keeps the environment open, so the next open elsewhere is not the first one (which
        // would reset the reader table) and must find the dead reader itself.
        let store = try LMDBOfflineStore(directory: folder.url)
        try await store.set("k", "v")
        #expect(store.staleReadersClearedAtOpen == 0)
        let path = folder.url.path
        await #expect(processExitsWith: .success) { [path = path as String] in
            // A process that read (its reset read transaction keeps a reader slot) and died without closing.
            let reader = try LMDBOfflineStore(directory: URL(fileURLWithPath: path))
            _ = try await reader.get("k")
            _exit(0)
        }
        await #expect(processExitsWith: .success) { [path = path as String] in
            let next = try LMDBOfflineStore(directory: URL(fileURLWithPath: path))
            let value = try await next.get("k")
            _exit(next.staleReadersClearedAtOpen == 1 && value == "v" ? 0 : 1)
        }
        #expect(try await store.get("k") == "v")
    }
}

extension LMDBOfflineStoreTests {
    @Test func adoptsAMapAnotherProcessGrew() async throws {
        let folder = try TemporaryFolder()
        let initial = 64 * 1_024
        let store = try LMDBOfflineStore(directory: folder.url, configuration: mapOf(initial))
        try await store.set("before", "1")
        #expect(try await store.get("before") == "1")  // leaves an idle read transaction to renew
        let path = folder.url.path
        await #expect(processExitsWith: .success) { [path = path as String] in
            // Another process writes far past this process's map, growing it in the file's meta page.
            let writer = try LMDBOfflineStore(directory: URL(fileURLWithPath: path), configuration: mapOf(64 * 1_024))
            try await writer.set("grown", String(repeating: "g", count: 2 * 1_024 * 1_024))
        }
        #expect(try await store.get("grown")?.utf8.count == 2 * 1_024 * 1_024)
        #expect(store.mapSizeBytes > 2 * 1_024 * 1_024)
        try await store.set("after", "2")
        #expect(try await store.keys("") == ["after", "before", "grown"])
    }
}

extension LMDBOfflineStoreTests {
    @Test func compactRefusesWhileAnotherProcessHasTheFolderOpen() async throws {
        let folder = try TemporaryFolder()
        let store = try LMDBOfflineStore(directory: folder.url)
        try await store.write((0..<200).map { .set(key: "k:\($0)", value: String(repeating: "v", count: 500)) })
        let path = folder.url.path
        await #expect(processExitsWith: .success) { [path = path as String] in
            let other = try LMDBOfflineStore(directory: URL(fileURLWithPath: path))
            do {
                try await other.compact()
                _exit(1)
            } catch let error as OfflineStoreError where error.code == .locked {
                let count = try await other.keys("k:").count
                _exit(count == 200 ? 0 : 2)
            }
        }
        #expect(try await store.keys("k:").count == 200)
        try await store.set("still", "works")
        #expect(try await store.get("still") == "works")
    }
}

extension LMDBOfflineStoreTests {
    @Test func aSyncedStoreSharingAFlushedEnvironmentWrites() async throws {
        let folder = try TemporaryFolder()
        let flushed = try LMDBOfflineStore(directory: folder.url, durability: .flushed)
        let synced = try LMDBOfflineStore(directory: folder.url, durability: .synced)
        #expect(synced.environment === flushed.environment)
        try await synced.write([.set(key: "a", value: "1"), .set(key: "b", value: "2")])
        try await flushed.delete("a")
        #expect(try await synced.keys("") == ["b"])
    }
}

/// A configuration whose map starts at `initialBytes` and grows at most to `maxBytes`.
private func mapOf(_ initialBytes: Int, growingTo maxBytes: Int? = nil) -> LMDBOfflineStore.Configuration {
    var configuration = LMDBOfflineStore.Configuration()
    configuration.initialMapSizeBytes = initialBytes
    if let maxBytes { configuration.maxMapSizeBytes = maxBytes }
    return configuration
}
