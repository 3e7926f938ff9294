import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaSync

/// Accounts (issue 60): what an account costs a call, in one run. A store's `get` and `set`
/// through an account's view (``AccountScopedStore``: `sov:account:<id>/` before every key) against
/// the same calls on the same store directly; a controller's read (a cached answer, from memory and
/// from the store) and offline write (queued) with ``SovariaOffline/Configuration/account`` against
/// a controller without one. Each pair runs in blocks that take turns, so a busy moment of the
/// machine hits both; each row's time is its median block's and its ratio is over the call without
/// an account. The floors beside them: the store's call with keys as long as the account's, made
/// beforehand (what the longer key costs the engine), and making the prefixed key alone (the view's
/// own work).
struct AccountsSection {
    let options: BenchOptions
    let workload: Workload
    let progress: Progress

    /// An account id as a sign-in gives one: a UUID (36 bytes; the prefix is 49).
    static let accountID = "6f1c2a9e-4b7d-4e21-9a3c-0d5e8f7b1a24"
    /// Another id of the same length: the floor's keys, as long as the account's, in entries of
    /// their own (reading the view's entries right after the view would find them warm).
    static let floorID = "0d5e8f7b-1a24-4e21-9a3c-6f1c2a9e4b7d"
    /// The engines measured: the memory store and the persistent engines without a server.
    static let engines: Set<String> = ["memory", "sqlite", "lmdb", "leveldb"]
    /// The list a controller read asks for: 20 rows of about 90 bytes, so the call's own work
    /// (not copying a large answer) is what the two sides are compared on.
    static let list = DataRequest(method: "GET", path: "/rest/v1/items?select=*&order=id&limit=20")
    static let listBody = LocalFirstSection.body(rows: 20)

    static let section = BenchSection.accounts.rawValue
    static let without = "no account"
    static let with = "account (49-byte prefix)"
    static let floor = "no account, keys as long as the account's (floor)"

    func run() async throws -> [Measurement] {
        let account = try AccountID(Self.accountID)
        var rows: [Measurement] = []
        for engine in BenchEngines.plain where Self.engines.contains(engine.name) && options.runs(engine: engine.name) {
            rows += try await measureStore(engine, account: account)
            rows += try await measureController(engine, account: account)
        }
        return rows
    }

    // MARK: - The store

    /// `get` (random hit) and `set` (one per call, `.flushed`) on one store: directly, through
    /// the account's view, and directly with keys as long as the view's made beforehand (another
    /// account's prefix, entries of their own); and the view's own work alone (the key checked and
    /// prefixed). The three read and write the same number of entries in the same order.
    private func measureStore(_ engine: BenchEngine, account: AccountID) async throws -> [Measurement] {
        progress.update("accounts: \(engine.name) store get and set, with and without an account")
        let folder = try freshFolder("accounts-store-\(engine.name)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await engine.open(folder, .flushed)
        let view = AccountScopedStore(wrapping: store, account: account)
        let keys = workload.keys
        let floorPrefix = AccountScopedStore.accountPrefix(of: try AccountID(Self.floorID))
        let longKeys = keys.map { floorPrefix + $0 }
        let values = workload.values
        for batch in workload.batches {
            try await store.write(batch.map { .set(key: keys[$0], value: values[0]) })
            try await view.write(batch.map { .set(key: keys[$0], value: values[0]) })
            try await store.write(batch.map { .set(key: longKeys[$0], value: values[0]) })
        }
        let order = workload.shuffled
        let block = 500
        let rounds = options.pick(quick: 20, standard: 60, full: 200)
        func key(_ round: Int, _ call: Int) -> Int { order[(round * block + call) % order.count] }

        let gets = try await Self.takeTurns(rounds: rounds) { round in
            [
                { try await Self.timeBlock(block) { call in try await Self.hit(store.get(keys[key(round, call)])) } },
                { try await Self.timeBlock(block) { call in try await Self.hit(view.get(keys[key(round, call)])) } },
                {
                    try await Self.timeBlock(block) { call in
                        try await Self.hit(store.get(longKeys[key(round, call)]))
                    }
                },
            ]
        }
        // Single sets cost a commit each: fewer of them, every one a change of the stored bytes.
        let setBlock = engine.name == "memory" ? block : 100
        let sets = try await Self.takeTurns(rounds: rounds) { round in
            let value = values[(round + 1) % 2]
            func setKey(_ call: Int) -> Int { order[(round * setBlock + call) % order.count] }
            return [
                { try await Self.timeBlock(setBlock) { call in try await store.set(keys[setKey(call)], value) } },
                { try await Self.timeBlock(setBlock) { call in try await view.set(keys[setKey(call)], value) } },
                {
                    try await Self.timeBlock(setBlock) { call in
                        try await store.set(longKeys[setKey(call)], value)
                    }
                },
            ]
        }
        // The view's work before it calls the store: the key's length checked, the prefix added.
        let prefix = view.accountPrefix
        var sink = 0
        let scoping = try await Self.takeTurns(rounds: rounds) { round in
            [
                {
                    try await Self.timeBlock(block) { call in
                        let key = keys[key(round, call)]
                        let count = key.utf8.count
                        guard count >= 1, count <= view.maxKeyUTF8Count else { throw BenchError.failed("key too long") }
                        sink &+= (prefix + key).utf8.count
                    }
                }
            ]
        }
        guard sink > 0 else { throw BenchError.failed("accounts: no key was prefixed") }

        var rows: [Measurement] = []
        for (operation, blocks, calls) in [
            ("get (random hit)", gets, block), ("set (one per call, flushed)", sets, setBlock),
        ] {
            let base = Self.row(engine.name, Self.without, operation, blocks[0], calls: calls, rounds: rounds)
            rows.append(base)
            rows.append(
                Self.row(
                    engine.name, Self.with, operation, blocks[1], calls: calls, rounds: rounds,
                    over: (blocks[0], "the same store without an account, interleaved")))
            rows.append(
                Self.row(
                    engine.name, Self.floor, operation, blocks[2],
                    calls: calls, rounds: rounds,
                    over: (blocks[0], "the same store with the workload's keys, interleaved")))
        }
        var scope = Self.row(
            engine.name, "the view's own work (floor)", "check and prefix the key", scoping[0], calls: block,
            rounds: rounds)
        scope.ratio = scope.p50Nanoseconds / max(1, rows[0].p50Nanoseconds)
        scope.meanRatio = scope.ratio
        scope.baseline = "the store's get without an account: the share of a get it costs"
        rows.append(scope)
        return rows
    }

    // MARK: - The controller

    /// A read of a cached answer (`.cacheFirstThenNetwork`, fresh: no fetch) from the memory layer,
    /// the same read after a critical memory shed (from the store), and an offline write (queued),
    /// on two controllers of the same configuration on two stores of `engine`: one without an
    /// account, one with.
    private func measureController(_ engine: BenchEngine, account: AccountID) async throws -> [Measurement] {
        progress.update("accounts: \(engine.name) controller read and write, with and without an account")
        var controllers: [(offline: SovariaOffline, transport: ListServer, pressure: ManualMemoryPressureSource)] = []
        var folders: [URL] = []
        defer { for folder in folders { try? FileManager.default.removeItem(at: folder) } }
        for scoped in [false, true] {
            let folder = try freshFolder("accounts-controller-\(engine.name)-\(scoped)")
            folders.append(folder)
            let pressure = ManualMemoryPressureSource()
            var configuration = SovariaOffline.Configuration(api: PostgREST())
            configuration.account = scoped ? account : nil
            configuration.overlay = LocalFirstSection.overlay
            configuration.maxQueued = 1_000_000
            configuration.flushInterval = .seconds(86_400)  // no flush in the background while timed
            configuration.memoryPressure = pressure
            let transport = ListServer(body: Self.listBody)
            let offline = try await SovariaOffline(
                store: try await engine.open(folder, .flushed), transport: transport, configuration: configuration)
            _ = try await offline.read(Self.list)  // cached: every timed read is a hit
            controllers.append((offline, transport, pressure))
        }
        let rounds = options.pick(quick: 20, standard: 60, full: 200)
        let readBlock = 200
        let memoryReads = try await Self.takeTurns(rounds: rounds) { _ in
            controllers.map { controller -> () async throws -> UInt64 in
                {
                    try await Self.timeBlock(readBlock) { _ in
                        let read = try await controller.offline.read(Self.list, policy: .cacheFirstThenNetwork)
                        guard read.source == .memory else { throw BenchError.failed("accounts: not a memory hit") }
                    }
                }
            }
        }
        // A shed (untimed) before each read: the answer comes from the store, under the account's key.
        let storeReads = try await Self.takeTurns(rounds: rounds) { _ in
            controllers.map { controller -> () async throws -> UInt64 in
                {
                    var total: UInt64 = 0
                    for _ in 0..<readBlock / 4 {
                        controller.pressure.send(.critical)
                        let start = Stopwatch.now()
                        let read = try await controller.offline.read(Self.list, policy: .cacheFirstThenNetwork)
                        total += Stopwatch.now() - start
                        guard read.source == .store else { throw BenchError.failed("accounts: not a store hit") }
                    }
                    return total
                }
            }
        }
        for controller in controllers { controller.transport.isOffline = true }
        let writeBlock = 50
        var written = 0
        let writes = try await Self.takeTurns(rounds: rounds) { _ in
            controllers.map { controller -> () async throws -> UInt64 in
                {
                    try await Self.timeBlock(writeBlock) { _ in
                        // A patch, an insert or a delete, in turn: the same mix in every block.
                        let write = LocalFirstSection.write(written)
                        guard case .queued = try await controller.offline.write(write) else {
                            throw BenchError.failed("accounts: an offline write was not queued")
                        }
                        written += 1
                    }
                }
            }
        }
        for controller in controllers { await controller.offline.close() }

        var rows: [Measurement] = []
        let measured = [
            ("read, cached (memory hit)", memoryReads, readBlock),
            ("read, cached (store hit, after a memory shed)", storeReads, readBlock / 4),
            ("write, offline (queued)", writes, writeBlock),
        ]
        for (operation, blocks, calls) in measured {
            rows.append(
                Self.row(engine.name, "controller, \(Self.without)", operation, blocks[0], calls: calls, rounds: rounds)
            )
            var row = Self.row(
                engine.name, "controller, \(Self.with)", operation, blocks[1], calls: calls, rounds: rounds,
                over: (blocks[0], "the same controller without an account, interleaved"))
            if operation.hasPrefix("write") {
                row.note = (row.note ?? "") + "; each queue grows to \(written / 2) writes over the run"
            }
            rows.append(row)
        }
        return rows
    }

    // MARK: - Blocks that take turns

    /// Runs the blocks `makeBlocks` gives for each round, in turns (a different one first in each
    /// round), after one untimed round that warms every path up; each block returns the
    /// nanoseconds it timed. Returns each block's per-round times, by its position.
    static func takeTurns(
        rounds: Int, _ makeBlocks: (_ round: Int) -> [() async throws -> UInt64]
    ) async throws -> [[Double]] {
        var times: [[Double]] = []
        for round in -1..<rounds {
            let blocks = makeBlocks(max(round, 0))
            if times.isEmpty { times = Array(repeating: [], count: blocks.count) }
            for turn in blocks.indices {
                let which = (turn + max(round, 0)) % blocks.count
                let elapsed = try await blocks[which]()
                if round >= 0 { times[which].append(Double(elapsed)) }
            }
        }
        return times
    }

    /// The nanoseconds `calls` calls of `body` take, timed as one block.
    static func timeBlock(_ calls: Int, _ body: (_ call: Int) async throws -> Void) async throws -> UInt64 {
        let start = Stopwatch.now()
        for call in 0..<calls { try await body(call) }
        return Stopwatch.now() - start
    }

    /// Throws unless a get found its key.
    static func hit(_ value: String?) throws {
        guard value != nil else { throw BenchError.failed("accounts: a get missed") }
    }

    /// The row of blocks of `calls` calls each: time per call of the median block; with `over`,
    /// its ratio over that subject's median block and, in the note, the median of the rounds' own
    /// ratios (each pair of blocks ran moments apart).
    static func row(
        _ engine: String, _ variant: String, _ operation: String, _ blocks: [Double], calls: Int, rounds: Int,
        over baseline: (blocks: [Double], name: String)? = nil
    ) -> Measurement {
        let perCall = blocks.map { $0 / Double(calls) }
        let sorted = perCall.sorted()
        let median = Sample.percentile(sorted, 0.5, sorted: true)
        var row = Measurement(
            section: section, subject: engine, variant: variant, operation: operation,
            opsPerSecond: median > 0 ? 1e9 / median : 0, nanosecondsPerOp: median, p50Nanoseconds: median,
            p99Nanoseconds: Sample.percentile(sorted, 0.99, sorted: true), maxNanoseconds: sorted.last ?? 0,
            spreadPercent: median > 0 ? 100 * ((sorted.last ?? 0) - (sorted.first ?? 0)) / median : 0,
            repeats: sorted.count)
        row.note = "median of \(rounds) blocks of \(calls) calls taking turns; percentiles are of blocks"
        if let baseline {
            let base = Sample.percentile(baseline.blocks, 0.5) / Double(calls)
            row.ratio = median / max(1, base)
            row.meanRatio = row.ratio
            row.baseline = baseline.name
            let paired = zip(blocks, baseline.blocks).map { $0 / max(1, $1) }
            row.note =
                (row.note ?? "")
                + String(format: "; median of the rounds' ratios %.3fx", Sample.percentile(paired, 0.5))
        }
        return row
    }

    private func freshFolder(_ name: String) throws -> URL {
        let folder = options.folder.appendingPathComponent(name, isDirectory: true)
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}
