import CLibPQ
import Sovaria

/// One server of a store that reads from standbys: its conninfo, where it points (for messages),
/// and the role the configuration gave it.
struct PostgresServer: Sendable {
    /// The role a server was given.
    enum Role: Sendable {
        /// Named as the primary (`PostgresOfflineStore.init(primary:standbys:…)`).
        case primary
        /// Named as a standby.
        case standby
        /// One host of a multi-host conninfo: its role is what the server says it is.
        case either
    }

    /// The libpq conninfo of this one server.
    let conninfo: String
    /// `host=… port=… dbname=… user=…`, never a password.
    let description: String
    /// The role the configuration gave it.
    let role: Role

    /// The server `conninfo` names (one host), in `role`.
    init(conninfo: String, role: Role) throws(OfflineStoreError) {
        let options = try PostgresConninfo(conninfo)
        self.conninfo = conninfo
        description = options.description
        self.role = role
    }

    /// One server per host of `conninfo` (`host=a,b,c port=5432,5433,5434`, or a URL with several
    /// hosts), each with the conninfo's other options; their roles are what each server says.
    /// `target_session_attrs` is dropped: the store picks the server for each call itself.
    static func servers(in conninfo: String) throws(OfflineStoreError) -> [PostgresServer] {
        let options = try PostgresConninfo(conninfo)
        let hosts = options.list("host")
        let addresses = options.list("hostaddr")
        let count = max(hosts.count, addresses.count, 1)
        let ports = options.list("port")
        guard ports.count <= 1 || ports.count == count else {
            throw OfflineStoreError(
                .unsupported,
                "The PostgreSQL connection string names \(count) hosts and \(ports.count) ports: give one port for "
                    + "all of them, or one for each.",
                engine: .postgres)
        }
        return try (0..<count).map { (index) throws(OfflineStoreError) in
            var one = options.fields.filter { !["host", "hostaddr", "port", "target_session_attrs"].contains($0.0) }
            if !hosts.isEmpty { one.append(("host", hosts[index])) }
            if !addresses.isEmpty { one.append(("hostaddr", addresses[index])) }
            if let port = ports.count == 1 ? ports[0] : ports.isEmpty ? nil : ports[index], !port.isEmpty {
                one.append(("port", port))
            }
            return try PostgresServer(conninfo: PostgresConninfo.format(one), role: .either)
        }
    }
}

/// A conninfo as libpq parses it: the options it sets, in libpq's order.
struct PostgresConninfo: CustomStringConvertible {
    /// Each option the conninfo sets, with its value.
    let fields: [(String, String)]

    /// Parses `conninfo` (key/value pairs or a `postgresql://` URL); throws
    /// ``OfflineStoreError/Code/unsupported`` with libpq's reason when it cannot.
    init(_ conninfo: String) throws(OfflineStoreError) {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &message) else {
            let reason = message.map { String(cString: $0) } ?? "libpq is out of memory"
            PQfreemem(message)
            throw OfflineStoreError(
                .unsupported,
                "The PostgreSQL connection string cannot be parsed: \(reason.split(whereSeparator: \.isNewline).first ?? ""). "
                    + "Write it as key=value pairs (host=… dbname=…) or as a postgresql:// URL.",
                engine: .postgres)
        }
        defer { PQconninfoFree(options) }
        var fields: [(String, String)] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { fields.append((String(cString: keyword), String(cString: value))) }
            option += 1
        }
        self.fields = fields
    }

    /// The value of `name`, or `nil`.
    subscript(name: String) -> String? { fields.first { $0.0 == name }?.1 }

    /// The comma-separated values of `name` (hosts, ports), or none.
    func list(_ name: String) -> [String] {
        guard let value = self[name] else { return [] }
        return value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }

    /// `host=… port=… dbname=… user=…` (never the password), or where libpq's defaults point.
    var description: String {
        let shown = ["host", "hostaddr", "port", "dbname", "user"].compactMap { name in
            self[name].map { "\(name)=\($0)" }
        }
        return shown.isEmpty ? "libpq's defaults (PGHOST, PGPORT, PGDATABASE, PGUSER)" : shown.joined(separator: " ")
    }

    /// `fields` as a key/value conninfo, every value quoted (`\` and `'` escaped).
    static func format(_ fields: [(String, String)]) -> String {
        fields.map { name, value in
            let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
            return "\(name)='\(escaped)'"
        }.joined(separator: " ")
    }
}

/// Where a server's state is in the write-ahead log: the answer of
/// `PostgresSchema.walPosition`.
struct WALPosition: Sendable {
    /// Whether the server is a standby (in recovery).
    let isStandby: Bool
    /// On a standby, the end of the last record it replayed; on a primary, the end of what was
    /// inserted. 0 when a standby has replayed nothing yet.
    let lsn: UInt64

    /// The position in the first row of `rows` (binary: a `bool`, then a big-endian `pg_lsn`).
    init(_ rows: PostgresResult) throws(OfflineStoreError) {
        let flag = rows.rowCount == 1 ? rows.bytes(row: 0, column: 0) : UnsafeBufferPointer(start: nil, count: 0)
        guard flag.count == 1 else {
            throw OfflineStoreError(
                .io, "The server answered the write-ahead log position with \(rows.rowCount) rows.", engine: .postgres)
        }
        isStandby = flag[0] != 0
        lsn = rows.uint64(row: 0, column: 1) ?? 0
    }
}
