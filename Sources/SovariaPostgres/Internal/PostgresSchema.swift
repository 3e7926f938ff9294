import Sovaria

/// The table a store keeps its entries in, and the statements every connection prepares on it.
///
/// `key bytea PRIMARY KEY`: `bytea` compares with memcmp, shorter first on a tie, which is the
/// byte order of ``StoreKey``, and its B-tree index serves prefix scans as range scans. Values are
/// `bytea` too, holding the value's UTF-8 bytes: `text` cannot hold `"\0"`, which the contract
/// allows in values, and would check and convert encodings on every row.
struct PostgresSchema: Sendable {
    /// The table name as given (validated), for messages.
    let table: String
    /// The table name quoted for SQL.
    private let quoted: String

    /// The layout of `table`; throws ``OfflineStoreError/Code/unsupported`` unless `table` is a
    /// plain lower-case identifier.
    init(table: String) throws(OfflineStoreError) {
        guard Self.isValidIdentifier(table) else {
            throw OfflineStoreError(
                .unsupported,
                "\"\(table)\" is not a table name PostgresOfflineStore accepts: use 1 to 63 characters of a-z, 0-9 "
                    + "and _, starting with a letter or _ (the name goes into SQL, so nothing else is allowed).",
                engine: .postgres)
        }
        self.table = table
        quoted = "\"\(table)\""
    }

    /// Lower-case letters, digits and `_`, not starting with a digit, at most 63 bytes
    /// (PostgreSQL's `NAMEDATALEN - 1`): a name that needs no quoting rules and cannot inject SQL.
    static func isValidIdentifier(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 63, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
        else { return false }
        return bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "_")
        }
    }

    private static let bytea: UInt32 = 17
    private static let int8: UInt32 = 20

    var selectValue: PostgresConnection.Statement {
        .init(name: "sovaria_get", sql: "SELECT value FROM \(quoted) WHERE key = $1", parameterTypes: [Self.bytea])
    }
    var upsert: PostgresConnection.Statement {
        .init(
            name: "sovaria_set",
            sql:
                "INSERT INTO \(quoted) (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            parameterTypes: [Self.bytea, Self.bytea])
    }
    var delete: PostgresConnection.Statement {
        .init(name: "sovaria_delete", sql: "DELETE FROM \(quoted) WHERE key = $1", parameterTypes: [Self.bytea])
    }
    /// One index range scan: `lower <= key < upper`; `LIKE` would not use the index for bytea.
    var selectKeys: PostgresConnection.Statement {
        .init(
            name: "sovaria_keys", sql: "SELECT key FROM \(quoted) WHERE key >= $1 AND key < $2 ORDER BY key",
            parameterTypes: [Self.bytea, Self.bytea])
    }
    var selectKeysPage: PostgresConnection.Statement {
        .init(
            name: "sovaria_keys_page",
            sql: "SELECT key FROM \(quoted) WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3",
            parameterTypes: [Self.bytea, Self.bytea, Self.int8])
    }
    var selectEntries: PostgresConnection.Statement {
        .init(
            name: "sovaria_entries",
            sql: "SELECT key, value FROM \(quoted) WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3",
            parameterTypes: [Self.bytea, Self.bytea, Self.int8])
    }

    /// Every statement a connection to the primary prepares when it opens.
    var statements: [PostgresConnection.Statement] {
        [selectValue, upsert, delete, selectKeys, selectKeysPage, selectEntries, Self.walPosition, Self.flushPosition]
    }

    /// The primary's flush position, in ``WALPosition``'s form: past every commit flushed, and no
    /// further than what the standbys can have received.
    static let flushPosition = PostgresConnection.Statement(
        name: "sovaria_flush_position", sql: "SELECT pg_is_in_recovery(), pg_current_wal_flush_lsn()",
        parameterTypes: [])

    /// The statements a connection to a standby prepares: the reads and the replay position.
    var standbyStatements: [PostgresConnection.Statement] {
        [selectValue, selectKeys, selectKeysPage, selectEntries, Self.walPosition]
    }

    /// Whether the server is a standby, and how far its state goes in the log: on a standby the
    /// last record it replayed (every transaction committed up to there is visible), on a primary
    /// the end of what was inserted (past every commit a session could have seen). Both as
    /// `pg_lsn`, whose binary form is a big-endian 64-bit number. Read by ``WALPosition``.
    static let walPosition = PostgresConnection.Statement(
        name: "sovaria_wal_position",
        sql: """
            SELECT pg_is_in_recovery(), CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() \
            ELSE pg_current_wal_insert_lsn() END
            """,
        parameterTypes: [])

    /// The timeline a server is on, as an `int8` (SQL to put in a column, see
    /// ``standbyTimeline``): on a primary, the one it writes (the first 8 hex digits of its WAL
    /// file's name; `pg_control_checkpoint()` lags behind a promotion); on a standby, the one of
    /// the WAL it receives (`received_tli`, shown to superusers and `pg_read_all_stats`), else of
    /// its last restartpoint, which lags behind a switch to a new timeline (so a standby that just
    /// moved on may be taken for one of the old timeline, and be left out a while, never the
    /// other way round).
    static let timelineColumn = """
        CASE WHEN pg_is_in_recovery() THEN COALESCE((SELECT received_tli FROM pg_stat_wal_receiver)::int8, \
        (SELECT timeline_id FROM pg_control_checkpoint())::int8) \
        ELSE ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::int8 END
        """

    /// The server's timeline, alone (see ``timelineColumn``).
    static let standbyTimeline = "SELECT \(timelineColumn)"

    /// `VACUUM` of the table (it cannot run inside a transaction).
    var vacuum: String { "VACUUM \(quoted)" }

    /// Creates the table when it is missing, or checks the layout of the one there.
    ///
    /// Processes opening the same new table at once would race in `CREATE TABLE IF NOT EXISTS`
    /// (one fails on a unique index of the catalog): a transaction-scoped advisory lock on the
    /// table's name makes them take turns. On a standby, which cannot create anything, only the
    /// layout is checked: a store pointed at a standby reads (its writes throw
    /// `.permissionDenied`).
    func prepare(on connection: PostgresConnection) throws(OfflineStoreError) {
        let recovery = try connection.query("SELECT pg_is_in_recovery()", [], while: "Asking the server's role")
        if recovery.bytes(row: 0, column: 0).first == 1 {
            try checkLayout(on: connection)
            return
        }
        try connection.execute("BEGIN", while: "Starting the table check")
        do {
            _ = try connection.query(
                "SELECT pg_advisory_xact_lock(hashtext($1))", [.text("sovaria:" + table)],
                while: "Waiting for other processes creating table \(table)")
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS \(quoted) (
                    key bytea PRIMARY KEY CHECK (octet_length(key) BETWEEN 1 AND \(StoreKey.maxUTF8Count)),
                    value bytea NOT NULL)
                """, while: "Creating table \(table)")
            try checkLayout(on: connection)
            try connection.commit(while: "Saving table \(table)")
        } catch {
            if connection.isInTransaction, !connection.isBroken {
                try? connection.execute("ROLLBACK", while: "Undoing the table check")
            }
            throw error
        }
    }

    /// Throws ``OfflineStoreError/Code/unsupported`` unless the table's columns are `key bytea`
    /// and `value bytea`: an existing table of another program must not be written into.
    private func checkLayout(on connection: PostgresConnection) throws(OfflineStoreError) {
        let columns = try connection.query(
            """
            SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
            WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum
            """, [.text(quoted)], while: "Reading the layout of table \(table)")
        var found: [String] = []
        for row in 0..<columns.rowCount {
            let name = try columns.string(row: row, column: 0, what: "column name", table: table)
            let type = try columns.string(row: row, column: 1, what: "column type", table: table)
            found.append("\(name) \(type)")
        }
        guard !found.isEmpty else {
            throw OfflineStoreError(
                .unsupported,
                "Table \(table) does not exist on this standby: a store on the primary creates it, and the standby "
                    + "has it once it replayed that.",
                engine: .postgres)
        }
        guard found == ["key bytea", "value bytea"] else {
            throw OfflineStoreError(
                .unsupported,
                "Table \(table) exists with columns (\(found.joined(separator: ", "))), not Sovaria's (key bytea, value "
                    + "bytea): give the store another table name, or drop that table if nothing else uses it.",
                engine: .postgres)
        }
    }
}
