import Sovaria

extension StoreScheme {
    /// ``PostgresOfflineStore`` on a server: `postgres:CONNINFO[?durability=flushed&table=NAME]`,
    /// where CONNINFO is libpq's (`host=db dbname=app`, or a `postgresql://` URL with its own
    /// parameters), passed on as written; empty takes libpq's defaults and `PG*` variables.
    /// Table: `sovaria_kv` by default.
    ///
    /// With `read=primary|standby-if-caught-up|any-standby`, CONNINFO names a primary and its
    /// standbys as one multi-host conninfo (`host=db1,db2,db3 port=5432`), and reads follow that
    /// ``PostgresOfflineStore/ReadPolicy``: the store of
    /// ``PostgresOfflineStore/init(servers:table:durability:configuration:)``, whose servers are
    /// checked as the URL opens (``PostgresOfflineStore/checkServers()``).
    /// A `read=` that names no policy is refused before anything opens
    /// (`OfflineStores.validate` too), as
    /// `StoreURLError.Reason.badValue(option:allowed:)`.
    public static let postgres = engine(
        "postgres", product: "SovariaPostgres", location: .optional, options: ["table", "read"],
        optionValues: ["read": PostgresOfflineStore.ReadPolicy.allCases.map(\.urlName)]
    ) { url in
        let table = url.options["table"] ?? "sovaria_kv"
        guard let read = url.options["read"] else {
            return try PostgresOfflineStore(connection: url.location, table: table, durability: url.durability)
        }
        guard let policy = PostgresOfflineStore.ReadPolicy.named(read) else {
            // OfflineStores checked the value against optionValues before calling this.
            throw StoreURLError(
                url: "\(url)", part: read,
                reason: .badValue(option: "read", allowed: PostgresOfflineStore.ReadPolicy.allCases.map(\.urlName)))
        }
        var configuration = PostgresOfflineStore.Configuration()
        configuration.readPolicy = policy
        let store = try PostgresOfflineStore(
            servers: url.location, table: table, durability: url.durability, configuration: configuration)
        try await store.checkServers()
        return store
    }
}

extension PostgresOfflineStore.ReadPolicy {
    /// Its name in a store URL's `read=`: `primary`, `standby-if-caught-up` or `any-standby`.
    var urlName: String {
        switch self {
        case .primary: "primary"
        case .standbyIfCaughtUp: "standby-if-caught-up"
        case .anyStandby: "any-standby"
        }
    }

    /// The policy a store URL's `read=` names, in any case.
    static func named(_ name: String) -> Self? {
        allCases.first { $0.urlName == name.lowercased() }
    }
}
