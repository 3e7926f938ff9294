import Foundation
import Sovaria
import SovariaTestKit
import Testing

/// Byte flips and truncation in every kind of file each engine keeps (issue 16, item 4): the store
/// opens and reads in a child process (`sovaria-crash-writer read-<engine>`), and every read is
/// the value written, a value the key held at an earlier commit where the engine cannot tell a cut
/// log from a crash, or `.corrupt` naming the file and what to do: never a crash, never another
/// key's value.
///
/// Offsets are seeded (repeatable): 3 per damage in `make test`, 25 under
/// `SOVARIA_RELIABILITY=full` (`make reliability`). Each case prints its row of the matrix in
/// docs/RELIABILITY.md.
@Suite struct CorruptionMatrixTests {
    /// One kind of file of one engine, and what the engine is known not to detect in it.
    struct Target: Sendable, CustomStringConvertible {
        let engine: String
        let fileKind: String
        /// Damage the engine cannot see: a changed byte inside a value reads as a changed value
        /// (flips and letters only; a cut file must still be refused).
        var wrongValuesUndetectable = false
        /// Damage the engine takes for the torn tail of a crash: newest commits silently dropped.
        var newestWritesMayBeLost = false
        /// Damage that silently loses entries (a file name that no longer decodes).
        var entriesMayBeLost = false

        var description: String { "\(engine) \(fileKind)" }
    }

    static let engineTargets: [Target] = [
        Target(engine: "file", fileKind: "entry"),
        Target(engine: "file", fileKind: "journal", newestWritesMayBeLost: true),
        Target(engine: "file", fileKind: "name", entriesMayBeLost: true),
        Target(engine: "sqlite", fileKind: "database", wrongValuesUndetectable: true),
        Target(engine: "sqlite", fileKind: "wal", newestWritesMayBeLost: true),
        Target(engine: "lmdb", fileKind: "data.mdb", wrongValuesUndetectable: true),
        Target(engine: "leveldb", fileKind: "table"),
        Target(engine: "leveldb", fileKind: "log", newestWritesMayBeLost: true),
        Target(engine: "leveldb", fileKind: "manifest"),
    ]

    /// The gap-closer for engines that keep no checksum of values, on the same damage: in the full
    /// run only (its own tests cover it in `make test`).
    static let checksummedTargets = [
        Target(engine: "checksummed-sqlite", fileKind: "database"),
        Target(engine: "checksummed-lmdb", fileKind: "data.mdb"),
    ]

    static var targets: [Target] { engineTargets + (isFullRun ? checksummedTargets : []) }

    /// The damages: `flip` inverts one byte, `letter` changes one byte into another printable
    /// letter (a value stays valid UTF-8), `truncate` cuts the file at a random length.
    static let damages = ["flip", "letter", "truncate"]

    static var isFullRun: Bool { ProcessInfo.processInfo.environment["SOVARIA_RELIABILITY"] == "full" }

    static var trialsPerDamage: Int { isFullRun ? 25 : 3 }

    @Test(arguments: targets)
    func damageIsReportedNeverReadAsAnotherValue(_ target: Target) async throws {
        let fixture = try await CorruptionFixture.make(engine: target.engine, fileKind: target.fileKind)
        var rows: [String] = []
        for damage in Self.damages {
            var verdicts: [String: Int] = [:]
            for trialIndex in 0..<Self.trialsPerDamage {
                var generator = SplitMix(seed: Self.seed("\(target) \(damage) \(trialIndex)"))
                let (folder, store) = try fixture.copy()
                let damaged = try Self.damage(target, damage, in: store, generator: &generator)
                let trial = try await CorruptionTrial.run(engine: target.engine, store: store, fixture: fixture)
                verdicts[trial.verdict, default: 0] += 1
                let context = "\(target) \(damage) #\(trialIndex) (\(damaged)): \(trial.verdict)"
                check(trial, target: target, damage: damage, damaged: damaged, store: store, context: context)
                withExtendedLifetime(folder) {}
            }
            rows.append(
                "\(damage) ×\(Self.trialsPerDamage): "
                    + verdicts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))
        }
        print("corruption matrix: \(target): " + rows.joined(separator: "; "))
    }

    /// The contract, trial by trial.
    private func check(
        _ trial: CorruptionTrial, target: Target, damage: String, damaged: String, store: URL, context: String
    ) {
        #expect(trial.crash == nil, "\(context)")
        #expect(trial.sameAsAnotherKey == 0, "\(context)")
        if let (code, message) = trial.openError {
            #expect(code == "corrupt", "\(context): \(message)")
            #expect(Self.namesTheFile(message, damaged: damaged, store: store), "\(context): \(message)")
            return
        }
        #expect(trial.otherErrors.isEmpty, "\(context): \(trial.otherErrors)")
        if let message = trial.detectedMessage {
            #expect(Self.namesTheFile(message, damaged: damaged, store: store), "\(context): \(message)")
        }
        if let (code, message) = trial.scanError { #expect(code == "corrupt", "\(context): \(message)") }
        // A cut file never reads as other values: the engine refuses it (SQLite's check at open).
        if !target.wrongValuesUndetectable || damage == "truncate" {
            #expect(trial.wrong == 0 && trial.scanWrong == 0, "\(context)")
        }
        // The pending batch (key 1 set, key 2 removed) is applied whole or dropped whole.
        if target.fileKind == "journal" { #expect(trial.outcomes[1] == trial.outcomes[2], "\(context)") }
        if !target.newestWritesMayBeLost && !target.entriesMayBeLost { #expect(trial.rolledBack == 0, "\(context)") }
        if !target.entriesMayBeLost && !target.newestWritesMayBeLost { #expect(trial.missing == 0, "\(context)") }
    }

    /// A message names the damaged file, or the store's folder when the engine does not say which
    /// of its files failed.
    private static func namesTheFile(_ message: String, damaged: String, store: URL) -> Bool {
        // ChecksummedOfflineStore sees values, not files: its error names the key instead.
        if message.contains("ChecksummedOfflineStore") { return true }
        let file = String(damaged.prefix { $0 != " " })
        return message.contains(file) || message.contains(store.path)
    }

    /// Damages one file of `target`'s kind in the store at `store`; returns the file's path.
    private static func damage(
        _ target: Target, _ damage: String, in store: URL, generator: inout SplitMix
    ) throws -> String {
        if target.fileKind == "name" { return try damageName(damage, in: store, generator: &generator) }
        let candidates = try files(of: target, in: store)
        try #require(!candidates.isEmpty, "no \(target.fileKind) file in \(store.path)")
        let path = candidates[Int(generator.next() % UInt64(candidates.count))]
        let size = try Damage.fileSize(path)
        try #require(size > 0, "\(path) is empty")
        let offset = Int(generator.next() % UInt64(size))
        switch damage {
        case "flip": try Damage.invert(path, at: offset)
        case "letter": try Damage.flipLetter(path, at: offset)
        default: try Damage.truncate(path, toFraction: Double(offset) / Double(size))
        }
        return "\((path as NSString).lastPathComponent) \(damage) at \(offset) of \(size)"
    }

    private static func files(of target: Target, in store: URL) throws -> [String] {
        switch target.fileKind {
        case "entry": try Damage.files(in: store) { $0.hasPrefix("k") }
        case "journal": try Damage.files(in: store) { $0 == ".journal" }
        case "database": try Damage.files(in: store) { $0 == "store.sqlite" }
        case "wal": try Damage.files(in: store) { $0 == "store.sqlite-wal" }
        case "data.mdb": try Damage.files(in: store) { $0 == "data.mdb" }
        case "table": try Damage.files(in: store) { $0.hasSuffix(".ldb") || $0.hasSuffix(".sst") }
        case "log": try Damage.files(in: store) { $0.hasSuffix(".log") }
        default: try Damage.files(in: store) { $0.hasPrefix("MANIFEST-") }
        }
    }

    /// Renames an entry file of the file store: `flip` changes one hex digit (the name of another
    /// key, maybe an existing one), `letter` puts a letter that is no hex digit, `truncate` drops
    /// the last digit.
    private static func damageName(_ damage: String, in store: URL, generator: inout SplitMix) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: store.path).filter { $0.hasPrefix("k") }
            .sorted()
        let name = Array(names[Int(generator.next() % UInt64(names.count))].utf8)
        var renamed = name
        let position = 1 + Int(generator.next() % UInt64(name.count - 1))
        switch damage {
        case "flip":
            let digits = Array("0123456789abcdef".utf8).filter { $0 != name[position] }
            renamed[position] = digits[Int(generator.next() % UInt64(digits.count))]
        case "letter": renamed[position] = UInt8(ascii: "q")
        default: renamed.removeLast()
        }
        let from = store.appendingPathComponent(String(decoding: name, as: UTF8.self)).path
        let to = store.appendingPathComponent(String(decoding: renamed, as: UTF8.self)).path
        try #require(rename(from, to) == 0)
        return "\(String(decoding: name, as: UTF8.self)) renamed to \(String(decoding: renamed, as: UTF8.self))"
    }

    /// A stable seed from a trial's name (`Hasher` is seeded per process).
    private static func seed(_ name: String) -> UInt64 {
        name.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}
