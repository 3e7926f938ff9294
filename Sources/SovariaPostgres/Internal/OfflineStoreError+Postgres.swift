import Sovaria

extension OfflineStoreError {
    /// The error for a statement the server refused: a ``Code`` chosen from the SQLSTATE, the
    /// server's own message, and what the user can do about it.
    ///
    /// - Parameters:
    ///   - sqlState: the five-character SQLSTATE (`PG_DIAG_SQLSTATE`); it becomes ``nativeCode``.
    ///   - serverMessage: the primary message of the error.
    ///   - action: what was being done, e.g. `"Writing a batch of 3 writes"`.
    static func postgres(
        sqlState: String, _ serverMessage: String, while action: String, key: String? = nil
    ) -> OfflineStoreError {
        let (code, advice) = classify(sqlState: sqlState)
        return OfflineStoreError(
            code,
            "\(action) failed: \(serverMessage) (SQLSTATE \(sqlState)). \(advice)",
            engine: .postgres,
            nativeCode: packed(sqlState: sqlState),
            key: key
        )
    }

    /// The error for a connection that could not be opened, or was lost in the middle of a call.
    ///
    /// - Parameters:
    ///   - server: where the conninfo points (`host=… port=… dbname=… user=…`, never a password).
    ///   - mayHaveCommitted: a write whose `COMMIT` (or single statement) was sent but whose answer
    ///     never came: it may or may not have been applied, and the message says so.
    static func postgresConnection(
        _ libpqMessage: String, server: String, while action: String, opening: Bool = false,
        mayHaveCommitted: Bool = false, key: String? = nil
    ) -> OfflineStoreError {
        let what = opening ? "could not connect to PostgreSQL" : "lost its connection to PostgreSQL"
        var advice =
            "Check that the server is running and reachable at \(server) (host, port, network, firewall), "
            + "that it accepts this user and database (pg_hba.conf, max_connections), then retry."
        if mayHaveCommitted {
            advice += " The write was sent but its answer never came: it may or may not have been applied."
        }
        return OfflineStoreError(
            mayHaveCommitted ? .outcomeUnknown : .io, "\(action) \(what): \(cleaned(libpqMessage)). \(advice)",
            engine: .postgres, key: key)
    }

    /// A stored key or value whose bytes are not UTF-8: only a change made outside Sovaria can put
    /// one in the table.
    static func postgresNotUTF8(_ what: String, table: String, key: String? = nil) -> OfflineStoreError {
        OfflineStoreError(
            .corrupt,
            "A stored \(what) in table \(table) is not valid UTF-8: the table was changed outside Sovaria. "
                + "Delete the row, or point the store at a table only Sovaria writes.",
            engine: .postgres,
            key: key
        )
    }

    /// The ``Code`` and the advice for an SQLSTATE.
    static func classify(sqlState: String) -> (Code, String) {
        switch sqlState {
        case "55P03", "40P01", "40001":
            return (
                .locked,
                "Another session held a lock on the rows or the table for longer than the lock timeout, or two "
                    + "transactions deadlocked: retry later, or find the long transaction in pg_stat_activity."
            )
        case "53100":
            return (.full, "The server's disk is full: free space on the server (or VACUUM other tables), then retry.")
        case "53200":
            return (.full, "The server is out of memory: retry later, or lower its memory settings.")
        case "53300":
            return (
                .io,
                "The server has no connection slots left: lower maxConnections of the stores using it, or raise "
                    + "max_connections on the server."
            )
        case "42501":
            return (
                .permissionDenied,
                "The user lacks a privilege on the table: GRANT SELECT, INSERT, UPDATE, DELETE on it (and CREATE on "
                    + "the schema for the first open), or connect as its owner."
            )
        case "28000", "28P01":
            return (.permissionDenied, "The server refused the user or password: check the conninfo and pg_hba.conf.")
        case "25006":
            return (
                .permissionDenied,
                "The server is a read-only standby: point the conninfo at the primary (target_session_attrs=read-write)."
            )
        case "XX001", "XX002":
            return (
                .corrupt,
                "The server found damaged data in the table or its index: restore from a backup, or REINDEX the table."
            )
        case "54000":
            return (.invalidValue, "PostgreSQL stores values up to 1 GB: split the value or keep it in a file.")
        default:
            break
        }
        switch sqlState.prefix(2) {
        case "08", "57":
            return (
                .io,
                "The server ended the connection or is shutting down: check that it is running, then retry."
            )
        case "42":
            return (
                .unsupported,
                "The table does not have Sovaria's layout (key bytea primary key, value bytea): use another table name."
            )
        default:
            return (.io, "Check the server's log for this error, then retry.")
        }
    }

    /// The SQLSTATE as PostgreSQL packs it (`MAKE_SQLSTATE`): `(c - '0') & 0x3F`, six bits a
    /// character, first character lowest.
    static func packed(sqlState: String) -> Int32 {
        var value: Int32 = 0
        for (index, byte) in sqlState.utf8.prefix(5).enumerated() {
            value |= (Int32(byte &- UInt8(ascii: "0")) & 0x3F) << (6 * Int32(index))
        }
        return value
    }

    /// libpq's messages end with a newline and may span lines: one line reads better in a message.
    private static func cleaned(_ message: String) -> String {
        message.split(whereSeparator: \.isNewline)
            .map { line in String(line.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " }.reversed()) }
            .filter { !$0.isEmpty }.joined(separator: " ")
    }
}
