import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import sovaria_crash_writer

/// I/O errors from the disk, made with `strace --inject` on a child process (the crash writer's
/// ``IOErrorWorkload``): the `N`th `fsync`, `fdatasync`, `write`, `pwrite64`, `writev` or `rename`
/// (each engine's own calls) fails with EIO.
///
/// The call that meets the error throws ``OfflineStoreError/Code/io``; later calls work or throw a
/// typed error (LevelDB: ``OfflineStoreError/Code/reopenRequired``); the child never crashes; and
/// after it ends the store opens again in this process with every acknowledged write whole, no
/// batch half applied, and takes new writes. The short run picks 2 to 6 failing calls per engine
/// and system call at random; the long run (`SOVARIA_RELIABILITY=full`) up to 40, spread over
/// every call the workload makes.
@Suite(.serialized) struct InjectedIOErrorTests {
    /// An engine and one of the system calls it writes or syncs with (measured with `strace -c`).
    struct Target: Sendable, CustomTestStringConvertible {
        let engine: String
        let syscall: String
        var testDescription: String { "\(engine) \(syscall)" }
    }

    /// Every engine with the calls it writes and syncs with.
    static let targets: [Target] = [
        // The file store's pwrite64 is the lock file's write count, a hint whose failure it ignores.
        ("file", ["fsync", "write", "renameat"]),
        ("sqlite", ["fdatasync", "pwrite64"]),
        ("lmdb", ["fdatasync", "pwrite64", "writev"]),
        ("leveldb", ["fdatasync", "write", "rename"]),
        // The encryption wrapper passes its engine's errors on, typed as they are.
        ("encrypted-sqlite", ["fdatasync"]), ("encrypted-lmdb", ["pwrite64"]),
    ].flatMap { engine, calls in calls.map { Target(engine: engine, syscall: $0) } }

    /// EIO at random calls of one system call of one engine (see the suite).
    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: SyscallInjection.strace), "needs strace (make test)"),
        arguments: targets)
    func anInjectedEIOThrowsIOAndLosesNothing(_ target: Target) async throws {
        let folder = try TemporaryFolder()
        let calls = try await SyscallInjection.callCount(
            of: target.syscall, engine: target.engine, folder: folder.child("count"))
        try #require(calls > 0, "the workload makes no \(target.syscall) call on \(target.engine)")
        // The long run spreads 40 trials over every call; the short one picks calls at random, 2
        // of them, or more until one error reaches a caller (some calls' errors never do: a
        // LevelDB sync in its background compaction). Which call is which depends on the
        // threads' timing, so it goes on through up to 20 calls rather than 6: on a loaded
        // machine 6 random LevelDB fdatasync calls once all missed the writer's own.
        let spread = min(calls, 40)
        let failingCalls =
            FaultTrials.isFull
            ? (0..<spread).map { 1 + $0 * calls / spread } : Array((1...calls).shuffled().prefix(20))
        var surfaced = 0
        var trials = 0
        for (trial, failingCall) in failingCalls.enumerated() {
            if !FaultTrials.isFull, trials >= 2, surfaced > 0 { break }
            trials += 1
            let name = "\(target.engine) \(target.syscall) call \(failingCall) of \(calls)"
            let store = folder.child("store-\(trial)")
            let outcome = try await SyscallInjection(syscall: target.syscall, failingCall: failingCall)
                .run(engine: target.engine, folder: store)
            #expect(ChildProcess.succeeded(outcome.status), "\(name): the child crashed: \(outcome.errorOutput)")
            #expect(outcome.finished, "\(name): the child stopped early: \(outcome.errorOutput)")
            #expect(outcome.untyped.isEmpty, "\(name): untyped errors \(outcome.untyped): \(outcome.errorOutput)")
            if let first = outcome.failures.first {
                surfaced += 1
                #expect(first.code == "io", "\(name): \(first.call) threw \(first.code): \(outcome.errorOutput)")
                for later in outcome.failures.dropFirst() {
                    #expect(
                        ["io", "reopenRequired"].contains(later.code),
                        "\(name): \(later.call) after the error threw \(later.code): \(outcome.errorOutput)")
                }
            }
            try await checkReopens(store, target.engine, outcome, name)
        }
        // An error a store never sees (a sync of a file it was about to delete) is allowed; most surface.
        #expect(surfaced > 0, "no injected error reached a caller in \(trials) trials")
        print("io-errors \(target.engine) \(target.syscall): \(trials) trials, \(surfaced) surfaced, \(calls) calls")
    }

    /// Opens the store in this process (no injection), checks every acknowledged write, and writes.
    private func checkReopens(
        _ folder: URL, _ engine: String, _ outcome: SyscallInjection.Outcome, _ name: String
    ) async throws {
        let store = try await CrashStores.open(engine, location: folder.path, durability: .synced)
        try await AcknowledgedWrites.verify(store, sets: outcome.sets, batches: outcome.batches, name)
        try await store.set("sov:after", "reopened")
        #expect(try await store.get("sov:after") == "reopened", "\(name): a write after reopening")
    }
}
