#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The time a ``WorkloadDriver`` measures latencies and schedules open-loop records with; a test
/// passes its own so it never sleeps.
///
/// - Important: `now()` must never go backwards, and must be safe to call from any task.
package protocol WorkloadClock: Sendable {
    /// Nanoseconds since an arbitrary fixed point.
    func now() -> UInt64

    /// Returns at ``now()`` = `deadline` or later.
    func sleep(until deadline: UInt64) async
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`): one `clock_gettime` call, about 20 ns.
package struct MonotonicWorkloadClock: WorkloadClock {
    /// Below this much time left, `sleep(until:)` spins: a task sleep often wakes tens of
    /// microseconds late, which at high target rates would delay every record.
    private static let spinNanoseconds: UInt64 = 200_000

    /// The system's monotonic clock.
    package init() {}

    /// The monotonic time in nanoseconds.
    @inline(__always)
    package func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// Sleeps until shortly before `deadline`, then yields until it passes.
    package func sleep(until deadline: UInt64) async {
        var current = now()
        if current + Self.spinNanoseconds < deadline {
            try? await Task.sleep(nanoseconds: deadline - current - Self.spinNanoseconds)
            current = now()
        }
        while current < deadline {
            await Task.yield()
            current = now()
        }
    }
}
