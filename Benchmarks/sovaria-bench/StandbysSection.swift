import Foundation
import Sovaria
import SovariaPostgres
import SovariaTestServers

/// Reads from streaming standbys (issue 51), on a primary and two standbys of its own
/// (`PostgresStandbyCluster`, `fsync=on`), all on this machine:
///
/// - 16 readers of one store: every read on the primary, then `.standbyIfCaughtUp` and
///   `.anyStandby` over both standbys, then `.standbyIfCaughtUp` with the store also writing
///   (one write in 20). Each row says what share of the reads each server answered and each
///   server's CPU time per read (utime + stime of its processes, from `/proc`): the servers share
///   this machine's cores, so the total alone would hide where the work went.
/// - The LSN check: one reader on one standby, a plain store connected to it against a
///   `.standbyIfCaughtUp` store reading from it (one pipeline with the two position queries).
/// - `.synced` writes with `remote_apply` against `on`, one writer.
/// - A failover, last (it kills the primary): 16 readers of one `.standbyIfCaughtUp` store, reads/s
///   before, then the primary killed (SIGKILL), the synchronous standby promoted and one write on
///   it, then reads/s of the first reads after (while the second standby, still following the
///   dead primary, has not yet been behind for the bound) and of the same count after those, in
///   one row.
struct StandbysSection {
    let options: BenchOptions
    let progress: Progress

    static let readers = 16
    private static let keyCount = 1_000

    func run() async throws -> [Measurement] {
        guard options.runs(engine: "postgres") else { return [] }
        progress.update("postgres standbys: starting a primary and two standbys")
        let cluster = try await PostgresStandbyCluster.start(serverOptions: "-c fsync=on -c max_connections=200")
        do {
            let rows = try await measure(cluster)
            try await cluster.destroy()
            return rows
        } catch {
            try? await cluster.destroy()
            throw error
        }
    }

    private func measure(_ cluster: PostgresStandbyCluster) async throws -> [Measurement] {
        let section = BenchSection.standbys.rawValue
        let table = BenchPostgres.freshTableName()
        let filler = try PostgresOfflineStore(connection: cluster.primary, table: table)
        try await filler.write(
            (0..<Self.keyCount).map { .set(key: Self.key($0), value: String(repeating: "v", count: 100)) })
        try await cluster.waitForFirstStandby()
        let reads = options.pick(quick: 1_600, standard: 8_000, full: 32_000)
        var rows: [Measurement] = []
        var primaryOnly: Double?
        let variants: [(String, PostgresOfflineStore.ReadPolicy, writes: Bool)] = [
            ("primary only", .primary, false), ("standbyIfCaughtUp, 2 standbys", .standbyIfCaughtUp, false),
            ("anyStandby, 2 standbys", .anyStandby, false),
            ("standbyIfCaughtUp, 2 standbys, 1 write in 20", .standbyIfCaughtUp, true),
        ]
        for (name, policy, writes) in variants {
            progress.update("postgres standbys: \(Self.readers) readers, \(name)")
            var configuration = PostgresOfflineStore.Configuration(maxConnections: Self.readers)
            configuration.readPolicy = policy
            let store = try PostgresOfflineStore(
                primary: cluster.primary, standbys: cluster.standbys, table: table, configuration: configuration)
            try await store.checkServers()
            let cpuBefore = cluster.folders.map(ServerCPU.seconds)
            let (sample, elapsed) = try await readConcurrently(store, reads: reads, writes: writes)
            let cpu = zip(cluster.folders.map(ServerCPU.seconds), cpuBefore).map { after, before in
                after.flatMap { after in before.map { after - $0 } }
            }
            var row = sample.measurement(
                section: section, subject: "postgres", variant: "\(Self.readers) readers, \(name)",
                operation: writes ? "get (+ set), \(reads) calls" : "get, \(reads) reads")
            let throughput = Double(reads) / (elapsed / 1e9)
            var note = Self.shares(store.readCounts, cpu: cpu, reads: reads)
            if let primaryOnly, policy != .primary {
                note = String(format: "%.2fx the reads/s of the primary alone; ", throughput / primaryOnly) + note
            } else if policy == .primary {
                primaryOnly = throughput
            }
            row.note = note
            rows.append(row)
            store.closeIdleConnections()
        }
        rows += try await lsnCheck(cluster, table: table, section: section)
        rows += try await remoteApply(cluster, section: section)
        rows.append(try await failover(cluster, table: table, section: section, reads: reads))
        return rows
    }

    /// Reads/s of one `.standbyIfCaughtUp` store before and after a failover (the primary killed,
    /// standby 1 promoted, one write on it): the second standby never catches up again, and is
    /// left out of the reads instead of making each wait `standbyWait` (issue 59: 47 reads/s after,
    /// 4,705 before). Leaves the cluster without its primary: run last.
    private func failover(
        _ cluster: PostgresStandbyCluster, table: String, section: String, reads: Int
    ) async throws -> Measurement {
        progress.update("postgres standbys: \(Self.readers) readers, before and after a failover")
        var configuration = PostgresOfflineStore.Configuration(maxConnections: Self.readers)
        configuration.readPolicy = .standbyIfCaughtUp
        configuration.connectTimeout = .seconds(2)
        let store = try PostgresOfflineStore(
            primary: cluster.primary, standbys: cluster.standbys, table: table, configuration: configuration)
        try await store.checkServers()
        let (_, beforeElapsed) = try await readConcurrently(store, reads: reads, writes: false)
        let before = store.readCounts
        try await cluster.failOver()
        try await store.set(Self.key(0), "after the failover")
        // The first reads after: they wait for standby 2 until it has been behind for the bound
        // (a second), and the readers' connections to the dead primary are replaced.
        let (_, firstElapsed) = try await readConcurrently(store, reads: reads, writes: false)
        let settled = store.readCounts
        let (sample, afterElapsed) = try await readConcurrently(store, reads: reads, writes: false)
        let after = store.readCounts
        let rates = [beforeElapsed, firstElapsed, afterElapsed].map { Double(reads) / ($0 / 1e9) }
        var row = sample.measurement(
            section: section, subject: "postgres", variant: "\(Self.readers) readers, standbyIfCaughtUp, failover",
            operation: "get after the primary's kill -9 and standby 1's promotion, \(reads) reads")
        // The standbys still reading after the failover (standby 2): what they answered since.
        let stranded = after.standbys.map { now in
            now.reads - (settled.standbys.first { $0.server == now.server }?.reads ?? 0)
        }.reduce(0, +)
        row.note = String(
            format: "reads/s before %.0f, after %.0f (%.2fx; the first %d reads after: %.0f, %d waited); "
                + "after: primary (standby 1 promoted) %d reads, standby 2 %d, %d waited",
            rates[0], rates[2], rates[2] / max(1, rates[0]), reads, rates[1], settled.waited - before.waited,
            after.primary - settled.primary, stranded, after.waited - settled.waited)
        store.closeIdleConnections()
        return row
    }

    /// `reads` calls over ``readers`` tasks, each a `get` (or, one call in 20 with `writes`, a
    /// `set`): the latencies and the elapsed nanoseconds.
    private func readConcurrently(
        _ store: PostgresOfflineStore, reads: Int, writes: Bool
    ) async throws -> (Sample, Double) {
        let latencies = Latencies()
        let perReader = max(1, reads / Self.readers)
        let start = Stopwatch.now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for reader in 0..<Self.readers {
                group.addTask {
                    for index in 0..<perReader {
                        let key = Self.key((reader &* 7_919 &+ index &* 104_729) % Self.keyCount)
                        let callStart = Stopwatch.now()
                        if writes, index % 20 == 19 {
                            try await store.set(key, "w\(index)")
                        } else {
                            _ = try await store.get(key)
                        }
                        latencies.append(Double(Stopwatch.now() - callStart))
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = Double(Stopwatch.now() - start)
        return (
            Sample(perItemNanoseconds: [elapsed / Double(perReader * Self.readers)], callLatencies: latencies.all),
            elapsed
        )
    }

    /// One reader on the first standby: a plain store connected to it, against a
    /// `.standbyIfCaughtUp` store over it alone (the position query before and after each read,
    /// in its pipeline). Alternating blocks of 200 calls, so both see the same machine.
    private func lsnCheck(
        _ cluster: PostgresStandbyCluster, table: String, section: String
    ) async throws -> [Measurement] {
        progress.update("postgres standbys: the LSN check of one read")
        let plain = try PostgresOfflineStore(connection: cluster.standbys[0], table: table)
        var configuration = PostgresOfflineStore.Configuration()
        configuration.readPolicy = .standbyIfCaughtUp
        let checked = try PostgresOfflineStore(
            primary: cluster.primary, standbys: [cluster.standbys[0]], table: table, configuration: configuration)
        try await checked.checkServers()
        var samples = [
            Sample(perItemNanoseconds: [], callLatencies: []), Sample(perItemNanoseconds: [], callLatencies: []),
        ]
        let blocks = options.pick(quick: 4, standard: 10, full: 40)
        for block in 0...blocks {
            for (index, store) in [plain, checked].enumerated() {
                let latencies = try await Stopwatch.latenciesAfterWarmUp(calls: 200) { call in
                    let start = Stopwatch.now()
                    _ = try await store.get(Self.key(call % Self.keyCount))
                    return Stopwatch.now() - start
                }
                if block > 0 {
                    let mean = latencies.reduce(0, +) / Double(latencies.count)
                    samples[index].append(Sample(perItemNanoseconds: [mean], callLatencies: latencies))
                }
            }
        }
        let base = samples[0].measurement(
            section: section, subject: "postgres", variant: "1 reader, one standby", operation: "get, plain store on it"
        )
        var row = samples[1].measurement(
            section: section, subject: "postgres", variant: "1 reader, one standby",
            operation: "get, standbyIfCaughtUp (LSN check)")
        row.note = String(
            format: "the LSN check: %+.1f µs a read at p50 (%.2fx); standby answered %d of %d",
            (row.p50Nanoseconds - base.p50Nanoseconds) / 1e3,
            row.p50Nanoseconds / max(1, base.p50Nanoseconds), checked.readCounts.standbys.first?.reads ?? 0,
            (blocks + 1) * 201)
        return [base, row]
    }

    /// One writer's `.synced` single sets: `synchronous_commit = on` against `remote_apply`
    /// (``PostgresOfflineStore/Configuration/waitsForStandbyApply``), in alternating blocks.
    private func remoteApply(_ cluster: PostgresStandbyCluster, section: String) async throws -> [Measurement] {
        progress.update("postgres standbys: remote_apply against on")
        var stores: [PostgresOfflineStore] = []
        for applies in [false, true] {
            var configuration = PostgresOfflineStore.Configuration()
            configuration.readPolicy = .standbyIfCaughtUp
            configuration.waitsForStandbyApply = applies
            stores.append(
                try PostgresOfflineStore(
                    primary: cluster.primary, standbys: cluster.standbys, table: BenchPostgres.freshTableName(),
                    configuration: configuration))
        }
        var samples = [
            Sample(perItemNanoseconds: [], callLatencies: []), Sample(perItemNanoseconds: [], callLatencies: []),
        ]
        let blocks = options.pick(quick: 2, standard: 6, full: 20)
        for block in 0...blocks {
            for (index, store) in stores.enumerated() {
                let latencies = try await Stopwatch.latenciesAfterWarmUp(calls: 50) { call in
                    let start = Stopwatch.now()
                    try await store.set("w\(call)", "\(block)")
                    return Stopwatch.now() - start
                }
                if block > 0 {
                    let mean = latencies.reduce(0, +) / Double(latencies.count)
                    samples[index].append(Sample(perItemNanoseconds: [mean], callLatencies: latencies))
                }
            }
        }
        let on = samples[0].measurement(
            section: section, subject: "postgres", variant: "synced, 1 writer", operation: "set, synchronous_commit on")
        var apply = samples[1].measurement(
            section: section, subject: "postgres", variant: "synced, 1 writer",
            operation: "set, remote_apply (waitsForStandbyApply)")
        apply.note = String(format: "%.2fx on's p50", apply.p50Nanoseconds / max(1, on.p50Nanoseconds))
        return [on, apply]
    }

    /// "primary 4% (12.0 µs CPU/read), standby … 48% (…)": each server's share of the reads and its
    /// CPU time per read of the run.
    private static func shares(_ counts: PostgresOfflineStore.ReadCounts, cpu: [Double?], reads: Int) -> String {
        let answered = [counts.primary] + counts.standbys.map(\.reads)
        let total = max(1, answered.reduce(0, +))
        let names = ["primary", "standby 1", "standby 2"]
        var parts: [String] = []
        for (index, name) in names.enumerated() where index < answered.count {
            let share = 100 * Double(answered[index]) / Double(total)
            let perRead = cpu[index].map { String(format: "%.1f µs CPU/read", $0 * 1e6 / Double(reads)) } ?? "CPU n/a"
            parts.append(String(format: "%@ %.0f%% (%@)", name, share, perRead))
        }
        return parts.joined(separator: ", ") + (counts.waited > 0 ? ", \(counts.waited) waited" : "")
    }

    private static func key(_ index: Int) -> String { "bench:standby:\(index)" }
}

/// The CPU time a PostgreSQL server's processes used: its postmaster (with the children it
/// reaped) and its running children, from `/proc`; `nil` where there is no `/proc`.
enum ServerCPU {
    static func seconds(_ folder: URL) -> Double? {
        #if os(Linux)
            guard
                let pidFile = try? String(
                    contentsOf: folder.appendingPathComponent("data/postmaster.pid"), encoding: .utf8),
                let postmaster = pidFile.split(separator: "\n").first.flatMap({ Int($0) })
            else { return nil }
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            var total = 0.0
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            for entry in entries {
                guard let pid = Int(entry),
                    let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                    let close = stat.lastIndex(of: ")")
                else { continue }
                // After "pid (comm) ": state, ppid, … utime (14), stime (15), cutime, cstime.
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                guard fields.count > 14, let parent = Int(fields[1]) else { continue }
                if pid == postmaster {
                    total += fields[11...14].compactMap { Double($0) }.reduce(0, +)
                } else if parent == postmaster {
                    total += fields[11...12].compactMap { Double($0) }.reduce(0, +)
                }
            }
            return total / ticks
        #else
            return nil  // Apple platforms have no /proc: the rows say "CPU n/a".
        #endif
    }
}
