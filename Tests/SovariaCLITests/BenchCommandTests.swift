import Foundation
import Testing

/// `sovaria bench` hands its arguments to the sovaria-bench built beside it.
@Suite struct BenchCommandTests {
    @Test func runsTheBenchmarkBuiltBesideIt() async throws {
        let run = try await CommandRunner.run(["bench", "--help"])
        #expect(run.output.contains("usage: sovaria-bench") || run.errors.contains("usage: sovaria-bench"), "\(run)")
        #expect(run.errors.contains("debug build"), "a debug build says its figures are not comparable")
    }
}
