import CBenchLibPQ
import Foundation
import Synchronization

/// What a published table costs its writers (issue 62): single-row INSERTs and UPDATEs from 4
/// clients (and 1), each its own connection, on tables of one shape that differ only in their
/// triggers, in rounds that take turns, on the benchmark's PostgreSQL (`fsync=on`):
///
/// - the plain table, the baseline;
/// - published with `ChangeFeed.sql` (`sovaria_publish`, no NOTIFY: the default);
/// - published with `notify => true` (what a server that long-polls asks for);
/// - published through a membership table (rows a team shares: `visibility_column` names the
///   team, and the log records it with the membership table);
/// - two floors: the same two triggers (per row and per statement, SECURITY DEFINER with the same
///   search path) doing nothing, and the same with the row trigger inserting the row into a copy
///   of the log (its indexes, identity and defaults; a position from a sequence, no numbering, no
///   header): what any trigger that logs a row pays, above which is ChangeFeed.sql's own work.
///
/// Each in two commit modes: the commit waits for the WAL flush (`synchronous_commit=on`, what a
/// write costs in production), and it does not (`off`), where the server's CPU is all a write
/// costs and the trigger's share is largest. A row's ratio is its median statement latency over
/// the plain table's in the same rounds; its note has each round's ratio;
/// the mean ratio is the plain table's throughput over this table's.
struct FeedWritesSection {
    let options: BenchOptions
    let progress: Progress

    /// The tables, the plain one first (the baseline).
    enum Table: Int, CaseIterable {
        case plain, published, notifying, team, floor, loggingFloor

        var label: String {
            switch self {
            case .plain: "plain table"
            case .published: "published (ChangeFeed.sql)"
            case .notifying: "published, notify => true"
            case .team: "published through a membership table"
            case .floor: "floor: the two triggers, empty"
            case .loggingFloor: "floor: the two triggers, a log row"
            }
        }
    }

    enum Operation: String, CaseIterable {
        case insert = "INSERT"
        case update = "UPDATE"
    }

    static let rowCount = 10_000

    func run() async throws -> [Measurement] {
        guard options.runs(engine: "postgres") else { return [] }
        let conninfo = try BenchPostgres.conninfo()
        let prefix = BenchPostgres.freshTableName()
        try Self.setUp(conninfo: conninfo, prefix: prefix)
        let roundSeconds = options.pick(quick: 0.2, standard: 1.0, full: 3.0)
        let rounds = options.pick(quick: 1, standard: 5, full: 7)
        let setups: [(clients: Int, synchronousCommit: Bool)] = options.pick(
            quick: [(4, true)], standard: [(4, true), (4, false), (1, true), (1, false)],
            full: [(4, true), (4, false), (1, true), (1, false)])
        var rows: [Measurement] = []
        for setup in setups {
            let clients = try (0..<setup.clients).map {
                try FeedWriter(
                    conninfo: conninfo, prefix: prefix, client: $0, synchronousCommit: setup.synchronousCommit)
            }
            for operation in Operation.allCases {
                let commit = setup.synchronousCommit ? "commit waits for the WAL flush" : "synchronous_commit=off"
                let variant =
                    "\(setup.clients) client\(setup.clients == 1 ? "" : "s"), \(operation.rawValue), \(commit)"
                progress.update("feed writes: \(variant)")
                var latencies = [[Double]](repeating: [], count: Table.allCases.count)
                var statements = [Int](repeating: 0, count: Table.allCases.count)
                var roundMedians = [[Double]](repeating: [], count: Table.allCases.count)
                for round in -1..<rounds {  // round -1 warms the tables, the plans and the caches
                    // Each round starts with another table, so no table always runs first or last.
                    let order = Table.allCases.indices.map {
                        Table.allCases[($0 + max(0, round)) % Table.allCases.count]
                    }
                    for table in order {
                        let timed = try Self.runRound(
                            clients, table: table, operation: operation, round: round,
                            seconds: roundSeconds)
                        guard round >= 0 else { continue }
                        latencies[table.rawValue] += timed
                        statements[table.rawValue] += timed.count
                        // A round a stall left without a statement has no median (`nan`).
                        roundMedians[table.rawValue].append(timed.isEmpty ? .nan : Sample.percentile(timed, 0.5))
                    }
                }
                rows += Self.rows(
                    variant: variant, latencies: latencies, statements: statements, roundMedians: roundMedians,
                    seconds: roundSeconds * Double(rounds))
            }
        }
        return rows
    }

    /// One round: every client runs `operation` on `table` for `seconds`; the latencies of every
    /// statement, in nanoseconds.
    private static func runRound(
        _ clients: [FeedWriter], table: Table, operation: Operation, round: Int, seconds: Double
    ) throws -> [Double] {
        let results = Mutex<[Result<[Double], any Error>]>([])
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        DispatchQueue.concurrentPerform(iterations: clients.count) { index in
            let result = Result { try clients[index].write(table, operation, round: round, until: deadline) }
            results.withLock { $0.append(result) }
        }
        return try results.withLock { $0 }.flatMap { try $0.get() }
    }

    /// The rows of one variant: each table's median statement latency, its ratio to the plain
    /// table's, and in the note each round's ratio.
    private static func rows(
        variant: String, latencies: [[Double]], statements: [Int], roundMedians: [[Double]], seconds: Double
    ) -> [Measurement] {
        let plain = Table.plain.rawValue
        let plainMedian = Sample.percentile(latencies[plain], 0.5)
        return Table.allCases.map { table in
            let index = table.rawValue
            let perStatement = seconds * 1e9 / Double(max(1, statements[index]))
            var row = Sample(perItemNanoseconds: [perStatement], callLatencies: latencies[index]).measurement(
                section: BenchSection.feedWrites.rawValue, subject: "postgres", variant: variant,
                operation: table.label)
            row.opsPerSecond = Double(statements[index]) / seconds
            guard table != .plain else {
                row.note = "\(statements[index].formatted()) statements"
                return row
            }
            row.ratio = row.p50Nanoseconds / max(1, plainMedian)
            row.meanRatio = Double(statements[plain]) / Double(max(1, statements[index]))
            row.baseline = Table.plain.label
            let rounds = zip(roundMedians[index], roundMedians[plain]).map { median, plain in
                median.isNaN || plain.isNaN || plain == 0 ? "–" : String(format: "%.2f", median / plain)
            }
            row.note = "each round: \(rounds.joined(separator: ", ")); \(statements[index].formatted()) statements"
            return row
        }
    }

    /// Applies `ChangeFeed.sql` and makes the tables, each with `rowCount` rows to update.
    private static func setUp(conninfo: String, prefix: String) throws {
        let admin = try FeedWriter(conninfo: conninfo, prefix: prefix, client: -1, synchronousCommit: true)
        try admin.execute(try String(contentsOf: changeFeedSQL, encoding: .utf8))
        // The floor's triggers: the published table's two, SECURITY DEFINER with the same search
        // path, doing nothing.
        try admin.execute(
            """
            CREATE OR REPLACE FUNCTION sovaria_bench_empty_trigger() RETURNS trigger LANGUAGE plpgsql
            SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$ BEGIN RETURN NULL; END $$
            """)
        for table in Table.allCases {
            let name = FeedWriter.tableName(prefix, table)
            try admin.execute(
                """
                CREATE TABLE \(name) (id text PRIMARY KEY, owner text NOT NULL, title text NOT NULL, body text,
                    done boolean NOT NULL DEFAULT false, updated_at timestamptz NOT NULL DEFAULT now());
                INSERT INTO \(name) (id, owner, title)
                    SELECT 'u' || g, 'alice', 'a title' FROM generate_series(1, \(rowCount)) g;
                """)
            switch table {
            case .plain: break
            case .team:
                try admin.execute(
                    """
                    CREATE TABLE \(prefix)_members (team text, member text, PRIMARY KEY (team, member));
                    INSERT INTO \(prefix)_members VALUES ('alice', 'alice');
                    SELECT sovaria_publish('\(name)', key_column => 'id', visibility_column => 'owner',
                        membership => '\(prefix)_members', membership_user_column => 'member',
                        membership_team_column => 'team');
                    """)
            case .published, .notifying:
                try admin.execute(
                    "SELECT sovaria_publish('\(name)', key_column => 'id', visibility_column => 'owner', "
                        + "notify => \(table == .notifying))")
            case .floor, .loggingFloor:
                let row = table == .floor ? "sovaria_bench_empty_trigger" : "\(prefix)_log_row"
                if table == .loggingFloor {
                    try admin.execute(
                        """
                        CREATE TABLE \(prefix)_log (LIKE sovaria_changes INCLUDING ALL);
                        CREATE SEQUENCE \(prefix)_positions;
                        CREATE FUNCTION \(row)() RETURNS trigger LANGUAGE plpgsql
                        SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
                        DECLARE
                            new_row jsonb := to_jsonb(NEW);
                        BEGIN
                            INSERT INTO public.\(prefix)_log (position, "table", key, op, row, visible_to, visible_to_all)
                            VALUES (nextval('public.\(prefix)_positions'), 'floor', new_row ->> 'id', 'upsert', new_row,
                                    new_row ->> 'owner', false);
                            RETURN NULL;
                        END $$;
                        """)
                }
                try admin.execute(
                    """
                    CREATE TRIGGER bench_row AFTER INSERT OR UPDATE OR DELETE ON \(name)
                        FOR EACH ROW EXECUTE FUNCTION \(row)();
                    CREATE TRIGGER bench_statement AFTER INSERT OR UPDATE OR DELETE ON \(name)
                        FOR EACH STATEMENT EXECUTE FUNCTION sovaria_bench_empty_trigger();
                    """)
            }
        }
        try admin.execute("VACUUM ANALYZE")
    }

    /// `Sources/SovariaPostgREST/ChangeFeed.sql`, found from this file's place in the repository.
    static var changeFeedSQL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/SovariaPostgREST/ChangeFeed.sql")
    }
}

/// One client of ``FeedWritesSection``: a libpq connection with the section's statements
/// prepared for every table.
final class FeedWriter: @unchecked Sendable {  // one thread at a time: each round gives each client its own
    private let connection: OpaquePointer
    /// What makes this connection's inserted ids its own: the client and a tag of its own.
    private let idPrefix: String
    private var counter = 0

    static func tableName(_ prefix: String, _ table: FeedWritesSection.Table) -> String {
        "\(prefix)_\(table.rawValue)"
    }

    init(conninfo: String, prefix: String, client: Int, synchronousCommit: Bool) throws {
        guard let connection = PQconnectdb(conninfo) else { throw BenchError.failed("feed writes: out of memory") }
        self.connection = connection  // from here on, deinit finishes it
        idPrefix = "c\(client)-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))-"
        guard PQstatus(connection) == CONNECTION_OK else { throw failure("connecting") }
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        try execute("SET synchronous_commit = \(synchronousCommit ? "on" : "off")")
        guard client >= 0 else { return }
        for table in FeedWritesSection.Table.allCases {
            let name = Self.tableName(prefix, table)
            try prepare(
                "insert\(table.rawValue)", "INSERT INTO \(name) (id, owner, title) VALUES ($1, 'alice', 'a title')")
            try prepare("update\(table.rawValue)", "UPDATE \(name) SET title = $2 WHERE id = $1")
        }
    }

    deinit { PQfinish(connection) }

    /// Runs `operation` on `table`, one statement (its own transaction) after the other, until
    /// `deadline`; the latency of each, in nanoseconds.
    func write(
        _ table: FeedWritesSection.Table, _ operation: FeedWritesSection.Operation, round: Int, until deadline: UInt64
    ) throws -> [Double] {
        var latencies: [Double] = []
        var generator = SystemRandomNumberGenerator()
        while monotonicNanoseconds() < deadline {
            counter += 1
            let parameters: [String]
            switch operation {
            case .insert: parameters = [idPrefix + String(counter)]
            case .update:
                parameters = ["u\(Int.random(in: 1...FeedWritesSection.rowCount, using: &generator))", "t\(counter)"]
            }
            let name = "\(operation == .insert ? "insert" : "update")\(table.rawValue)"
            let start = monotonicNanoseconds()
            try run(name, parameters)
            latencies.append(Double(monotonicNanoseconds() - start))
        }
        return latencies
    }

    func execute(_ sql: String) throws {
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        guard [PGRES_COMMAND_OK, PGRES_TUPLES_OK].contains(PQresultStatus(result)) else {
            throw failure(String(sql.prefix(80)))
        }
    }

    private func prepare(_ name: String, _ sql: String) throws {
        let result = PQprepare(connection, name, sql, 0, nil)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw failure("preparing \(name)") }
    }

    private func run(_ name: String, _ parameters: [String]) throws {
        let result = parameters.withCStrings { values in
            PQexecPrepared(connection, name, Int32(parameters.count), values, nil, nil, 0)
        }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw failure("running \(name)") }
    }

    private func failure(_ action: String) -> BenchError {
        let message = PQerrorMessage(connection).map { String(cString: $0) } ?? "unknown error"
        return BenchError.failed("feed writes: \(action): \(message)")
    }
}

extension Array where Element == String {
    /// Calls `body` with a C string pointer for each element, valid during the call.
    fileprivate func withCStrings<Result>(_ body: ([UnsafePointer<CChar>?]) -> Result) -> Result {
        let copies = map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return body(copies.map { UnsafePointer($0) })
    }
}
