import Foundation

/// The run's results and the machine they came from, printed as a table, JSON or Markdown.
struct Report: Codable {
    var machine: [String: String]
    var measurements: [Measurement]

    /// Sets `ratio` on every row that has a baseline row in the same run: the adapter over the
    /// raw C API of its engine called from Swift, or a wrapper (encrypted, checksummed) over the
    /// plain one; then `cRatio` where the run has the C baseline program's rows.
    mutating func computeRatios() {
        var index: [String: Measurement] = [:]
        for row in measurements { index[key(row.subject, row)] = row }
        for position in measurements.indices {
            let row = measurements[position]
            // A row whose section set its own ratio (caller, bytes) keeps it.
            guard row.ratio == nil, let baseline = Self.baseline(of: row.subject), let base = index[key(baseline, row)],
                base.p50Nanoseconds > 0, base.nanosecondsPerOp > 0
            else { continue }
            measurements[position].ratio = row.p50Nanoseconds / base.p50Nanoseconds
            measurements[position].meanRatio = row.nanosecondsPerOp / base.nanosecondsPerOp
            measurements[position].baseline = baseline
        }
        computeCRatios(index)
    }

    /// Sets `cRatio` on every row that has a C row in the same run: an adapter and its Swift raw
    /// baseline over the C program on the same engine; an encrypted get over the C get of the
    /// inner engine plus one C decrypt (the encryption wrapper's work, without its framing).
    private mutating func computeCRatios(_ index: [String: Measurement]) {
        let decrypt = measurements.first {
            $0.subject == CBaseline.sodiumSubject && $0.operation.hasPrefix("decrypt")
        }
        for position in measurements.indices {
            let row = measurements[position]
            var engine = row.subject
            if engine.hasPrefix("raw ") { engine.removeFirst("raw ".count) }
            var name = CBaseline.subject(engine)
            var extra: Measurement?
            if let inner = Self.baseline(of: row.subject), row.subject.hasPrefix("encrypted(") {
                guard row.operation == "get (random hit)", let decrypt else { continue }
                name = CBaseline.subject(inner)
                extra = decrypt
            }
            // The zero-copy get and page are held against C's, which copy their bytes out too.
            var compared = row
            if row.operation == "get (random hit, withValue)" { compared.operation = "get (random hit)" }
            if row.operation.hasPrefix("withEntries page of ") {
                compared.operation = "entries page of " + row.operation.dropFirst("withEntries page of ".count)
            }
            guard CBaseline.engines.contains(String(name.dropFirst(2))), let base = index[key(name, compared)] else {
                continue
            }
            let p50 = base.p50Nanoseconds + (extra?.p50Nanoseconds ?? 0)
            let mean = base.nanosecondsPerOp + (extra?.nanosecondsPerOp ?? 0)
            guard p50 > 0, mean > 0 else { continue }
            measurements[position].cRatio = row.p50Nanoseconds / p50
            measurements[position].cMeanRatio = row.nanosecondsPerOp / mean
            measurements[position].cBaseline = extra == nil ? name : "\(name) get + decrypt"
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
        if BenchEngines.plain.contains(where: { $0.name == subject && $0.raw != nil }) { return "raw " + subject }
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
            lines.append("## \(section == .workload ? WorkloadReport.sectionTitle(rows) : section.title)")
            if section == .workload {
                lines += WorkloadReport.table(rows, markdown: false) + [""]
                continue
            }
            // The C column only where the section has C rows (the store section of a run with the
            // C baseline), before the ratio against the Swift baseline.
            let hasC = rows.contains { $0.cRatio != nil }
            let columns =
                ["subject", "variant", "operation", "ops/s", "ns/op", "p50", "p99", "max", "spread"]
                + (hasC ? ["vs C (p50)"] : []) + ["ratio (p50) / note"]
            let cells = rows.map { row in
                [
                    row.subject, row.variant, row.operation, Self.count(row.opsPerSecond),
                    Self.duration(row.nanosecondsPerOp),
                    Self.duration(row.p50Nanoseconds), Self.duration(row.p99Nanoseconds),
                    Self.duration(row.maxNanoseconds), String(format: "±%.0f%%", row.spreadPercent / 2),
                ] + (hasC ? [Self.cRatioText(row)] : []) + [Self.ratioText(row)]
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
            lines += ["## \(section == .workload ? WorkloadReport.sectionTitle(rows) : section.title)", ""]
            if section == .workload {
                lines += WorkloadReport.table(rows, markdown: true) + [""]
                continue
            }
            let hasC = rows.contains { $0.cRatio != nil }
            lines.append(
                "| subject | variant | operation | ops/s | time/op | p50 | p99 | max | spread | "
                    + (hasC ? "vs C (p50) | " : "") + "ratio (p50) / note |")
            lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|" + (hasC ? "---|" : "") + "---|")
            for row in rows {
                let ratio = (hasC ? Self.cRatioText(row) + " | " : "") + Self.ratioText(row)
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

    /// `2.31x C sqlite (mean 2.10x)`, or nothing when the row has no C baseline.
    static func cRatioText(_ row: Measurement) -> String {
        guard let ratio = row.cRatio else { return "" }
        var text = String(format: "%.2fx %@", ratio, row.cBaseline ?? "")
        if let mean = row.cMeanRatio { text += String(format: " (mean %.2fx)", mean) }
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
