import CLibPQ

/// The libpq (PostgreSQL client library) this process links.
public enum PostgresLibrary {
    /// Its version, e.g. `"15.18"` (libpq 10 and later number themselves major.minor).
    public static var version: String {
        let number = Int(PQlibVersion())
        return "\(number / 10_000).\(number % 10_000)"
    }
}
