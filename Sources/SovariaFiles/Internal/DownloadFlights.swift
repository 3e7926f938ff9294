import Sovaria
import SovariaPlumbing

/// The downloads ``FileCache/open(_:orDownload:)`` runs, one per key, and the callers waiting for
/// each: single-flight ("for any one key, only one piece of work is allowed to be
/// running at a time").
///
/// A caller's look-up and its joining happen in one critical section
/// (``join(_:as:waiter:claim:start:)``), and a download leaves this table only after its file is
/// in the cache's index, so no caller can miss both: it finds the download running or the file
/// cached, never neither.
///
/// The states of one key:
/// 1. No flight: a caller claims the cached file, or starts a flight and waits on it.
/// 2. A flight with waiters: callers join it; a caller cancelled leaves it, alone.
/// 3. A flight whose waiters all left: its download is cancelled, and it leaves the table, so the
///    next caller starts anew (the cancelled download may still commit; the later commit wins).
/// 4. The flight ended: every waiter gets the outcome once, and the key is back in state 1.
final class DownloadFlights: Sendable {
    /// What a waiter is given: the cached file, a lease of its own on what the flight downloaded,
    /// or the download's error.
    enum Answer: Sendable {
        /// The file was cached: claimed for the caller, who opens it.
        case cached(FileCache.ClaimedFile)
        /// The flight downloaded the file: the caller's own lease on it.
        case downloaded(FileLease)
    }

    typealias Waiter = CheckedContinuation<Answer, any Error>

    private struct Flight {
        let number: UInt64
        var task: Task<Void, Never>?
        var waiters: [UInt64: Waiter] = [:]
    }

    private struct State {
        var nextNumber: UInt64 = 0
        var running: [String: Flight] = [:]
    }

    private let state: RankedMutex<State>

    /// An empty table whose lock stands at `rank`: ``join(_:as:waiter:claim:start:)`` runs `claim`
    /// holding it, so `claim`'s locks must rank higher (SovariaPlumbing/LockOrder.swift).
    init(rank: LockRank) {
        state = RankedMutex(rank, State())
    }

    /// A number for a caller about to ``join(_:as:waiter:claim:start:)``, which ``leave(_:waiter:)``
    /// names it by.
    func newWaiterNumber() -> UInt64 {
        state.withLock { state in
            state.nextNumber += 1
            return state.nextNumber
        }
    }

    /// Finds `key`'s flight or cached file, in one critical section, and resumes `waiter` once with
    /// the answer: a running flight gets the caller as a waiter (resumed when it ends); otherwise
    /// `claim` looks for the cached file (resumed now); if it finds none, `start` makes the task of
    /// a new flight (given the flight's number), which must end in ``finish(_:flight:)``.
    /// A caller already cancelled is resumed with a `CancellationError` and joins nothing.
    func join(
        _ key: String, as number: UInt64, waiter: Waiter, claim: () -> FileCache.ClaimedFile?,
        start: (_ flight: UInt64) -> Task<Void, Never>
    ) {
        let answer = state.withLock { state -> Result<Answer, any Error>? in
            // Checked under the lock ``leave(_:waiter:)`` takes: a cancellation either is seen here
            // or finds the waiter there.
            if Task.isCancelled { return .failure(CancellationError()) }
            if state.running[key] != nil {
                state.running[key]?.waiters[number] = waiter
                return nil
            }
            if let claimed = claim() { return .success(.cached(claimed)) }
            var flight = Flight(number: number)
            flight.waiters[number] = waiter
            // The task is made inside the section: its finish waits for the lock, so it cannot
            // end before it is in the table.
            flight.task = start(number)
            state.running[key] = flight
            return nil
        }
        if let answer { waiter.resume(with: answer) }
    }

    /// Takes waiter `number` off its key's flight and resumes it with a `CancellationError`; the
    /// last waiter to leave cancels the download and ends the flight. Does nothing once the
    /// waiter has its outcome.
    func leave(_ key: String, waiter number: UInt64) {
        let (left, cancelled) = state.withLock { state -> (Waiter?, Task<Void, Never>?) in
            guard let waiter = state.running[key]?.waiters.removeValue(forKey: number) else { return (nil, nil) }
            guard state.running[key]?.waiters.isEmpty == true else { return (waiter, nil) }
            return (waiter, state.running.removeValue(forKey: key)?.task)
        }
        cancelled?.cancel()
        left?.resume(throwing: CancellationError())
    }

    /// Ends flight `number` of `key`: takes it off the table and returns its waiters, each to be
    /// resumed once by the caller; none when its waiters all left (``leave(_:waiter:)``).
    func finish(_ key: String, flight number: UInt64) -> [Waiter] {
        state.withLock { state -> [Waiter] in
            guard let flight = state.running[key], flight.number == number else { return [] }
            state.running[key] = nil
            return Array(flight.waiters.values)
        }
    }

    /// How many callers wait for `key`'s download now (0 when none runs).
    func waiterCount(for key: String) -> Int { state.withLock { $0.running[key]?.waiters.count ?? 0 } }
}
