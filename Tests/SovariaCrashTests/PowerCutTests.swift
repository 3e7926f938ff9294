import Foundation
import Sovaria
import SovariaTestEngines
import SovariaTestServers
import Synchronization
import Testing

@testable import sovaria_crash_writer

#if canImport(Glibc)
    import Glibc
#endif

/// Power cuts at random moments lose no write a `.synced` store acknowledged, tear no value and
/// leave no batch half applied; with `.flushed` the same cuts do lose writes (the negative
/// control, which shows the check can fail).
///
/// Each store lives on an ext4 file system in a 64 MiB image on a loop device (``LoopDisk``). A
/// child process (`sovaria-crash-writer`) writes single sets and two-key batches (every third cut:
/// queue enqueues and removals) and prints an acknowledgement after each call returns. After a
/// random number of acknowledgements, at a random point of the next call, the test freezes the
/// child (SIGSTOP), shuts the file system down without committing its journal (the power cut),
/// kills the child, unmounts, runs `e2fsck -fn` on the image, mounts it again (replaying the
/// journal), opens the store and checks every write acknowledged on that disk so far. Then it
/// unmounts again and `e2fsck -fn` must find nothing. A disk serves ``cutsPerDisk`` cuts, so
/// stores also recover from cuts made while they recover from earlier ones.
///
/// `SOVARIA_RELIABILITY=full` (`make reliability`) runs 200 cuts per engine and 40 per engine
/// for the control; otherwise (`make test`) a short version: 5 and 2. Every figure is printed.
/// Needs root (mount, loop devices).
///
/// The writer acknowledges a call only if a file of the cut file system still opens after the
/// call returned (``LoopDisk/acknowledgementGate``): the shutdown is not a real power cut, and an
/// `fsync` waiting while it aborts the journal can return success for writes the journal never
/// committed, which a writer thread the stop signal has not reached yet would acknowledge.
/// `SOVARIA_POWERCUT_NO_GATE=1` leaves the gate out, to see those false losses.
@Suite(.serialized) struct PowerCutTests {
    /// Whether this is the long run (`SOVARIA_RELIABILITY=full`, `make reliability`).
    static var isFull: Bool { ProcessInfo.processInfo.environment["SOVARIA_RELIABILITY"] == "full" }
    /// The engines cut with `.synced`: each engine and, in the full run, the encryption wrapper
    /// over each (in the short run over LMDB only).
    static var syncedEngines: [String] {
        let engines = TestEngine.onDisk.flatMap { engine in
            isFull || engine == "lmdb" ? [engine, CrashStores.encryptedPrefix + engine] : [engine]
        }
        return engines.filter(isSelected)
    }
    /// The engines of the negative control.
    static var flushedEngines: [String] { TestEngine.onDisk.filter(isSelected) }
    /// `SOVARIA_POWERCUT_ENGINES=leveldb,encrypted-lmdb` runs only those engines (to rerun one).
    static func isSelected(_ engine: String) -> Bool {
        guard let list = ProcessInfo.processInfo.environment["SOVARIA_POWERCUT_ENGINES"] else { return true }
        return list.split(separator: ",").contains { $0 == engine }
    }
    /// `SOVARIA_POWERCUT_KEEP=FOLDER` keeps there a copy of the image, as the cut left it, of
    /// every cut after which the check found something (to look into it with `debugfs`, or mount it).
    static var keepFolder: String? { ProcessInfo.processInfo.environment["SOVARIA_POWERCUT_KEEP"] }
    /// Whether the writer acknowledges only while the file system is up (see the type's comment).
    static var usesAcknowledgementGate: Bool { ProcessInfo.processInfo.environment["SOVARIA_POWERCUT_NO_GATE"] != "1" }
    /// Cuts per engine with `.synced`.
    static var syncedCuts: Int { isFull ? 200 : 5 }
    /// Cuts per engine of the negative control.
    static var flushedCuts: Int { isFull ? 40 : 2 }
    /// Acknowledgements before the cut: a random number from 1 to this. In the full run a disk's
    /// writes pass LevelDB's 4 MiB write buffer, so cuts also land around its switch to a new log.
    static var maxAcknowledgements: Int { isFull ? 300 : 40 }
    /// Cuts on one file system before the next starts fresh (bounds the space the writes take).
    static let cutsPerDisk = 10
    /// The size of each ext4 image (sparse: only what is written takes space).
    static let diskSizeBytes = 128 << 20

    /// Every acknowledged `.synced` write survives each cut whole, no batch is half applied, the
    /// store opens, and the file system is clean after its journal is replayed.
    @Test(arguments: syncedEngines)
    func acknowledgedSyncedWritesSurvivePowerCuts(engine: String) async throws {
        let (findings, duration) = try await Self.cutRepeatedly(
            engine: engine, durability: "synced", cuts: Self.syncedCuts)
        #expect(findings.cuts == Self.syncedCuts)
        #expect(findings.acknowledgedWrites >= Self.syncedCuts, "the writer stopped early")
        #expect(
            findings.problems == 0,
            "\(findings): \(findings.messages.joined(separator: "; "))")
        #expect(findings.uncleanAfterReplay == 0, "\(findings.fsckMessages.joined(separator: "\n"))")
        Self.report(engine: engine, durability: "synced", findings, duration)
    }

    /// The negative control: `.flushed` promises to survive a crash of the process, not a power
    /// cut, and the same cuts must find the writes it loses. The file store (rename, no fsync),
    /// SQLite (`synchronous=NORMAL`: the WAL is not synced at commit) and LevelDB (`sync = false`)
    /// lose what they wrote since the journal's last commit (ext4 commits every 5 s, longer than a
    /// cut's writes take); LMDB (`MDB_NOSYNC`, since issue 26) leaves its pages to the kernel's
    /// writeback too.
    @Test(arguments: flushedEngines)
    func flushedWritesAreLostByPowerCuts(engine: String) async throws {
        let (findings, duration) = try await Self.cutRepeatedly(
            engine: engine, durability: "flushed", cuts: Self.flushedCuts)
        #expect(findings.cuts == Self.flushedCuts)
        #expect(findings.lost + findings.torn > 0, "a power cut lost no flushed write: the check cannot see loss")
        #expect(findings.uncleanAfterReplay == 0, "\(findings.fsckMessages.joined(separator: "\n"))")
        Self.report(engine: engine, durability: "flushed", findings, duration)
    }

    /// Prints the figures of a run (the test log is where `make reliability`'s figures come from).
    private static func report(engine: String, durability: String, _ findings: PowerCutFindings, _ duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        print("power cuts, \(engine) \(durability): \(findings); \(String(format: "%.1f", seconds)) s")
        for message in findings.messages.prefix(8) { print("  \(message)") }
        for message in findings.fsckMessages.prefix(2) { print("  e2fsck: \(message.prefix(600))") }
    }

    /// Runs `cuts` power cuts on stores of `engine` written with `durability` and checks each.
    private static func cutRepeatedly(
        engine: String, durability: String, cuts: Int
    ) async throws -> (PowerCutFindings, Duration) {
        let clock = ContinuousClock()
        let start = clock.now
        var ledger = PowerCutLedger()
        var disk: LoopDisk?
        do {
            for cut in 0..<cuts {
                if cut.isMultiple(of: cutsPerDisk) || disk == nil {
                    if let old = disk { try await PostgresCluster.onThread { try old.unmount() } }
                    disk = nil
                    disk = try await PostgresCluster.onThread { try LoopDisk(sizeBytes: diskSizeBytes) }
                    ledger.forgetWrites()
                }
                guard let current = disk else { break }
                let opened = try await cutOnce(
                    engine: engine, durability: durability, cut: cut, on: current, ledger: &ledger)
                if !opened {
                    disk = nil  // the store did not open: go on with a new disk
                    try await PostgresCluster.onThread { try current.unmount() }
                }
            }
            if let last = disk {
                try await PostgresCluster.onThread { try last.unmount() }
                disk = nil
            }
        } catch {
            // The test process may exit before a deinit would unmount: leave no mount behind.
            if let disk { try? await PostgresCluster.onThread { disk.release() } }
            throw error
        }
        return (ledger.findings, clock.now - start)
    }

    /// One cut: write, cut, check the file system, reopen and check the store, check again.
    /// Returns whether the store opened.
    private static func cutOnce(
        engine: String, durability: String, cut: Int, on disk: LoopDisk, ledger: inout PowerCutLedger
    ) async throws -> Bool {
        let path = disk.mountPoint.appendingPathComponent("store").path
        let queueCut = cut % 3 == 2
        // Indexes differ between the cuts of one disk and keep the 9 digits the workload's keys have.
        let failure = CutFailure()
        let acks = try await CrashChild.run(
            engine: (queueCut ? QueueCrashWorkload.enginePrefix : "") + engine, path: path, durability: durability,
            first: cut % cutsPerDisk * 10_000_000, killAfterAcknowledgements: Int.random(in: 1...maxAcknowledgements),
            // Odd cuts cut four writers at once: group commit joins their writes.
            environment: (usesAcknowledgementGate ? ["SOVARIA_CRASH_ACK_GATE": disk.acknowledgementGate.path] : [:])
                .merging(["SOVARIA_CRASH_WRITERS": cut.isMultiple(of: 2) ? "1" : "4"]) { $1 }
        ) { child in
            child.send(SIGSTOP)  // frozen first, so it acknowledges nothing after the cut
            do { try disk.cutPower() } catch { failure.message.withLock { $0 = "\(error)" } }
            child.send(SIGKILL)
        }
        if let message = failure.message.withLock({ $0 }) { throw CrashChild.Failure(description: message) }
        ledger.countEnd(of: acks, cut: cut, mapped: engine.hasSuffix(StoreScheme.lmdb.name))
        let beforeReplay = try await PostgresCluster.onThread {
            try disk.unmount()
            defer { try? disk.mount() }
            if keepFolder != nil { try disk.copyImage(to: disk.folder.appendingPathComponent("cut.img")) }
            return try disk.check()
        }
        try #require(disk.mounted, "the image did not mount again after cut \(cut)")
        let findingsBefore = ledger.findings.problems
        var opened = true
        do {
            let store = try await CrashStores.open(engine, at: URL(fileURLWithPath: path), durability: .synced)
            if queueCut {
                try await ledger.checkQueue(store, after: acks.queue, cut: cut)
            } else {
                try await ledger.checkWrites(store, after: acks, cut: cut)
            }
            try await CrashIntegrity.check(store)
        } catch {
            ledger.record(.unreadable, "cut \(cut): the store did not open or read after the cut: \(error)")
            opened = false
        }
        let afterReplay = try await PostgresCluster.onThread {
            try disk.unmount()
            defer { try? disk.mount() }
            return try disk.check()
        }
        try #require(disk.mounted, "the image did not mount again after cut \(cut)")
        ledger.countCut(before: beforeReplay, after: afterReplay, cut: cut)
        if let keepFolder, ledger.findings.problems > findingsBefore {
            let kept = URL(fileURLWithPath: keepFolder).appendingPathComponent("\(engine)-\(durability)-cut\(cut).img")
            try? FileManager.default.createDirectory(atPath: keepFolder, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(at: kept)
            try FileManager.default.moveItem(at: disk.folder.appendingPathComponent("cut.img"), to: kept)
            print("power cuts: kept the image of cut \(cut) as \(kept.path)")
        }
        return opened
    }
}

/// Why a cut could not be made, set on the thread that reads the child's output.
private final class CutFailure: Sendable {
    let message = Mutex<String?>(nil)
}
