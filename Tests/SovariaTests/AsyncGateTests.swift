import SovariaPlumbing
import Synchronization
import Testing

@testable import Sovaria

@Suite struct AsyncGateTests {
    private enum Tag {}

    /// What the holders did, in order.
    private final class Log: Sendable {
        private let items = Mutex<[Int]>([])
        func append(_ item: Int) { items.withLock { $0.append(item) } }
        var values: [Int] { items.withLock { $0 } }
    }

    /// Waits, without a clock, until `gate` has `count` callers in its line.
    private func waitForWaiters(_ gate: AsyncGate<Tag>, _ count: Int) async {
        while gate.waiterCount < count { await Task.yield() }
    }

    /// Starts a task that holds `gate` until `release` yields, and returns once it is inside.
    private func hold(
        _ gate: AsyncGate<Tag>, until release: AsyncStream<Void>, then body: @escaping @Sendable () -> Void = {}
    ) async -> Task<Void, any Error> {
        let (inside, entered) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await gate.withGate { _ in
                entered.yield()
                for await _ in release { break }
                body()
            }
        }
        for await _ in inside { break }
        return holder
    }

    @Test func holdersEnterInTheOrderTheyArrived() async throws {
        let gate = AsyncGate<Tag>()
        let order = Log()
        let (release, holding) = AsyncStream<Void>.makeStream()
        let first = await hold(gate, until: release) { order.append(0) }
        var followers: [Task<Void, any Error>] = []
        for number in 1...3 {
            followers.append(Task { try await gate.withGate { _ in order.append(number) } })
            await waitForWaiters(gate, number)
        }
        holding.yield()
        try await first.value
        for follower in followers { try await follower.value }
        #expect(order.values == [0, 1, 2, 3])
    }

    @Test func aCancelledWaiterLeavesTheLineAndTheOthersStillEnter() async throws {
        let gate = AsyncGate<Tag>()
        let entered = Log()
        let (release, holding) = AsyncStream<Void>.makeStream()
        let holder = await hold(gate, until: release)
        let cancelled = Task { try await gate.withGate { _ in entered.append(1) } }
        await waitForWaiters(gate, 1)
        let kept = Task { try await gate.withGate { _ in entered.append(2) } }
        await waitForWaiters(gate, 2)

        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(gate.waiterCount == 1, "the cancelled caller left the line at once, before the holder left")

        holding.yield()
        try await holder.value
        try await kept.value
        #expect(entered.values == [2], "the cancelled caller never ran its body")
    }

    @Test func aTaskCancelledBeforeItWaitsNeverEnters() async throws {
        let gate = AsyncGate<Tag>()
        let ran = Log()
        let (release, holding) = AsyncStream<Void>.makeStream()
        let holder = await hold(gate, until: release)
        let (start, starting) = AsyncStream<Void>.makeStream()
        let late = Task {
            for await _ in start { break }
            try await gate.withGate { _ in ran.append(1) }
        }
        late.cancel()
        starting.yield()
        // The gate is held: a caller already cancelled throws instead of joining the line.
        await #expect(throws: CancellationError.self) { try await late.value }
        holding.yield()
        try await holder.value
        #expect(ran.values.isEmpty)
        #expect(gate.waiterCount == 0)
    }

    @Test func aFreeGateLetsAFollowingCallerIn() async throws {
        let gate = AsyncGate<Tag>()
        let first = try await gate.withGate { _ in 1 }
        let second = try await gate.withGate { _ in 2 }
        #expect(first + second == 3)
        #expect(gate.waiterCount == 0)
    }
}
