import CLibPQ
import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One libpq connection (`PGconn *`): opens it, sets up its session, runs statements with
/// binary parameters and results, and closes it when released.
///
/// Every call blocks on the network, so connections are used only on the store's
/// `BlockingWorkQueue`, by one thread at a time (the ``PostgresPool`` hands each to one call).
// @unchecked Sendable: one call at a time owns a connection, handed over through the pool's lock.
final class PostgresConnection: @unchecked Sendable {
    /// Statements prepared once on every connection, by name.
    struct Statement: Sendable {
        let name: String
        let sql: String
        let parameterTypes: [UInt32]
    }

    private let handle: OpaquePointer
    /// Where the conninfo points, for messages.
    let server: String
    /// Set while a `COMMIT` (or a write in its own implicit transaction) has been sent and its
    /// answer has not come: if the connection breaks then, nobody knows whether it committed, and
    /// the call must not be retried.
    private(set) var awaitingCommit = false

    /// Set when the connection broke while ``awaitingCommit``: the failed call's write may have
    /// been applied, so it must not be sent again.
    private(set) var brokeAwaitingCommit = false

    /// On a standby, the newest replay position this connection has seen: the server replays
    /// forward only, and a restart ends the connection, so every later snapshot on it is at least
    /// this far. 0 until a read learns one.
    var knownReplayPosition: UInt64 = 0

    /// On a standby, the timeline it was last found following (`nil` when it could not say); on
    /// the primary, the one it writes. Learned when the connection opens; a standby's is asked
    /// again when the primary's timeline is another one.
    var timeline: UInt64?

    /// Connects with `conninfo` (a libpq key/value string or a `postgresql://` URL), then sets the
    /// session up: `synchronous_commit` from `durability` and `lock_timeout`.
    ///
    /// - Parameters:
    ///   - synchronousCommit: the session's `synchronous_commit` when not the one `durability`
    ///     gives (`remote_apply`).
    ///   - requiredOptions: libpq options that override the conninfo's own
    ///     (`target_session_attrs=read-write` to reach only a primary).
    init(
        conninfo: String, server: String, durability: Durability, lockTimeoutMilliseconds: Int,
        connectTimeoutSeconds: Int, synchronousCommit: String? = nil, requiredOptions: [(String, String)] = []
    ) throws(OfflineStoreError) {
        self.server = server
        // Keywords after `dbname` override the conninfo; the first ones come before it, so it wins.
        let keywords = ["connect_timeout", "fallback_application_name", "dbname"] + requiredOptions.map(\.0)
        let values = [String(connectTimeoutSeconds), "sovaria", conninfo] + requiredOptions.map(\.1)
        let connection = withCStringArray(keywords) { keywords in
            withCStringArray(values) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection else {
            throw .postgresConnection("libpq is out of memory", server: server, while: "Connecting", opening: true)
        }
        handle = connection
        guard PQstatus(handle) == CONNECTION_OK else {
            throw .postgresConnection(errorMessage, server: server, while: "Connecting", opening: true)
        }
        // The server's notices (CREATE TABLE IF NOT EXISTS "skipping", a FATAL on an idle
        // connection at shutdown) would go to standard error: errors reach callers as throws.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        let commit = synchronousCommit ?? (durability == .synced ? "on" : "off")
        try execute(
            "SET synchronous_commit = \(commit); SET lock_timeout = \(lockTimeoutMilliseconds)",
            while: "Setting up the session")
    }

    deinit { PQfinish(handle) }

    /// Prepares `statements` on this connection, to be run by name with ``run(_:_:commits:while:key:)``.
    func prepare(_ statements: [Statement]) throws(OfflineStoreError) {
        for statement in statements {
            let result = statement.name.withCString { name in
                statement.sql.withCString { sql in
                    statement.parameterTypes.withUnsafeBufferPointer { types in
                        PQprepare(handle, name, sql, Int32(types.count), types.baseAddress)
                    }
                }
            }
            _ = try check(result, while: "Preparing \(statement.name)")
        }
    }

    /// Whether the connection still works: `false` once libpq saw it break.
    var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

    /// Whether a connection that sat idle in the pool is still usable: reads what the server sent
    /// meanwhile without waiting. A server that shut down or restarted sent a `FATAL` message and
    /// closed the socket; reading both marks the connection broken, so it is dropped before a
    /// write is sent on it (a write sent on a dead connection could not be safely retried).
    func isUsableAfterIdle() -> Bool {
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        // A message, then the end of the stream: at most a few rounds.
        for _ in 0..<4 {
            guard PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) == PQTRANS_IDLE else { return false }
            descriptor.revents = 0
            guard poll(&descriptor, 1, 0) > 0 else { return true }
            guard PQconsumeInput(handle) == 1 else { return false }
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Runs `sql` (one or more statements, no parameters), discarding any rows.
    func execute(_ sql: String, while action: String) throws(OfflineStoreError) {
        let sent = sql.withCString { PQsendQuery(handle, $0) }
        _ = try finish(sent: sent == 1, while: action)
    }

    /// Runs `sql` with `parameters`, once (not prepared), and returns its rows.
    func query(
        _ sql: String, _ parameters: [PostgresParameter], while action: String
    ) throws(OfflineStoreError)
        -> PostgresResult
    {
        let sent = withParameters(parameters) { count, types, values, lengths, formats in
            sql.withCString { PQsendQueryParams(handle, $0, count, types, values, lengths, formats, 1) }
        }
        return try finish(sent: sent == 1, while: action)
    }

    /// Runs the prepared `statement` with `parameters` and returns its rows.
    ///
    /// - Parameter commits: the statement commits on its own (a write outside `BEGIN`, or
    ///   `COMMIT`): while its answer is awaited, ``awaitingCommit`` is set.
    func run(
        _ statement: Statement, _ parameters: [PostgresParameter], commits: Bool = false, while action: String,
        key: String? = nil
    ) throws(OfflineStoreError) -> PostgresResult {
        let sent = withParameters(parameters) { count, _, values, lengths, formats in
            statement.name.withCString { PQsendQueryPrepared(handle, $0, count, values, lengths, formats, 1) }
        }
        awaitingCommit = commits && sent == 1
        defer { awaitingCommit = false }
        return try finish(sent: sent == 1, while: action, key: key)
    }

    /// One statement of a pipeline: a prepared statement, its parameters, and the key it is about.
    struct Call {
        let statement: Statement
        let parameters: [PostgresParameter]
        let key: String?

        init(statement: Statement, parameters: [PostgresParameter] = [], key: String? = nil) {
            self.statement = statement
            self.parameters = parameters
            self.key = key
        }
    }

    /// A step of a pipeline: a statement, or a sync that ends a segment. A segment outside `BEGIN`
    /// is one implicit transaction, which its sync commits.
    enum Step {
        case call(Call)
        case text(String)
        case sync(commits: Bool)
    }

    /// Runs `calls` in pipeline mode, `BEGIN` first when `beginning`: all are sent, then one sync,
    /// then every answer is read, so the chunk costs one round trip instead of one per call.
    ///
    /// Never commits (the caller sends `COMMIT` on its own after the last chunk, so a connection
    /// that breaks here certainly committed nothing). After an error the server skips the rest of
    /// the chunk and the transaction is aborted; the first error throws.
    func runPipelined(_ calls: ArraySlice<Call>, beginning: Bool, while action: String) throws(OfflineStoreError) {
        let steps = (beginning ? [Step.text("BEGIN")] : []) + calls.map(Step.call) + [.sync(commits: false)]
        _ = try pipeline(steps, while: action)
    }

    /// Sends every step in pipeline mode, then reads every answer: one round trip in all.
    ///
    /// Returns the rows of each `.call` and `.text` step in order. After an error the server skips
    /// the rest of that segment (the next sync starts a new one); the first error throws once
    /// every answer has been read. From the sending until a committing sync's answer,
    /// ``awaitingCommit`` is set: a connection that breaks then may have committed.
    ///
    /// Once a committing sync has answered without an error, the commit happened, and nothing
    /// after it throws: a later step that fails, or a connection that breaks, only leaves its rows
    /// out (so a write is never reported as failed, and retried, after it committed).
    func pipeline(_ steps: [Step], while action: String) throws(OfflineStoreError) -> [PostgresResult] {
        precondition(
            steps.last.map { if case .sync = $0 { true } else { false } } == true, "a pipeline ends with a sync")
        guard PQenterPipelineMode(handle) == 1 else {
            throw .postgresConnection(errorMessage, server: server, while: action)
        }
        defer { if PQpipelineStatus(handle) != PQ_PIPELINE_OFF { _ = PQexitPipelineMode(handle) } }
        // A sync flushes what was queued before it: from the first send, a committing step may be
        // on its way to the server.
        awaitingCommit = steps.contains { if case .sync(commits: true) = $0 { true } else { false } }
        defer { awaitingCommit = false }
        for step in steps {
            let queued: Int32
            switch step {
            case .call(let call):
                queued = withParameters(call.parameters) { count, _, values, lengths, formats in
                    call.statement.name.withCString {
                        PQsendQueryPrepared(handle, $0, count, values, lengths, formats, 1)
                    }
                }
            case .text(let sql):
                queued = sql.withCString { PQsendQueryParams(handle, $0, 0, nil, nil, nil, nil, 1) }
            case .sync:
                queued = PQpipelineSync(handle)
            }
            guard queued == 1 else {
                if awaitingCommit { brokeAwaitingCommit = true }
                throw .postgresConnection(
                    errorMessage, server: server, while: action, mayHaveCommitted: awaitingCommit, key: step.key)
            }
        }
        var results: [PostgresResult] = []
        var failure: OfflineStoreError?
        // Whether the segment being read (since the last sync) had an error: only its own error
        // stops its commit.
        var segmentFailed = false
        var committed = false
        for step in steps {
            if case .sync(let commits) = step {
                guard let sync = PQgetResult(handle), PQresultStatus(sync) == PGRES_PIPELINE_SYNC else {
                    if committed { return results }
                    if awaitingCommit { brokeAwaitingCommit = true }
                    throw failure
                        ?? .postgresConnection(
                            errorMessage, server: server, while: action, mayHaveCommitted: awaitingCommit)
                }
                PQclear(sync)
                if commits {
                    awaitingCommit = false
                    committed = !segmentFailed
                }
                segmentFailed = false
                continue
            }
            // Each statement's results end with a NULL; a broken connection gives NULLs from then on.
            var kept: PostgresResult?
            while let next = PQgetResult(handle) {
                let result = PostgresResult(next)
                guard PQresultStatus(next) != PGRES_PIPELINE_ABORTED else { continue }  // skipped after an error
                do throws(OfflineStoreError) {
                    kept = try check(next, result, while: action, key: step.key)
                } catch {
                    segmentFailed = true
                    if failure == nil { failure = error }
                }
            }
            if isBroken {
                if committed { return results }
                if awaitingCommit { brokeAwaitingCommit = true }
                throw failure
                    ?? .postgresConnection(
                        errorMessage, server: server, while: action, mayHaveCommitted: awaitingCommit, key: step.key)
            }
            if let kept { results.append(kept) }
        }
        // Every answer is read (the connection is ready for the next call) before anything throws.
        if let failure, !committed { throw failure }
        return results
    }

    /// Runs `sql` that commits (`COMMIT`), with ``awaitingCommit`` set while its answer is awaited.
    func commit(while action: String) throws(OfflineStoreError) {
        let sent = "COMMIT".withCString { PQsendQuery(handle, $0) }
        awaitingCommit = sent == 1
        defer { awaitingCommit = false }
        _ = try finish(sent: sent == 1, while: action)
    }

    /// Whether a transaction is open (also when it failed and waits for `ROLLBACK`).
    var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Reads every result of the query just sent and returns the last; the first error throws.
    private func finish(
        sent: Bool, while action: String, key: String? = nil
    ) throws(OfflineStoreError)
        -> PostgresResult
    {
        guard sent else {
            throw .postgresConnection(errorMessage, server: server, while: action, key: key)
        }
        var kept: PostgresResult?
        var failure: OfflineStoreError?
        // Every result must be read before the connection takes the next query.
        while let next = PQgetResult(handle) {
            let result = PostgresResult(next)
            do throws(OfflineStoreError) {
                kept = try check(next, result, while: action, key: key)
            } catch {
                if failure == nil { failure = error }
            }
        }
        if let failure { throw failure }
        guard let kept else {
            if awaitingCommit { brokeAwaitingCommit = true }
            throw .postgresConnection(
                errorMessage, server: server, while: action, mayHaveCommitted: awaitingCommit, key: key)
        }
        return kept
    }

    private func check(_ handle: OpaquePointer?, while action: String) throws(OfflineStoreError) -> PostgresResult {
        guard let handle else { throw .postgresConnection(errorMessage, server: server, while: action) }
        return try check(handle, PostgresResult(handle), while: action)
    }

    private func check(
        _ raw: OpaquePointer, _ result: PostgresResult, while action: String, key: String? = nil
    ) throws(OfflineStoreError) -> PostgresResult {
        switch PQresultStatus(raw) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return result
        default:
            guard let state = PQresultErrorField(raw, Int32(UInt8(ascii: "C"))) else {
                // No SQLSTATE: libpq made the error itself, because the connection failed.
                let message = PQresultErrorMessage(raw).map { String(cString: $0) } ?? errorMessage
                if awaitingCommit { brokeAwaitingCommit = true }
                throw .postgresConnection(
                    message, server: server, while: action, mayHaveCommitted: awaitingCommit, key: key)
            }
            let sqlState = String(cString: state)
            if isBroken || sqlState.hasPrefix("08") {
                if awaitingCommit { brokeAwaitingCommit = true }
                throw .postgresConnection(
                    "\(serverMessage(raw)) (SQLSTATE \(sqlState))", server: server, while: action,
                    mayHaveCommitted: awaitingCommit, key: key)
            }
            throw .postgres(sqlState: sqlState, serverMessage(raw), while: action, key: key)
        }
    }

    private func serverMessage(_ raw: OpaquePointer) -> String {
        PQresultErrorField(raw, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? "unknown error"
    }

    /// libpq's message for the last failure on this connection.
    private var errorMessage: String {
        PQerrorMessage(handle).map { String(cString: $0) } ?? "unknown libpq error"
    }
}

/// Lays `parameters` out in one buffer and calls `body` with libpq's parallel arrays: count,
/// types, value pointers, lengths and formats (all binary). An empty value gets a non-null pointer,
/// since a null one means SQL `NULL`.
private func withParameters<Result>(
    _ parameters: [PostgresParameter],
    _ body: (
        Int32, UnsafePointer<UInt32>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
        UnsafePointer<Int32>?
    ) -> Result
) -> Result {
    var buffer: [UInt8] = []
    var offsets: [Int] = []
    var lengths: [Int32] = []
    for parameter in parameters {
        offsets.append(buffer.count)
        parameter.append(to: &buffer)
        lengths.append(Int32(buffer.count - offsets[offsets.count - 1]))
    }
    buffer.append(0)  // never empty, so the base address exists
    let types = parameters.map(\.typeOID)
    let formats = [Int32](repeating: 1, count: parameters.count)
    return buffer.withUnsafeBufferPointer { bytes in
        let base = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
        let values: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
        return types.withUnsafeBufferPointer { types in
            values.withUnsafeBufferPointer { values in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        body(
                            Int32(parameters.count), types.baseAddress, values.baseAddress, lengths.baseAddress,
                            formats.baseAddress)
                    }
                }
            }
        }
    }
}

/// Calls `body` with a NULL-terminated array of C strings that live as long as the call.
private func withCStringArray<Result>(
    _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Result
) -> Result {
    let copies = strings.map { strdup($0) }
    defer { for copy in copies { free(copy) } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

extension PostgresConnection.Step {
    /// The key a statement is about, for messages.
    fileprivate var key: String? {
        if case .call(let call) = self { call.key } else { nil }
    }
}
