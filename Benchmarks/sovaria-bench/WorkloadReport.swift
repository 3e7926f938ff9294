import Foundation

/// The workload rows as tables, and the answer a user asks for: the stores ranked on each
/// workload by the metric they name.
enum WorkloadReport {
    /// What the stores are ranked by (`--rank-by`).
    enum Metric: String, CaseIterable {
        /// The 99th percentile of every operation of the run phase: lower first.
        case p99
        /// The run phase's operations per second: higher first.
        case throughput
        /// Bytes on disk after the run: fewer first (stores with no files of their own last).
        case disk
    }

    /// The table of `rows` (workload rows, C rows among them), as text or Markdown.
    static func table(_ rows: [Measurement], markdown: Bool) -> [String] {
        let columns = [
            "subject", "variant", "operation", "ops/s", "p50", "p95", "p99", "p999", "max", "disk", "vs C p50",
            "vs C ops/s", "note",
        ]
        let cells = rows.map { row -> [String] in
            [
                row.subject, row.variant, row.operation, Report.count(row.opsPerSecond),
                Report.duration(row.p50Nanoseconds), row.p95Nanoseconds.map(Report.duration) ?? "",
                Report.duration(row.p99Nanoseconds), row.p999Nanoseconds.map(Report.duration) ?? "",
                Report.duration(row.maxNanoseconds), row.diskBytes.map(bytes) ?? "",
                row.cRatio.map { String(format: "%.2fx", $0) } ?? "",
                row.cMeanRatio.map { String(format: "%.2fx", 1 / max($0, 1e-9)) } ?? "", row.note ?? "",
            ]
        }
        return render(columns, cells, markdown: markdown, rightAligned: 3...11)
    }

    /// For each workload (and durability) of `rows`: the stores ranked by `metric` on the run phase,
    /// each with its durability, its figures and its ratios to the C library on the same stream.
    static func rankings(_ rows: [Measurement], by metric: Metric, markdown: Bool) -> [String] {
        let totals = rows.filter { $0.operation == WorkloadRows.allOperations && $0.variant.contains(" run ") }
        let tools = rows.filter { $0.subject == DriverCost.driverSubject || $0.subject == DriverCost.recordingSubject }
        var variants: [String] = []
        for row in totals where !variants.contains(row.variant) { variants.append(row.variant) }
        var lines: [String] = []
        for variant in variants {
            let stores = totals.filter { $0.variant == variant && !$0.subject.hasPrefix("C ") }
            // A store whose calls failed ranks last, whatever its figures: failed calls are quick.
            let failed = { (row: Measurement) in row.note?.contains(" failed") == true }
            let ranked = stores.sorted { left, right in
                if failed(left) != failed(right) { return failed(right) }
                return switch metric {
                case .p99: left.p99Nanoseconds < right.p99Nanoseconds
                case .throughput: left.opsPerSecond > right.opsPerSecond
                case .disk: (left.diskBytes ?? .max) < (right.diskBytes ?? .max)
                }
            }
            let parts = variant.split(separator: " ")
            let title = "Workload \(parts.first ?? ""), \(parts.last ?? "") writes: ranked by \(metric.rawValue)"
            lines += markdown ? ["### \(title)", ""] : [title]
            let cells = ranked.enumerated().map { place, row -> [String] in
                [
                    "\(place + 1)", row.subject, String(parts.last ?? ""), Report.count(row.opsPerSecond),
                    Report.duration(row.p99Nanoseconds), row.diskBytes.map(bytes) ?? "—",
                    row.cMeanRatio.map { String(format: "%.2fx", 1 / max($0, 1e-9)) } ?? "",
                    row.cRatio.map { String(format: "%.2fx", $0) } ?? "", failed(row) ? row.note ?? "" : "",
                ]
            }
            lines += render(
                ["#", "store", "durability", "ops/s", "p99", "disk", "ops/s vs C", "p50 vs C", "failures"], cells,
                markdown: markdown, rightAligned: 3...7)
            let workload = "\(parts.first ?? "") run"
            let driver = tools.first {
                $0.subject == DriverCost.driverSubject && $0.variant == workload
                    && $0.operation == WorkloadRows.allOperations
            }
            let recording = tools.first {
                $0.subject == DriverCost.recordingSubject && $0.variant == workload
                    && $0.operation == WorkloadRows.allOperations
            }
            if let driver, let recording {
                lines.append(
                    "The driver alone (a store that does nothing): p50 \(Report.duration(driver.p50Nanoseconds)) an "
                        + "operation, the floor under every row; RecordingOfflineStore: \(recording.note ?? "")")
            }
            lines.append("")
        }
        return lines + recommendation(rows, by: metric, markdown: markdown)
    }

    static func bytes(_ count: Int) -> String {
        switch count {
        case ..<1_024: "\(count) B"
        case ..<(1 << 20): String(format: "%.1f KiB", Double(count) / 1_024)
        case ..<(1 << 30): String(format: "%.1f MiB", Double(count) / 1_048_576)
        default: String(format: "%.2f GiB", Double(count) / 1_073_741_824)
        }
    }

    static func render(
        _ columns: [String], _ cells: [[String]], markdown: Bool, rightAligned: ClosedRange<Int>
    ) -> [String] {
        if markdown {
            return [
                "| " + columns.joined(separator: " | ") + " |",
                "|" + columns.indices.map { rightAligned.contains($0) ? "---:|" : "---|" }.joined(),
            ]
                + cells.map { "| " + $0.joined(separator: " | ") + " |" }
        }
        let widths = columns.indices.map { column in
            ([columns[column]] + cells.map { $0[column] }).map(\.count).max() ?? 0
        }
        func line(_ values: [String]) -> String {
            values.enumerated().map { column, value in
                let pad = String(repeating: " ", count: widths[column] - value.count)
                return rightAligned.contains(column) ? pad + value : value + pad
            }.joined(separator: "  ")
        }
        return [line(columns), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")]
            + cells.map(line)
    }
}
