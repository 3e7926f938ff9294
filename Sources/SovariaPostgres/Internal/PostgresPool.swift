import Sovaria
import SovariaPlumbing
import Synchronization

/// The connections of one store: at most `maxConnections` open, idle ones kept for the next
/// call, dead ones dropped, and a call whose connection broke retried once on a fresh one when
/// that is safe.
///
/// A call first takes a slot (suspending, not blocking a thread, while every slot is taken), then
/// runs on the store's `BlockingWorkQueue` with a connection: an idle one that is still usable
/// (``PostgresConnection/isUsableAfterIdle()``), else a new one. Connections are either idle or
/// held by one call, so no more than `maxConnections` are ever open.
final class PostgresPool: Sendable {
    private struct State {
        var idle: [PostgresConnection] = []
        var busySlots = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The most calls (and so connections) at once.
    let maxConnections: Int
    private let state = Mutex(State())
    private let connect: @Sendable () throws(OfflineStoreError) -> PostgresConnection
    private let queue = BlockingWorkQueue(label: "sovaria.postgres")

    /// A pool that opens connections with `connect`.
    init(maxConnections: Int, connect: @escaping @Sendable () throws(OfflineStoreError) -> PostgresConnection) {
        self.maxConnections = max(1, maxConnections)
        self.connect = connect
    }

    /// Runs `body` with a connection, off Swift's cooperative threads.
    ///
    /// When the connection breaks during `body`, it is dropped; `body` runs once more on a new
    /// connection if `retryable` and the broken call had not sent a commit whose answer never came
    /// (``PostgresConnection/brokeAwaitingCommit``). A write is run with `retryable` only when
    /// sending it again cannot apply it twice out of order with other writers: see
    /// `PostgresOfflineStore`'s documentation.
    func withConnection<Result: Sendable>(
        retryable: Bool, _ body: @escaping @Sendable (PostgresConnection) throws(OfflineStoreError) -> Result
    ) async throws -> Result {
        await takeSlot()
        defer { giveBackSlot() }
        return try await queue.runConcurrently { [self] in try run(retryable: retryable, body) }
    }

    /// Closes the idle connections (the server then ends their sessions at once).
    func closeIdle() {
        let idle = state.withLock { state in
            defer { state.idle.removeAll() }
            return state.idle
        }
        _ = idle  // released here, outside the lock: each PQfinish sends a Terminate message
    }

    private func run<Result>(
        retryable: Bool, _ body: (PostgresConnection) throws(OfflineStoreError) -> Result
    ) throws(OfflineStoreError) -> Result {
        let connection = try takeConnection()
        do {
            let result = try body(connection)
            keep(connection)
            return result
        } catch {
            guard connection.isBroken else {
                keep(connection)
                throw error
            }
            guard retryable, !connection.brokeAwaitingCommit else { throw error }
        }
        // The connection broke before anything was committed: once more, on a new connection.
        let fresh = try connect()
        do {
            let result = try body(fresh)
            keep(fresh)
            return result
        } catch {
            if !fresh.isBroken { keep(fresh) }
            throw error
        }
    }

    /// An idle connection that still works, or a new one.
    private func takeConnection() throws(OfflineStoreError) -> PostgresConnection {
        while let idle = state.withLock({ $0.idle.popLast() }) {
            if idle.isUsableAfterIdle() { return idle }
            // Dropped: the server restarted or ended the session while it sat idle.
        }
        return try connect()
    }

    private func keep(_ connection: PostgresConnection) {
        guard !connection.isBroken, !connection.isInTransaction else { return }
        state.withLock { $0.idle.append(connection) }
    }

    private func takeSlot() async {
        let taken = state.withLock { state in
            guard state.busySlots < maxConnections else { return false }
            state.busySlots += 1
            return true
        }
        if taken { return }
        await withCheckedContinuation { continuation in
            let takeNow = state.withLock { state in
                guard state.busySlots < maxConnections else {
                    state.waiters.append(continuation)
                    return false
                }
                state.busySlots += 1
                return true
            }
            if takeNow { continuation.resume() }
        }
    }

    private func giveBackSlot() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.busySlots -= 1
                return nil
            }
            return state.waiters.removeFirst()  // the slot passes straight to the next waiter
        }
        next?.resume()
    }
}
