import Foundation
import Sovaria

#if canImport(Glibc)
    import Glibc
#endif

/// The crash writer's I/O-error mode (`io-<engine>`, or `io-encrypted-<engine>`), run under `strace --inject` by the fault
/// tests: opens the store, makes ``writes`` single sets and as many two-key batches (the crash
/// workload's keys and values), and exits with status 0 whatever the store answers.
///
/// Prints `set N` / `batch N` after each call returns, `failed set|batch N CODE` when one throws
/// an ``OfflineStoreError``, `open-failed CODE` when the open does, `untyped TYPE` when any call
/// throws another error, and `done` at the end. A failed call does not stop the run: the calls
/// after it show whether the store recovers on its own or refuses writes with a typed error.
///
/// Lines go out with `writev(2)`, never `write(2)`, so that an injected `write` failure hits
/// the store's own writes only; with `SOVARIA_ACK_WITH_WRITE=1` in the environment they go out
/// with `write(2)`, for a test that injects `writev` failures (LMDB writes its pages with it).
enum IOErrorWorkload {
    static let enginePrefix = "io-"
    /// How many sets, and batches, one run makes.
    static let writes = 12

    /// Runs the workload on `engine` at `location`, from index `first`, and exits with status 0.
    static func run(engine: String, location: String, durability: Durability, first: Int) async -> Never {
        let store: any OfflineStore
        do {
            store = try await CrashStores.open(engine, location: location, durability: durability)
        } catch {
            report(error, "open-failed")
            say("done")
            exit(0)
        }
        say("ready")
        for index in first..<(first + writes) {
            do {
                try await store.set(CrashWorkload.singleKey(index), CrashWorkload.value(index))
                say("set \(index)")
            } catch {
                report(error, "failed set \(index)")
            }
            do {
                try await store.write(CrashWorkload.batch(index))
                say("batch \(index)")
            } catch {
                report(error, "failed batch \(index)")
            }
        }
        say("done")
        exit(0)
    }

    /// Prints `what CODE`, with the message on standard error, or `untyped TYPE` for an error
    /// that is not an ``OfflineStoreError``.
    private static func report(_ error: any Error, _ what: String) {
        guard let error = error as? OfflineStoreError else {
            say("untyped \(type(of: error))")
            say(to: 2, "\(what): \(error)")
            return
        }
        say("\(what) \(error.code)")
        say(to: 2, "\(what): \(error)")
    }

    private static let acknowledgesWithWrite = ProcessInfo.processInfo.environment["SOVARIA_ACK_WITH_WRITE"] == "1"

    /// Writes `line` to `descriptor` with one `writev` call (or `write`, see above).
    static func say(to descriptor: Int32 = 1, _ line: String) {
        var bytes = Array((line + "\n").utf8)
        bytes.withUnsafeMutableBytes { buffer in
            if acknowledgesWithWrite {
                _ = write(descriptor, buffer.baseAddress, buffer.count)
                return
            }
            var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
            _ = writev(descriptor, &vector, 1)
        }
    }
}
