import Synchronization

/// Lets concurrent callers for one key share one piece of work: the first starts it, the rest
/// wait for the same result (or the same error). Once it ends, the next call starts anew.
///
/// ```swift
/// let flights = SingleFlight<String, Data>()
/// let data = try await flights.run("avatar-7") { try await download("avatar-7") }
/// ```
///
/// - Important: Safe from any number of tasks. The work runs in a task of its own: cancelling
///   one caller neither cancels the work nor the other callers' wait, and that caller still
///   waits for the shared result.
public final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Flight {
        let id: UInt64
        let task: Task<Value, any Error>
        var callers = 1
    }

    private let flights = Mutex<(next: UInt64, running: [Key: Flight])>((0, [:]))

    /// Creates an empty group.
    public init() {}

    /// The result of `work` for `key`, shared with every concurrent caller for the same key.
    public func run(_ key: Key, _ work: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let task = flights.withLock { state -> Task<Value, any Error> in
            if let flight = state.running[key] {
                state.running[key]?.callers += 1
                return flight.task
            }
            state.next += 1
            let id = state.next
            let task = Task<Value, any Error> {
                defer { self.finish(key, id) }
                return try await work()
            }
            state.running[key] = Flight(id: id, task: task)
            return task
        }
        return try await task.value
    }

    /// How many keys have work running now.
    public var runningCount: Int { flights.withLock { $0.running.count } }

    /// How many callers have joined the work running for `key` (0 when none runs).
    public func callerCount(for key: Key) -> Int { flights.withLock { $0.running[key]?.callers ?? 0 } }

    private func finish(_ key: Key, _ id: UInt64) {
        flights.withLock { state in
            if state.running[key]?.id == id { state.running[key] = nil }
        }
    }
}
