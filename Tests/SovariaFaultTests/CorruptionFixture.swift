import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaSQLite
import SovariaTestKit
import Testing

/// A store written in two phases, kept as a folder each trial copies before damaging one file,
/// and what a reader of the copy may find under each key.
///
/// Phase 1 writes `sov:k:1000` … `sov:k:1199` (values of 8 to about 3,000 letters, so LMDB has
/// overflow pages and SQLite overflow chains) and compacts (LevelDB moves them into a table,
/// SQLite into the database file); phase 2 changes every fourth value and adds 20 keys one set at
/// a time (LevelDB's log holds them, and for the `wal` kind SQLite's WAL: that store is copied
/// while open; for the others it is closed, which checkpoints the WAL into the file).
struct CorruptionFixture: Sendable {
    /// What a reader may find under one key.
    struct Expectation: Sendable {
        /// The value last written, `nil` for a key the last write removed.
        var current: String?
        /// Values the key held at an earlier commit (`nil`: it did not exist): a store that lost its
        /// newest writes (a WAL or log cut short) shows one of these.
        var older: [String?]
    }

    /// The engine, as `sovaria-crash-writer read-<engine>` names it.
    let engine: String
    /// The folder the trials copy.
    let template: URL
    /// Per key index (`sov:k:<1000 + index>`).
    let expected: [Expectation]
    private let folder: TemporaryFolder

    static let phaseOneCount = 200
    static let count = 220

    static func key(_ index: Int) -> String { "sov:k:\(1_000 + index)" }

    private static func size(_ index: Int) -> Int { 8 + (index * 739) % 3_000 }
    private static func firstValue(_ index: Int) -> String { letters(size(index), seed: index) }
    private static func secondValue(_ index: Int) -> String { letters(size(index + 1), seed: 10_000 + index) }

    /// Writes the store of `engine` (`fileKind` `journal` leaves a batch pending in the file store).
    static func make(engine: String, fileKind: String) async throws -> CorruptionFixture {
        let folder = try TemporaryFolder()
        let template = folder.child("template")
        let firstWrites = (0..<phaseOneCount).map { StoreWrite.set(key: key($0), value: firstValue($0)) }
        let secondWrites =
            stride(from: 0, to: phaseOneCount, by: 4).map { StoreWrite.set(key: key($0), value: secondValue($0)) }
            + (phaseOneCount..<count).map { StoreWrite.set(key: key($0), value: firstValue($0)) }
        var expected = (0..<count).map { index in
            index >= phaseOneCount
                ? Expectation(current: firstValue(index), older: [nil])
                : index % 4 == 0
                    ? Expectation(current: secondValue(index), older: [firstValue(index)])
                    : Expectation(current: firstValue(index), older: [])
        }
        // `checksummed-<engine>`: the engine behind ChecksummedOfflineStore, the gap-closer measured.
        let checksummed = engine.hasPrefix("checksummed-")
        func written(_ store: any OfflineStore, compactAfterFirstPhase: Bool = true) async throws {
            let store = checksummed ? ChecksummedOfflineStore(wrapping: store) : store
            try await store.write(firstWrites)
            if compactAfterFirstPhase { try await store.compact() }
            for write in secondWrites { try await store.write([write]) }
        }
        switch (checksummed ? String(engine.dropFirst("checksummed-".count)) : engine, fileKind) {
        case ("file", _):
            try await written(
                FileOfflineStore(directory: template, durability: .flushed), compactAfterFirstPhase: false)
            if fileKind == "journal" { try await pendBatch(in: template, scratch: folder.child("scratch"), &expected) }
        case ("sqlite", "database"):
            // Closed: the WAL is checkpointed into the file and removed, as after a clean shutdown.
            try await written(
                SQLiteOfflineStore(fileURL: template.appendingPathComponent("store.sqlite"), durability: .flushed))
        case ("sqlite", _):
            // Copied while open: closing the last connection would checkpoint the WAL into the file.
            let live = folder.child("live")
            let store = try SQLiteOfflineStore(
                fileURL: live.appendingPathComponent("store.sqlite"), durability: .flushed)
            try await written(store)
            try FileManager.default.createDirectory(at: template, withIntermediateDirectories: true)
            for name in ["store.sqlite", "store.sqlite-wal"] {
                try FileManager.default.copyItem(
                    at: live.appendingPathComponent(name), to: template.appendingPathComponent(name))
            }
            withExtendedLifetime(store) {}
        case ("lmdb", _):
            try await written(
                LMDBOfflineStore(directory: template, durability: .flushed), compactAfterFirstPhase: false)
        case ("leveldb", _):
            try await written(LevelDBOfflineStore(directory: template, durability: .flushed))
        default:
            throw OfflineStoreError(.unsupported, "no fixture for \(engine)")
        }
        return CorruptionFixture(engine: engine, template: template, expected: expected, folder: folder)
    }

    /// Leaves a committed batch in the file store's journal, as a crash after its commit would: the
    /// new value of key 1 staged under `.tmp-…`, key 2 removed.
    ///
    /// The journal's form is `BatchJournal`'s (docs/ARCHITECTURE.md): `"SOVJ2\n"`, per step a tag
    /// (1 rename, 2 remove), the key (UInt32 LE length, bytes) and for a rename the staged file's
    /// name, then FNV-1a 64 of all of it (UInt64 LE). The staged file is a real entry file of key 1,
    /// written by a store in another folder.
    private static func pendBatch(in template: URL, scratch: URL, _ expected: inout [Expectation]) async throws {
        let staged = ".tmp-pending"
        let newValue = letters(777, seed: 77)
        let scratchStore = FileOfflineStore(directory: scratch, durability: .synced)
        try await scratchStore.set(key(1), newValue)
        let entryName = try #require(
            try FileManager.default.contentsOfDirectory(atPath: scratch.path).first { $0.hasPrefix("k") })
        try FileManager.default.copyItem(
            at: scratch.appendingPathComponent(entryName), to: template.appendingPathComponent(staged))
        var journal = Array("SOVJ2\n".utf8)
        func append(_ string: String) {
            withUnsafeBytes(of: UInt32(string.utf8.count).littleEndian) { journal += $0 }
            journal += string.utf8
        }
        journal.append(1)
        append(key(1))
        append(staged)
        journal.append(2)
        append(key(2))
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in journal { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        withUnsafeBytes(of: hash.littleEndian) { journal += $0 }
        try Data(journal).write(to: template.appendingPathComponent(".journal"))
        expected[1] = Expectation(current: newValue, older: [expected[1].current])
        expected[2] = Expectation(current: nil, older: [expected[2].current])
    }

    /// Copies the template into a new folder for one trial.
    func copy() throws -> (folder: TemporaryFolder, store: URL) {
        let trial = try TemporaryFolder()
        let store = trial.child("store")
        try FileManager.default.copyItem(at: template, to: store)
        return (trial, store)
    }
}
