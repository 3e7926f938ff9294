import Foundation

/// The answer across the workloads that ran: which store to pick for this mix, and where a
/// percentile rests on too few operations to mean anything.
extension WorkloadReport {
    /// The workloads `rows` ran, in their order (`A`, `C`, or a trace's name).
    static func workloads(_ rows: [Measurement]) -> [String] {
        var names: [String] = []
        for row in rows where row.section == BenchSection.workload.rawValue {
            let name = WorkloadRows.workload(ofVariant: row.variant)
            if !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// `workload A` or `workloads A, C`.
    static func naming(_ workloads: [String]) -> String {
        (workloads.count == 1 ? "workload " : "workloads ") + workloads.joined(separator: ", ")
    }

    /// The workload section's title, naming the workloads that ran.
    static func sectionTitle(_ rows: [Measurement]) -> String {
        let names = naming(workloads(rows))
        return names.prefix(1).uppercased() + names.dropFirst()
            + ": every store on one operation stream, the C library on the same"
    }

    /// The closing answer: for each durability, the persistent store that did best across every
    /// workload by `metric` (the geometric mean of its distance to each workload's best store), with
    /// its place on each and the runner-up. Stores are never compared across durabilities: synced
    /// and flushed writes are different promises.
    static func recommendation(_ rows: [Measurement], by metric: Metric, markdown: Bool) -> [String] {
        let totals = rows.filter {
            $0.section == BenchSection.workload.rawValue && $0.operation == WorkloadRows.allOperations
                && $0.variant.contains(" run ") && !$0.subject.hasPrefix("C ")
        }
        let workloads = workloads(totals)
        guard !workloads.isEmpty else { return [] }
        let title = "Which engine for \(naming(workloads)) (by \(metric.rawValue))"
        var lines = markdown ? ["## \(title)", ""] : [title]
        var durabilities: [String] = []
        for row in totals {
            let durability = String(row.variant.split(separator: " ").last ?? "")
            if !durabilities.contains(durability) { durabilities.append(durability) }
        }
        let failed = { (row: Measurement) in row.note?.contains(" failed") == true }
        for durability in durabilities {
            let runs = totals.filter { $0.variant.hasSuffix(" \(durability)") }
            // Per workload: every store's distance to the best (1 = the best), and its place.
            var distances: [String: [Double]] = [:]
            var places: [String: [Int]] = [:]
            var excluded: [String: String] = [:]
            for workload in workloads {
                let stores = runs.filter { WorkloadRows.workload(ofVariant: $0.variant) == workload }
                let ranked = rank(stores.filter { !failed($0) && value($0, metric) != nil }, by: metric)
                guard let best = ranked.first.flatMap({ value($0, metric) }) else { continue }
                for (place, row) in ranked.enumerated() {
                    let distance = distanceToBest(value(row, metric) ?? best, best: best, metric: metric)
                    distances[row.subject, default: []].append(distance)
                    places[row.subject, default: []].append(place + 1)
                }
                for row in stores where failed(row) { excluded[row.subject] = "failed calls on \(workload)" }
                if metric == .disk {
                    for row in stores where row.diskBytes == nil { excluded[row.subject] = "no files of its own" }
                }
            }
            let candidates = distances.filter { subject, values in
                values.count == workloads.count && excluded[subject] == nil && !isMemory(subject)
            }.map { (subject: $0.key, score: geometricMean($0.value)) }.sorted {
                $0.score != $1.score ? $0.score < $1.score : $0.subject < $1.subject
            }
            let scope = "\(workloads.joined(separator: " + ")), \(durability) writes, by \(metric.rawValue)"
            guard let winner = candidates.first else {
                // A durability only the memory store ran: the sentence about it below says why.
                if !runs.allSatisfy({ isMemory($0.subject) }) {
                    lines.append(
                        "No persistent store ran every workload without failures (\(scope)): nothing to recommend.")
                }
                continue
            }
            let standing = zip(workloads, places[winner.subject] ?? []).map { "\(ordinal($1)) on \($0)" }
            var line =
                "Recommended for \(scope): \(winner.subject) — \(standing.joined(separator: ", ")); within "
                + String(format: "%.2fx", winner.score) + " of the best \(metricName(metric)) on each workload "
                + "(geometric mean)"
            if candidates.count > 1 {
                line +=
                    "; next "
                    + candidates.dropFirst().prefix(2).map { "\($0.subject) " + String(format: "%.2fx", $0.score) }
                    .joined(separator: ", ")
            }
            line += "."
            if metric == .p99 {
                let thin = workloads.filter { workload in
                    runs.contains {
                        $0.subject == winner.subject && WorkloadRows.workload(ofVariant: $0.variant) == workload
                            && ($0.operationCount ?? .max) < 100
                    }
                }
                if !thin.isEmpty {
                    line +=
                        " Its p99 on \(thin.joined(separator: ", ")) rests on fewer than 100 operations: run more "
                        + "(--operations) before trusting this order."
                }
            }
            lines.append(line)
            for (subject, why) in excluded.sorted(by: { $0.key < $1.key }) where !isMemory(subject) {
                lines.append("Not recommended: \(subject) (\(why)).")
            }
        }
        if totals.contains(where: { isMemory($0.subject) }) {
            lines.append("The memory store keeps nothing across launches: ranked above, never recommended.")
        }
        if durabilities.count > 1 {
            lines.append(
                "Stores are compared within one durability: synced writes survive a power cut, flushed ones a crash "
                    + "of the app only.")
        }
        return lines + [""] + fewOperationsWarnings(rows)
    }

    /// Warnings for the rows whose percentiles rest on too few operations: a p99 needs 100 to be
    /// more than the slowest call, a p99.9 1,000. Rows of one variant and operation share a count
    /// (every store runs the same stream), so each is named once.
    static func fewOperationsWarnings(_ rows: [Measurement]) -> [String] {
        var seen: Set<String> = []
        var counts: [(variant: String, operation: String, count: Int)] = []
        // The driver's and the recorder's rows (a variant with no durability) repeat the stores'.
        for row in rows where row.section == BenchSection.workload.rawValue {
            guard let count = row.operationCount, count < 1_000,
                row.variant.hasSuffix(" synced") || row.variant.hasSuffix(" flushed"),
                seen.insert("\(row.variant)\u{0}\(row.operation)").inserted
            else { continue }
            counts.append((row.variant, row.operation, count))
        }
        func listing(_ selected: [(variant: String, operation: String, count: Int)]) -> String {
            var variants: [String] = []
            for entry in selected where !variants.contains(entry.variant) { variants.append(entry.variant) }
            return variants.map { variant in
                "\(variant): "
                    + selected.filter { $0.variant == variant }.map { "\($0.operation) \($0.count)" }
                    .joined(separator: ", ")
            }.joined(separator: "; ")
        }
        var lines: [String] = []
        let underHundred = counts.filter { $0.count < 100 }
        if !underHundred.isEmpty {
            lines.append(
                "Warning: p99 rests on fewer than 100 operations here (it is about the slowest call, and p99.9 the "
                    + "slowest): " + listing(underHundred) + ".")
        }
        let underThousand = counts.filter { $0.count >= 100 }
        if !underThousand.isEmpty {
            lines.append(
                "Warning: p99.9 rests on fewer than 1,000 operations here (it is about the slowest call): "
                    + listing(underThousand) + ".")
        }
        return lines.isEmpty ? [] : lines + [""]
    }

    /// `rows` best first by `metric`.
    private static func rank(_ rows: [Measurement], by metric: Metric) -> [Measurement] {
        rows.sorted { left, right in
            switch metric {
            case .p99: left.p99Nanoseconds < right.p99Nanoseconds
            case .throughput: left.opsPerSecond > right.opsPerSecond
            case .disk: (left.diskBytes ?? .max) < (right.diskBytes ?? .max)
            }
        }
    }

    private static func value(_ row: Measurement, _ metric: Metric) -> Double? {
        switch metric {
        case .p99: row.p99Nanoseconds
        case .throughput: row.opsPerSecond
        case .disk: row.diskBytes.map(Double.init)
        }
    }

    /// How far `value` is from `best`, as a factor of 1 or more.
    private static func distanceToBest(_ value: Double, best: Double, metric: Metric) -> Double {
        let (worse, better) = metric == .throughput ? (best, value) : (value, best)
        return better > 0 ? max(1, worse / better) : (worse > 0 ? .infinity : 1)
    }

    private static func metricName(_ metric: Metric) -> String {
        switch metric {
        case .p99: "p99"
        case .throughput: "ops/s"
        case .disk: "bytes on disk"
        }
    }

    private static func geometricMean(_ values: [Double]) -> Double {
        values.isEmpty ? .infinity : exp(values.map { log($0) }.reduce(0, +) / Double(values.count))
    }

    private static func ordinal(_ place: Int) -> String {
        switch place {
        case 1: "first"
        case 2: "second"
        case 3: "third"
        default: "#\(place)"
        }
    }

    /// Whether `subject` is the memory store (or a wrapper around it): nothing persists.
    private static func isMemory(_ subject: String) -> Bool {
        subject == "memory" || subject.hasSuffix("(memory)")
    }
}
