import Foundation

/// The run's results and the machine they came from, printed as a table, JSON or Markdown.
struct Report: Codable {
    var machine: [String: String]
    var measurements: [Measurement]

    /// Sets `ratio` on every row that has a baseline row in the same run: the adapter over the
    /// raw C API of its engine, or a wrapper (encrypted, checksummed) over the plain one.
    mutating func computeRatios() {
        var index: [String: Measurement] = [:]
        for row in measurements { index[key(row.subject, row)] = row }
        for position in measurements.indices {
            let row = measurements[position]
            guard let baseline = Self.baseline(of: row.subject), let base = index[key(baseline, row)],
                base.p50Nanoseconds > 0, base.nanosecondsPerOp > 0
            else { continue }
            measurements[position].ratio = row.p50Nanoseconds / base.p50Nanoseconds
            measurements[position].meanRatio = row.nanosecondsPerOp / base.nanosecondsPerOp
            measurements[position].baseline = baseline
        }
    }

    private func key(_ subject: String, _ row: Measurement) -> String {
        "\(row.section)|\(subject)|\(row.variant)|\(row.operation)"
    }

    /// `raw sqlite` for `sqlite`; `sqlite` for `encrypted(sqlite)` and `checksummed(sqlite)`.
    static func baseline(of subject: String) -> String? {
        for wrapper in ["encrypted(", "checksummed("] where subject.hasPrefix(wrapper) && subject.hasSuffix(")") {
            return String(subject.dropFirst(wrapper.count).dropLast())
        }
        if ["sqlite", "lmdb", "leveldb", "postgres"].contains(subject) { return "raw " + subject }
        return nil
    }

    var header: String {
        machine.keys.sorted().map { "\($0): \(machine[$0] ?? "")" }.joined(separator: " · ")
    }

    func table() -> String {
        var lines = ["Sovaria benchmark — \(header)", ""]
        for section in BenchSection.allCases {
            let rows = measurements.filter { $0.section == section.rawValue }
            guard !rows.isEmpty else { continue }
            lines.append("## \(section.title)")
            let columns = [
                "subject", "variant", "operation", "ops/s", "ns/op", "p50", "p99", "max", "spread",
                "ratio (p50) / note",
            ]
            let cells = rows.map { row in
                [
                    row.subject, row.variant, row.operation, Self.count(row.opsPerSecond),
                    Self.duration(row.nanosecondsPerOp),
                    Self.duration(row.p50Nanoseconds), Self.duration(row.p99Nanoseconds),
                    Self.duration(row.maxNanoseconds), String(format: "±%.0f%%", row.spreadPercent / 2),
                    Self.ratioText(row),
                ]
            }
            let widths = columns.indices.map { column in
                ([columns[column]] + cells.map { $0[column] }).map(\.count).max() ?? 0
            }
            func line(_ values: [String]) -> String {
                values.enumerated().map { column, value in
                    let pad = String(repeating: " ", count: widths[column] - value.count)
                    return column >= 3 && column <= 8 ? pad + value : value + pad
                }.joined(separator: "  ")
            }
            lines.append(line(columns))
            lines.append(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
            lines += cells.map(line)
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }

    func markdown() -> String {
        var lines = ["# Sovaria benchmark", "", header, ""]
        for section in BenchSection.allCases {
            let rows = measurements.filter { $0.section == section.rawValue }
            guard !rows.isEmpty else { continue }
            lines += ["## \(section.title)", ""]
            lines.append(
                "| subject | variant | operation | ops/s | time/op | p50 | p99 | max | spread | ratio (p50) / note |")
            lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
            for row in rows {
                let ratio = Self.ratioText(row)
                lines.append(
                    "| \(row.subject) | \(row.variant) | \(row.operation) | \(Self.count(row.opsPerSecond)) | "
                        + "\(Self.duration(row.nanosecondsPerOp)) | \(Self.duration(row.p50Nanoseconds)) | "
                        + "\(Self.duration(row.p99Nanoseconds)) | \(Self.duration(row.maxNanoseconds)) | "
                        + String(format: "±%.0f%%", row.spreadPercent / 2) + " | \(ratio) |")
            }
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }

    /// `1.12x raw sqlite (mean 1.30x)`, or the row's note when it has no baseline.
    static func ratioText(_ row: Measurement) -> String {
        guard let ratio = row.ratio else { return row.note ?? "" }
        var text = String(format: "%.2fx %@", ratio, row.baseline ?? "")
        if let mean = row.meanRatio { text += String(format: " (mean %.2fx)", mean) }
        if let note = row.note { text += "; " + note }
        return text
    }

    static func duration(_ nanoseconds: Double) -> String {
        switch nanoseconds {
        case ..<1_000: String(format: "%.0f ns", nanoseconds)
        case ..<1_000_000: String(format: "%.1f µs", nanoseconds / 1_000)
        case ..<1_000_000_000: String(format: "%.1f ms", nanoseconds / 1_000_000)
        default: String(format: "%.2f s", nanoseconds / 1_000_000_000)
        }
    }

    static func count(_ value: Double) -> String {
        switch value {
        case ..<10_000: String(format: "%.0f", value)
        case ..<10_000_000: String(format: "%.0fk", value / 1_000)
        default: String(format: "%.1fM", value / 1_000_000)
        }
    }
}
