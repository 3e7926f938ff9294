import Foundation
import Testing

@testable import SovariaCache

@Suite struct MemoryCacheTests {
    @Test func aReadProtectsAnEntryFromEviction() {
        // The seed's example: capacity three, a read of avatar-1 makes avatar-2 the one to go.
        let cache = MemoryCache<String, Int>(countLimit: 3)
        cache.set(101, forKey: "avatar-1")
        cache.set(102, forKey: "avatar-2")
        cache.set(103, forKey: "avatar-3")
        #expect(cache.value(forKey: "avatar-1") == 101)
        cache.set(104, forKey: "avatar-4")
        #expect(cache.value(forKey: "avatar-2") == nil)
        #expect(cache.value(forKey: "avatar-1") == 101)
        #expect(cache.keysByRecency == ["avatar-1", "avatar-4", "avatar-3"])
    }

    @Test func costLimitEvictsLeastRecentlyUsedFirst() {
        let cache = MemoryCache<Int, String>(costLimit: 100)
        for key in 0..<5 { cache.set("v\(key)", forKey: key, cost: 30) }
        #expect(cache.totalCost == 90)
        #expect(cache.keysByRecency == [4, 3, 2])
        cache.set("too big", forKey: 9, cost: 101)
        #expect(cache.value(forKey: 9) == nil, "an entry over the whole limit is not kept")
        cache.set("replaced", forKey: 3, cost: 70)
        #expect(cache.keysByRecency == [3, 4])
        #expect(cache.totalCost == 100)
        #expect(cache.removeValue(forKey: 4) == "v4")
        #expect(cache.totalCost == 70 && cache.count == 1)
        cache.removeAll()
        #expect(cache.count == 0 && cache.totalCost == 0)
    }

    @Test func reusesSlotsAndKeepsOrderOverManyOperations() {
        // Against a simple model: an array ordered by recency.
        let cache = MemoryCache<Int, Int>(countLimit: 50)
        var model: [Int] = []
        var generator = SystemRandomNumberGenerator()
        for step in 0..<20_000 {
            let key = Int.random(in: 0..<120, using: &generator)
            if step % 3 == 0 {
                let hit = cache.value(forKey: key)
                #expect((hit != nil) == model.contains(key))
                if hit != nil { model.removeAll { $0 == key }; model.insert(key, at: 0) }
            } else if step % 7 == 0 {
                cache.removeValue(forKey: key)
                model.removeAll { $0 == key }
            } else {
                cache.set(key, forKey: key)
                model.removeAll { $0 == key }
                model.insert(key, at: 0)
                if model.count > 50 { model.removeLast() }
            }
        }
        #expect(cache.keysByRecency == model)
    }

    @Test func isSafeFromManyTasks() async {
        let cache = MemoryCache<Int, Int>(countLimit: 100, costLimit: 1_000)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<32 {
                group.addTask {
                    for step in 0..<2_000 {
                        let key = (task * 31 + step) % 150
                        if step.isMultiple(of: 2) {
                            cache.set(step, forKey: key, cost: step % 20)
                        } else {
                            _ = cache.value(forKey: key)
                        }
                    }
                }
            }
        }
        #expect(cache.count <= 100)
        #expect(cache.totalCost <= 1_000)
        #expect(cache.keysByRecency.count == cache.count)
    }
}

@Suite struct SingleFlightTests {
    /// A fetch that waits until the test lets it go.
    final class HeldFetch: Sendable {
        let calls = Counter()
        let release: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation

        init() { (release, continuation) = AsyncStream<Void>.makeStream() }

        func run(failing: Bool) async throws -> String {
            _ = calls.increment()
            for await _ in release { break }
            if failing { throw CocoaError(.fileReadUnknown) }
            return "fetched"
        }
    }

    @Test func fiftyConcurrentMissesShareOneFetch() async throws {
        let flights = SingleFlight<String, String>()
        let fetch = HeldFetch()
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { try await flights.run("key") { try await fetch.run(failing: false) } } }
            while flights.callerCount(for: "key") < 50 { await Task.yield() }
            fetch.continuation.yield()
            for try await value in group { #expect(value == "fetched") }
        }
        #expect(fetch.calls.increment() == 2, "exactly one fetch ran")
        #expect(flights.runningCount == 0)
    }

    @Test func anErrorReachesEveryWaiterAndTheNextCallTriesAgain() async throws {
        let flights = SingleFlight<String, String>()
        let fetch = HeldFetch()
        let failures = Counter()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do { _ = try await flights.run("key") { try await fetch.run(failing: true) } } catch {
                        _ = failures.increment()
                    }
                }
            }
            while flights.callerCount(for: "key") < 50 { await Task.yield() }
            fetch.continuation.yield()
        }
        #expect(failures.increment() == 51, "all 50 saw the error")
        let retried = Counter()
        let value = try await flights.run("key") {
            _ = retried.increment()
            return "second try"
        }
        #expect(value == "second try" && retried.increment() == 2)
    }

    @Test func aTicketSharesAFlightThatFinishedAfterItWasTaken() async throws {
        let flights = SingleFlight<String, String>()
        let runs = Counter()
        var ticket: SingleFlight<String, String>.Ticket? = flights.ticket()
        // A flight that starts and finishes while the ticket's look-up runs.
        let first = try await flights.run("key") { "run \(runs.increment())" }
        let shared = try await flights.run("key", sharing: .finishedAfter(try #require(ticket))) {
            "run \(runs.increment())"
        }
        #expect(first == "run 1" && shared == "run 1", "the finished flight's answer, no second run")
        #expect(flights.finishedCount == 1)
        ticket = nil
        #expect(flights.finishedCount == 0, "nothing is kept once no older ticket is held")
        // A ticket taken after the flight finished: its look-up could see the answer, so a miss
        // means a new flight.
        let later = flights.ticket()
        let fresh = try await flights.run("key", sharing: .finishedAfter(later)) { "run \(runs.increment())" }
        #expect(fresh == "run 2")
    }

    @Test func aFinishedErrorIsSharedLikeARunningOne() async throws {
        let flights = SingleFlight<String, String>()
        let ticket = flights.ticket()
        await #expect(throws: CocoaError.self) {
            try await flights.run("key") { throw CocoaError(.fileReadUnknown) }
        }
        await #expect(throws: CocoaError.self) {
            try await flights.run("key", sharing: .finishedAfter(ticket)) { "not run" }
        }
        flights.forgetFinished("key")
        #expect(try await flights.run("key", sharing: .finishedAfter(ticket)) { "run again" } == "run again")
    }

    @Test(.timeLimit(.minutes(10))) func startedAfterWaitsOutAnEarlierFlightAndSharesTheNextOne() async throws {
        let flights = SingleFlight<String, String>()
        let fetch = HeldFetch()
        let runs = Counter()
        async let earlier = flights.run("key") { try await fetch.run(failing: false) }
        while flights.callerCount(for: "key") < 1 { await Task.yield() }
        let ticket = flights.ticket()
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    try await flights.run("key", sharing: .startedAfter(ticket)) { "run \(runs.increment())" }
                }
            }
            while flights.waitingCount(for: "key") < 2 { await Task.yield() }
            fetch.continuation.yield()
            for try await value in group { #expect(value == "run 1", "one new flight, shared by both") }
        }
        #expect(try await earlier == "fetched")
        #expect(runs.increment() == 2)
    }
}
