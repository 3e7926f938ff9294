import Dispatch

/// Runs blocking storage work (file I/O, fsync, engine calls that may wait on a lock) on a
/// Dispatch queue of its own, so it never parks a thread of Swift's cooperative pool.
///
/// Work runs concurrently with other concurrent work (``runConcurrently(_:)``), or alone as a
/// barrier (``runAlone(_:)``): a store runs its reads concurrently and its batches alone when a
/// reader must never see part of one, or everything concurrently when the engine orders writers
/// itself (LevelDB). Costs one hop to the queue and back per call, more than a cached read, which
/// is why cheap in-memory reads do not use it.
package final class BlockingWorkQueue: Sendable {
    private let queue: DispatchQueue

    /// Creates a queue named `label` (shown in debuggers and crash reports).
    package init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated, attributes: .concurrent)
    }

    /// Runs `body` alongside other concurrent work, but never while work runs alone.
    package func runConcurrently<Result: Sendable>(
        _ body: @escaping @Sendable () throws -> Result
    ) async throws -> Result {
        let job = Job(body)
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: job.run()) }
        }
    }

    /// Runs `body` beside the queue's other concurrent work, later, without waiting for it.
    package func submitConcurrently(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    /// Runs `body` alone, later, without waiting for it (group commit's next group).
    package func submitAlone(_ body: @escaping @Sendable () -> Void) {
        queue.async(flags: .barrier, execute: body)
    }

    /// Runs `body` alone: no other work of this queue runs at the same time.
    package func runAlone<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        let job = Job(body)
        return try await withCheckedThrowingContinuation { continuation in
            queue.async(flags: .barrier) { continuation.resume(with: job.run()) }
        }
    }
}

/// A body that lets go of what it captured before its caller resumes: a store released right after
/// its last call returns is then really closed, so opening its path again opens it anew.
// @unchecked Sendable: `body` is read and cleared once, by the one Dispatch block that runs it.
private final class Job<Result>: @unchecked Sendable {
    private var body: (() throws -> Result)?

    init(_ body: @escaping () throws -> Result) { self.body = body }

    func run() -> Swift.Result<Result, any Error> {
        guard let body else { return .failure(CancellationError()) }
        self.body = nil
        return Swift.Result(catching: body)
    }
}
