import Sovaria

extension OfflineStoreError.Engine {
    /// `PostgresOfflineStore` (libpq and the PostgreSQL server). Its `nativeCode`
    /// is the SQLSTATE packed as PostgreSQL packs it (`MAKE_SQLSTATE`: six bits a character); the
    /// message names the SQLSTATE in text, e.g. `(SQLSTATE 55P03)`.
    public static let postgres = OfflineStoreError.Engine("postgres")
}
