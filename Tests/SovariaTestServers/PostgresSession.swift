import CLibPQ

/// One connection to PostgreSQL that a test holds open across other work: a transaction begun
/// here stays open until the test commits it, so it can commit after one that began later (two
/// transactions committed in the reverse order of their positions).
public final class PostgresSession: @unchecked Sendable {
    /// Why a statement failed, in the server's words.
    public struct Failure: Error, CustomStringConvertible {
        /// The server's (or libpq's) message.
        public let description: String
    }

    // @unchecked Sendable: a test uses a session from one task at a time.
    private let handle: OpaquePointer

    /// Connects with `conninfo` (as ``RESTServer/conninfo`` gives it).
    ///
    /// - Throws: ``Failure`` when the connection fails.
    public init(conninfo: String) throws {
        guard let handle = PQconnectdb(conninfo) else { throw Failure(description: "libpq is out of memory") }
        self.handle = handle
        guard PQstatus(handle) == CONNECTION_OK else {
            defer { PQfinish(handle) }
            throw Failure(description: String(cString: PQerrorMessage(handle)))
        }
    }

    deinit { PQfinish(handle) }

    /// Runs `sql` (one or more statements) and waits for its end; rows it returns are dropped.
    ///
    /// - Throws: ``Failure`` with the server's message when a statement fails.
    public func execute(_ sql: String) throws {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw Failure(description: String(cString: PQerrorMessage(handle)))
        }
    }
}
