/// Measures the store operations on one subject: fill in batches, random gets, misses,
/// prefix scans, paging, single sets, batched deletes.
struct StoreOperations {
    let workload: Workload
    let stopwatch: Stopwatch
    /// Single sets per repeat (each waits for the disk when synced, so fewer of them).
    let singleSets: Int
    let progress: Progress

    func run(_ subject: any BenchSubject, name: String, variant: String) async throws -> [Measurement] {
        var rows: [Measurement] = []
        func record(_ operation: String, _ sample: Sample) {
            rows.append(
                sample.measurement(
                    section: BenchSection.store.rawValue, subject: name, variant: variant, operation: operation))
        }
        let batches = workload.batches
        let count = workload.count
        progress.update("\(name) \(variant): set (batch)")
        record(
            "set (batch of \(workload.batchSize))",
            try await stopwatch.measure(calls: batches.count, itemsPerCall: workload.batchSize, warmUp: false) {
                round, call in try await subject.setBatch(batches[call], variant: round % 2)
            })

        progress.update("\(name) \(variant): get")
        let gets = min(count, 100_000)
        record(
            "get (random hit)",
            try await stopwatch.measure(calls: gets) { _, call in
                guard try await subject.get(workload.shuffled[call]) else {
                    throw BenchError.failed("\(name): get missed")
                }
            })
        if try await subject.getBytes(workload.shuffled[0]) != nil {
            record(
                "get (random hit, withValue)",
                try await stopwatch.measure(calls: gets) { _, call in
                    guard try await subject.getBytes(workload.shuffled[call]) == true else {
                        throw BenchError.failed("\(name): withValue missed")
                    }
                })
        }
        record(
            "get (miss)",
            try await stopwatch.measure(calls: min(gets, 20_000)) { _, call in
                guard try await !subject.getMiss(workload.shuffled[call]) else {
                    throw BenchError.failed("\(name): miss hit")
                }
            })

        progress.update("\(name) \(variant): scan")
        let scans = min(workload.prefixes.count, 1_000)
        record(
            "keys(prefix) of 100",
            try await stopwatch.measure(calls: scans) { _, call in
                _ = try await subject.scan(prefix: (call * 7_919) % workload.prefixes.count)
            })
        let pageSize = 1_000
        let pages = (count + pageSize - 1) / pageSize
        /// Every entry, a page at a time through `read` (given the page's size and whether it is
        /// the first), per entry.
        func pagesThrough(_ read: (_ limit: Int, _ restart: Bool) async throws -> Int?) async throws -> Sample {
            try await stopwatch.measure(calls: pages, itemsPerCall: pageSize) { _, call in
                let read = try await read(pageSize, call == 0)
                guard read == min(pageSize, count - call * pageSize) else {
                    throw BenchError.failed("\(name): short page")
                }
            }
        }
        record("entries page of \(pageSize), per entry", try await pagesThrough(subject.nextPage))
        if try await subject.nextPageBytes(limit: 1, restart: true) != nil {
            record("withEntries page of \(pageSize), per entry", try await pagesThrough(subject.nextPageBytes))
        }

        progress.update("\(name) \(variant): set (single)")
        let singles = min(singleSets, count)
        record(
            "set (single)",
            // Each round writes the other value than the round before (and than the fill).
            try await stopwatch.measure(calls: singles) { round, call in
                try await subject.set(workload.shuffled[call], variant: (round + stopwatch.repeats) % 2)
            })

        progress.update("\(name) \(variant): delete (batch)")
        record(
            "delete (batch of \(workload.batchSize))",
            try await stopwatch.measure(
                calls: batches.count, itemsPerCall: workload.batchSize, warmUp: false,
                prepare: { round in
                    if round > 0 { for batch in batches { try await subject.setBatch(batch, variant: 0) } }
                }
            ) { _, call in try await subject.deleteBatch(batches[call]) })
        return rows
    }
}
