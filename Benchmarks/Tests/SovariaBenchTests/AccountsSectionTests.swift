import Foundation
import Testing

@testable import sovaria_bench

/// The accounts section (issue 60: a read and a write with accounts against without, in one run)
/// run alone: its rows for every engine it measures, each call with an account holding its ratio
/// over the same call without one. Speed itself is never asserted.
@Suite struct AccountsSectionTests {
    /// The rows an accounts section must have on memory and SQLite, as `engine: variant: operation`,
    /// that `report` lacks (or has without a ratio where one is due).
    static func missingRows(_ report: Report) -> [String] {
        let rows = report.measurements.filter { $0.section == "accounts" }
        var expected: [(engine: String, variant: String, operation: String, hasRatio: Bool)] = []
        for engine in ["memory", "sqlite"] {
            for operation in ["get (random hit)", "set (one per call, flushed)"] {
                expected += [
                    (engine, "no account", operation, false),
                    (engine, "account (49-byte prefix)", operation, true),
                    (engine, "no account, keys as long as the account's (floor)", operation, true),
                ]
            }
            expected.append((engine, "the view's own work (floor)", "check and prefix the key", true))
            for operation in [
                "read, cached (memory hit)", "read, cached (store hit, after a memory shed)", "write, offline (queued)",
            ] {
                expected += [
                    (engine, "controller, no account", operation, false),
                    (engine, "controller, account (49-byte prefix)", operation, true),
                ]
            }
        }
        return expected.compactMap { want in
            let found = rows.contains {
                $0.subject == want.engine && $0.variant == want.variant && $0.operation == want.operation
                    && (!want.hasRatio || ($0.ratio ?? 0) > 0) && $0.p50Nanoseconds > 0
            }
            return found ? nil : "\(want.engine): \(want.variant): \(want.operation)"
        }
    }

    @Test func accountsSectionComparesEachCallWithAndWithoutAnAccount() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let json = folder.appendingPathComponent("bench.json")
        let (table, status) = try await BenchSmokeTests.runBench([
            "--quick", "--count", "300", "--repeats", "1", "--section", "accounts", "--engine", "memory",
            "--engine", "sqlite", "--dir", folder.appendingPathComponent("stores").path, "--json", json.path,
        ])
        #expect(status == 0)
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: json))
        #expect(Set(report.measurements.map(\.section)) == ["accounts"])
        #expect(Self.missingRows(report) == [])
        #expect(Set(report.measurements.map(\.subject)) == ["memory", "sqlite"], "only the engines asked for")
        #expect(table.contains(BenchSection.accounts.title))
    }
}
