import Sovaria

extension StoreScheme {
    /// ``PostgresOfflineStore`` on a server: `postgres:CONNINFO[?durability=flushed&table=NAME]`,
    /// where CONNINFO is libpq's (`host=db dbname=app`, or a `postgresql://` URL with its own
    /// parameters), passed on as written; empty takes libpq's defaults and `PG*` variables.
    /// Table: `sovaria_kv` by default.
    public static let postgres = engine(
        "postgres", product: "SovariaPostgres", location: .optional, options: ["table"]
    ) { url in
        try PostgresOfflineStore(
            connection: url.location, table: url.options["table"] ?? "sovaria_kv", durability: url.durability)
    }
}
