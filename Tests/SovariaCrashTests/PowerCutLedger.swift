import Foundation
import Sovaria
import SovariaQueue

@testable import sovaria_crash_writer

/// What the crash writer acknowledged on one store over several power cuts, and what checking the
/// store after each cut found.
///
/// Unlike ``CrashSafetyTests/verify(_:acknowledged:round:)``, which fails the test at the first
/// loss, the ledger counts what it finds, so the negative control (``Durability/flushed``) can
/// show how much a cut loses. A write found lost is counted once and dropped from the ledger.
struct PowerCutLedger {
    /// Single sets and two-key batches acknowledged and not found lost yet.
    private(set) var acknowledged = Acknowledged()
    /// The queue's numbers after the last check, oldest first.
    private var queue: [Int] = []
    /// The highest queue sequence seen.
    private var highestSequence: UInt64 = 0
    /// What the checks found so far.
    private(set) var findings = PowerCutFindings()

    /// Checks `store`, reopened after a cut of the plain workload that acknowledged `acks` (its
    /// last acknowledgement being the last call known to have returned).
    mutating func checkWrites(_ store: any OfflineStore, after acks: Acknowledged, cut: Int) async throws {
        acknowledged.formUnion(acks)
        findings.acknowledgedWrites += acks.sets.count + acks.batches.count
        let lastSet = acks.sets.max()
        let lastBatch = acks.batches.max()
        var lostThisCut = 0
        for index in acknowledged.sets.sorted() {
            findings.checkedWrites += 1
            let value = try await store.get(CrashWorkload.singleKey(index))
            guard value != CrashWorkload.value(index) else { continue }
            lostThisCut += 1
            acknowledged.sets.remove(index)
            let last = index == lastSet ? " (the last set acknowledged)" : ""
            record(value == nil ? .lost : .torn, "cut \(cut): acknowledged set \(index)\(last) is \(describe(value))")
        }
        for index in acknowledged.batches.sorted() {
            findings.checkedWrites += 1
            let (a, b) = CrashWorkload.batchKeys(index)
            let expected = CrashWorkload.value(index + 1_000_000)
            let values = (try await store.get(a), try await store.get(b))
            guard values != (expected, expected) else { continue }
            lostThisCut += 1
            acknowledged.batches.remove(index)
            let last = index == lastBatch ? " (the last batch acknowledged)" : ""
            let kind: PowerCutFindings.Kind =
                values == (nil, nil) ? .lost : (values.0 == nil || values.1 == nil) ? .halfBatch : .torn
            record(
                kind, "cut \(cut): acknowledged batch \(index)\(last) is \(describe(values.0)), \(describe(values.1))")
        }
        if lostThisCut > 0 { findings.cutsWithLosses += 1 }
        try await checkUnacknowledged(store, cut: cut)
    }

    /// Whatever else the store holds of the workload (the call in flight at the cut, writes lost
    /// earlier) is whole, and no batch is half applied.
    private mutating func checkUnacknowledged(_ store: any OfflineStore, cut: Int) async throws {
        for entry in try await store.entries("sov:crash:n:", after: nil, limit: .max) {
            let index = Int(entry.key.dropFirst("sov:crash:n:".count)) ?? -1
            if entry.value != CrashWorkload.value(index) { record(.torn, "cut \(cut): \(entry.key) is torn") }
        }
        var halves: [Int: Int] = [:]
        for entry in try await store.entries("sov:crash:b:", after: nil, limit: .max) {
            let index = Int(entry.key.dropFirst("sov:crash:b:".count).prefix(9)) ?? -1
            if entry.value != CrashWorkload.value(index + 1_000_000) {
                record(.torn, "cut \(cut): \(entry.key) is torn")
            }
            halves[index, default: 0] += 1
        }
        for (index, count) in halves where count != 2 && !acknowledged.batches.contains(index) {
            record(.halfBatch, "cut \(cut): batch \(index), in flight at a cut, is half applied")
        }
    }

    /// Checks the queue of `store`, reopened after a cut of the queue workload whose lines were
    /// `events`: every acknowledged enqueue there, once, in order, whole; no acknowledged removal
    /// back; only the one call in flight may have happened or not.
    mutating func checkQueue(_ store: any OfflineStore, after events: [QueueEvent], cut: Int) async throws {
        var expected = queue
        var enqueueInFlight: Int?
        var removalInFlight: Int?
        for event in events {
            switch event.kind {
            case "enqueuing": enqueueInFlight = event.index
            case "queued":
                expected.append(event.index)
                enqueueInFlight = nil
                let sequence = event.sequence ?? 0
                if sequence <= highestSequence {
                    record(.torn, "cut \(cut): queue sequence \(sequence) did not grow past \(highestSequence)")
                }
                highestSequence = max(highestSequence, sequence)
            case "removing": removalInFlight = event.index
            case "removed":
                expected.removeAll { $0 == event.index }
                removalInFlight = nil
            default: record(.torn, "cut \(cut): unknown line \(event.kind)")
            }
        }
        let queueStore = try await WriteQueue(store: store, maxQueued: .max)
        let pending = try await queueStore.pending()
        let numbers = pending.map(QueueCrashWorkload.index)
        findings.acknowledgedWrites += events.filter { $0.kind == "queued" }.count
        findings.checkedWrites += expected.count
        var allowed = [expected]
        if let removal = removalInFlight { allowed += allowed.map { $0.filter { $0 != removal } } }
        if let enqueue = enqueueInFlight { allowed += allowed.map { $0 + [enqueue] } }
        if !allowed.contains(numbers) {
            let present = Set(numbers)
            let lost = expected.filter { !present.contains($0) && $0 != removalInFlight }
            let known = Set(expected + [enqueueInFlight].compactMap { $0 })
            let back = numbers.filter { !known.contains($0) }
            if !lost.isEmpty { findings.cutsWithLosses += 1 }
            for number in lost { record(.lost, "cut \(cut): acknowledged enqueue \(number) is not in the queue") }
            for number in back { record(.torn, "cut \(cut): the queue holds \(number), removed or never enqueued") }
            if lost.isEmpty && back.isEmpty {
                record(.torn, "cut \(cut): the queue holds \(numbers.suffix(8)), expected \(expected.suffix(8))")
            }
        }
        if !zip(pending, pending.dropFirst()).allSatisfy({ $0.sequence < $1.sequence }) {
            record(.torn, "cut \(cut): queue sequences do not grow")
        }
        for write in pending where write.request != QueueCrashWorkload.request(QueueCrashWorkload.index(of: write)) {
            record(.torn, "cut \(cut): queued write \(QueueCrashWorkload.index(of: write)) is torn")
        }
        queue = numbers
        highestSequence = max(highestSequence, pending.last?.sequence ?? 0)
    }

    /// Counts a finding that is not a loss of the store (a failed file system check, a store that
    /// would not open).
    mutating func record(_ kind: PowerCutFindings.Kind, _ message: String) {
        findings.record(kind, message)
    }

    /// Counts one cut and its file system checks.
    mutating func countCut(before: LoopDisk.Check, after: LoopDisk.Check, cut: Int) {
        findings.cuts += 1
        if !before.isClean {
            findings.uncleanBeforeReplay += 1
            findings.fsckMessages.append("cut \(cut), before replay (status \(before.status)): \(before.output)")
        }
        if !after.isClean {
            findings.uncleanAfterReplay += 1
            findings.fsckMessages.append("cut \(cut), after replay (status \(after.status)): \(after.output)")
        }
    }

    /// Counts how the child ended: killed, or on its own after the cut, which must then be of the
    /// shut-down file system's I/O errors (a stop signal does not reach a thread blocked in the
    /// kernel at once, so another thread of the child can run into the errors first; it cannot
    /// acknowledge anything then, since every call on the file system fails). A shut-down ext4
    /// answers EIO to most calls and EROFS to some (a fresh CI run met "Read-only file system"
    /// from an LMDB commit after a cut): both are the cut's errors. A store that maps its file
    /// (`mapped`, LMDB) meets them as signals instead: a page of the map the shut-down file
    /// system cannot bring in ends the reader with SIGBUS, or SIGSEGV once LMDB follows what it
    /// read there (a fresh CI run met "wait status 11" from encrypted LMDB after a cut, nothing
    /// lost); a death by either after the cut is the cut's too.
    mutating func countEnd(of acks: Acknowledged, cut: Int, mapped: Bool) {
        guard let message = acks.exitMessage else { return }
        let lowered = message.lowercased()
        let status =
            message.hasPrefix("wait status ")
            ? Int32(message.dropFirst("wait status ".count).prefix { $0.isNumber }) : nil
        let signalled = status.map { [SIGBUS, SIGSEGV].contains($0 & 0x7F) && ($0 >> 8) == 0 } ?? false
        if ["input/output error", "i/o error", "io error", "read-only file system"].contains(where: lowered.contains)
            || (mapped && signalled)
        {
            findings.childrenEndedByIOErrors += 1
        } else {
            record(
                .childFailed,
                "cut \(cut): the writer failed after the cut with something else than an I/O error: \(message)")
        }
    }

    /// Starts again on a new disk, keeping the figures.
    mutating func forgetWrites() {
        acknowledged = Acknowledged()
        queue = []
        highestSequence = 0
    }

    private func describe(_ value: String?) -> String {
        guard let value else { return "missing" }
        return "torn (\(value.utf8.count) bytes: \(value.prefix(24))…)"
    }
}

/// The figures of a power-cut run on one engine.
struct PowerCutFindings: Sendable, CustomStringConvertible {
    /// What a finding is.
    enum Kind: Sendable {
        /// An acknowledged write is missing.
        case lost
        /// A value is not what was written, or the queue is out of order, or holds a write twice.
        case torn
        /// One key of a two-key batch is there, the other not.
        case halfBatch
        /// The store could not be opened or read after a cut.
        case unreadable
        /// The writer failed after the cut with an error that is not an I/O error.
        case childFailed
    }

    /// Cuts made.
    var cuts = 0
    /// Writes (sets, batches, enqueues) the writer acknowledged.
    var acknowledgedWrites = 0
    /// Acknowledged writes looked up after the cuts: each one after every cut of its disk.
    var checkedWrites = 0
    /// Acknowledged writes missing after a cut (each counted once).
    var lost = 0
    /// Values not as written, queues out of order or holding a write twice.
    var torn = 0
    /// Batches with one key there and the other not.
    var halfBatches = 0
    /// Cuts after which the store did not open or read.
    var unreadable = 0
    /// Writers that failed after a cut with something else than an I/O error.
    var childFailures = 0
    /// Cuts after which the writer ended on its own with an I/O error before the SIGKILL reached it.
    var childrenEndedByIOErrors = 0
    /// Cuts after which at least one acknowledged write was missing.
    var cutsWithLosses = 0
    /// Cuts after which `e2fsck -fn` on the image, before the journal was replayed, found something.
    var uncleanBeforeReplay = 0
    /// Cuts after which `e2fsck -fn`, after a mount and a clean unmount, found something.
    var uncleanAfterReplay = 0
    /// Everything found wrong with the stores: lost, torn, half applied, unreadable.
    var problems: Int { lost + torn + halfBatches + unreadable + childFailures }
    /// The first messages, for the test's failure and the notes.
    private(set) var messages: [String] = []
    /// What `e2fsck` printed when it found something.
    var fsckMessages: [String] = []

    /// Counts a finding of `kind`, keeping the first messages.
    mutating func record(_ kind: Kind, _ message: String) {
        switch kind {
        case .lost: lost += 1
        case .torn: torn += 1
        case .halfBatch: halfBatches += 1
        case .unreadable: unreadable += 1
        case .childFailed: childFailures += 1
        }
        if messages.count < 20 { messages.append(message) }
    }

    /// The figures in one line, as the test prints them.
    var description: String {
        "\(cuts) cuts, \(acknowledgedWrites) writes acknowledged, \(checkedWrites) lookups of them, \(lost) lost (after \(cutsWithLosses) cuts), "
            + "\(torn) torn, \(halfBatches) half batches, \(unreadable) unreadable, \(childFailures) writer failures (\(childrenEndedByIOErrors) writers "
            + "ended by I/O errors before the SIGKILL); e2fsck -fn unclean before journal "
            + "replay after \(uncleanBeforeReplay) cuts, after replay \(uncleanAfterReplay)"
    }
}
