import Synchronization

/// Lets concurrent callers for one key share one piece of work: the first starts it, the rest
/// wait for the same result (or the same error). Once it ends, the next call starts anew.
///
/// ```swift
/// let flights = SingleFlight<String, Data>()
/// let data = try await flights.run("avatar-7") { try await download("avatar-7") }
/// ```
///
/// A caller that first looks for a stored answer and runs the work only on a miss (a cache)
/// has a window: its look-up may start before a running flight stores its answer and end after
/// that flight has finished, so it finds neither the answer nor a flight to join. Such a caller
/// takes a ``Ticket`` before its look-up and passes it with ``Sharing/finishedAfter(_:)``: it
/// then also gets the result of a flight that finished after the ticket was taken, as if it had
/// joined it. The group keeps a finished result only while a ticket older than it is held.
///
/// - Important: Safe from any number of tasks. The work runs in a task of its own: cancelling
///   one caller neither cancels the work nor the other callers' wait, and that caller still
///   waits for the shared result.
///
/// Not package because it is the query cache's building block, not its API; `package` so the
/// HTTP transport shares its token refreshes with it.
package final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// A point in the group's history, taken before a look-up that may end in ``run(_:sharing:_:)``.
    ///
    /// Hold it until the run (or until the look-up found what it needed); the group forgets the
    /// results only tickets older than them could ask for once no such ticket is held.
    package final class Ticket: Sendable {
        fileprivate let sequence: UInt64
        private let group: SingleFlight

        fileprivate init(sequence: UInt64, group: SingleFlight) {
            self.sequence = sequence
            self.group = group
        }

        deinit { group.release(sequence) }
    }

    /// Which flights a call may share.
    package enum Sharing: Sendable {
        /// The flight running now, if any; otherwise a new one.
        case running
        /// The flight running now, or the last one for the key if it finished after the ticket
        /// was taken (its answer may have been stored after the caller's look-up began);
        /// otherwise a new one.
        case finishedAfter(Ticket)
        /// Only a flight that started after the ticket was taken: one running now that started
        /// earlier is waited for (its result is not shared) and then a new one starts, shared
        /// with every caller that waited alongside.
        case startedAfter(Ticket)
    }

    private struct Flight {
        /// The group's sequence when the flight started.
        let started: UInt64
        let task: Task<Value, any Error>
        var callers = 1
        /// Callers that wait for it to end, to start a flight of their own.
        var waiting = 0
    }

    private struct Finished {
        /// The group's sequence when the flight finished.
        let sequence: UInt64
        let result: Result<Value, any Error>
    }

    private struct State {
        /// Moves on at each start and finish; tickets read it.
        var sequence: UInt64 = 0
        var running: [Key: Flight] = [:]
        /// The last finished flight of each key, kept only while a ticket older than it is held.
        var finished: [Key: Finished] = [:]
        /// The sequences of the tickets held now, with how many hold each.
        var heldTickets: [UInt64: Int] = [:]
    }

    private let state = Mutex(State())

    /// Creates an empty group.
    package init() {}

    /// A ticket for a look-up about to start: pass it to ``run(_:sharing:_:)`` to share a flight
    /// that finishes while the look-up runs.
    package func ticket() -> Ticket {
        state.withLock { state in
            state.heldTickets[state.sequence, default: 0] += 1
            return Ticket(sequence: state.sequence, group: self)
        }
    }

    /// The result of `work` for `key`, shared with every concurrent caller for the same key.
    package func run(_ key: Key, _ work: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await run(key, sharing: .running, work)
    }

    /// The result of `work` for `key`, shared with the callers `sharing` allows.
    package func run(
        _ key: Key, sharing: Sharing, _ work: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        while true {
            switch joinOrStart(key, sharing: sharing, work) {
            case .result(let task): return try await task.value
            case .finished(let result): return try result.get()
            case .waitFor(let earlier): _ = await earlier.result
            }
        }
    }

    /// How many keys have work running now (for tests).
    var runningCount: Int { state.withLock { $0.running.count } }

    /// How many callers have joined the work running for `key` (0 when none runs; for tests).
    func callerCount(for key: Key) -> Int { state.withLock { $0.running[key]?.callers ?? 0 } }

    /// How many callers wait for the flight running for `key` to end, to start their own.
    func waitingCount(for key: Key) -> Int { state.withLock { $0.running[key]?.waiting ?? 0 } }

    /// How many finished results the group keeps for the tickets held now.
    var finishedCount: Int { state.withLock { $0.finished.count } }

    /// Forgets the finished result of `key` (or of every key): call it when what a flight
    /// fetched is no longer current (an invalidation, a sign-out), before a look-up could see
    /// the change. Running flights are not touched.
    package func forgetFinished(_ key: Key? = nil) {
        state.withLock { state in
            if let key { state.finished[key] = nil } else { state.finished.removeAll() }
        }
    }

    private enum Step {
        case result(Task<Value, any Error>)
        case finished(Result<Value, any Error>)
        case waitFor(Task<Value, any Error>)
    }

    private func joinOrStart(
        _ key: Key, sharing: Sharing, _ work: @escaping @Sendable () async throws -> Value
    ) -> Step {
        state.withLock { state in
            if let flight = state.running[key] {
                if case .startedAfter(let ticket) = sharing, flight.started <= ticket.sequence {
                    state.running[key]?.waiting += 1
                    return .waitFor(flight.task)
                }
                state.running[key]?.callers += 1
                return .result(flight.task)
            }
            if case .finishedAfter(let ticket) = sharing, let last = state.finished[key],
                last.sequence > ticket.sequence
            {
                return .finished(last.result)
            }
            state.sequence += 1
            let started = state.sequence
            let task = Task<Value, any Error> {
                let result: Result<Value, any Error>
                do { result = .success(try await work()) } catch { result = .failure(error) }
                self.finish(key, started: started, result)
                return try result.get()
            }
            state.running[key] = Flight(started: started, task: task)
            return .result(task)
        }
    }

    private func finish(_ key: Key, started: UInt64, _ result: Result<Value, any Error>) {
        state.withLock { state in
            guard state.running[key]?.started == started else { return }
            state.running[key] = nil
            state.sequence += 1
            // Every held ticket is older than this finish; with none held, no one can ask for it.
            if !state.heldTickets.isEmpty { state.finished[key] = Finished(sequence: state.sequence, result: result) }
        }
    }

    private func release(_ sequence: UInt64) {
        state.withLock { state in
            state.heldTickets[sequence, default: 1] -= 1
            guard state.heldTickets[sequence] == 0 else { return }
            state.heldTickets[sequence] = nil
            guard !state.finished.isEmpty else { return }
            // A finished result is wanted only by tickets taken before it finished.
            if let oldest = state.heldTickets.keys.min() {
                state.finished = state.finished.filter { $0.value.sequence > oldest }
            } else {
                state.finished.removeAll()
            }
        }
    }
}
