import Foundation
import SovariaPlumbing
import Synchronization
import Testing

@testable import Sovaria

/// Group commit on its own: what waits while a commit runs is committed together, each caller
/// gets its own item's outcome, and nothing is left waiting.
@Suite struct GroupCommitTests {
    /// A commit that records its groups and holds the first one until the test lets it go.
    final class Recorder: Sendable {
        let groups = Mutex<[[Int]]>([])
        /// Which callers' writes succeeded.
        let outcomes = Mutex<[Int: Bool]>([:])
        let release: AsyncStream<Void>
        let letGo: AsyncStream<Void>.Continuation
        let firstStarted: AsyncStream<Void>
        let started: AsyncStream<Void>.Continuation
        let queue = BlockingWorkQueue(label: "group-commit-test")

        init() {
            (release, letGo) = AsyncStream<Void>.makeStream()
            (firstStarted, started) = AsyncStream<Void>.makeStream()
        }

        /// Odd items fail; the first group waits for the test.
        func commit(_ items: [Int]) -> [Result<Void, any Error>] {
            let first = groups.withLock { groups in
                groups.append(items)
                return groups.count == 1
            }
            if first {
                started.yield()
                let semaphore = DispatchSemaphore(value: 0)
                Task {
                    for await _ in release { break }
                    semaphore.signal()
                }
                semaphore.wait()
            }
            return items.map { $0 % 2 == 1 ? .failure(CocoaError(.fileWriteUnknown)) : .success(()) }
        }
    }

    @Test(.timeLimit(.minutes(10))) func writesThatArriveDuringACommitShareTheNextOne() async throws {
        let recorder = Recorder()
        let commits = GroupCommit<Int>(queue: recorder.queue, maxSizePerCommit: 100) { recorder.commit($0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await commits.write(0, size: 1)
                recorder.outcomes.withLock { $0[0] = true }
            }
            for await _ in recorder.firstStarted { break }
            for item in 1...20 {
                group.addTask {
                    do {
                        try await commits.write(item, size: 1)
                        recorder.outcomes.withLock { $0[item] = true }
                    } catch {
                        recorder.outcomes.withLock { $0[item] = false }
                    }
                }
            }
            while commits.waitingCount < 20 { await Task.yield() }
            recorder.letGo.yield()
            try await group.waitForAll()
        }
        let groups = recorder.groups.withLock { $0 }
        #expect(groups.count == 2 && groups[0] == [0], "the first commit alone, then one for everything that waited")
        #expect(Set(groups[1]) == Set(1...20) && groups[1].count == 20)
        let results = recorder.outcomes.withLock { $0 }
        #expect(results.count == 21)
        #expect((0...20).allSatisfy { results[$0] == ($0 % 2 == 0) }, "each caller got its own item's outcome")
        #expect(commits.waitingCount == 0)
    }

    @Test func aCommitTakesItemsUpToItsBound() async throws {
        let recorder = Recorder()
        recorder.letGo.yield()  // no hold
        let commits = GroupCommit<Int>(queue: recorder.queue, maxSizePerCommit: 10) { recorder.commit($0) }
        try await commits.write(0, size: 50)
        #expect(recorder.groups.withLock { $0 } == [[0]], "an item over the bound still commits, alone")
    }
}
