import Testing

@testable import sovaria_bench

/// The bench's hand-timed loops (the local-first section's live query and first answer after a
/// write) run one untimed call first, so the process's first, cold run of a path is never a
/// timed one.
@Suite struct StopwatchTests {
    @Test func latenciesAfterWarmUpDropTheFirstCall() async {
        var calls: [Int] = []
        let latencies = await Stopwatch.latenciesAfterWarmUp(calls: 3) { call in
            calls.append(call)
            return call == 0 ? 1_000_000 : UInt64(call * 10)
        }
        #expect(calls == [0, 1, 2, 3], "one untimed call, then the timed ones")
        #expect(latencies == [10, 20, 30], "the first (cold) call is not among the timed ones")
    }
}
