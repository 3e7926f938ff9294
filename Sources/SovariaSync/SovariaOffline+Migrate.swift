import Sovaria

extension SovariaOffline {
    /// The prefix of every key the engine writes: `"sov:"`.
    public static var keyPrefix: String { OfflineMigration.keyPrefix }

    /// What a migration does with a damaged source entry (`Sovaria.OfflineMigration.DamagedEntryPolicy`).
    public typealias DamagedEntryPolicy = OfflineMigration.DamagedEntryPolicy
    /// What a migration did (`Sovaria.OfflineMigration.MigrationReport`).
    public typealias MigrationReport = OfflineMigration.MigrationReport

    /// Copies the offline entries (keys starting with `"sov:" + prefix`) of `source` into `target`,
    /// keeping every key `target` already has; returns how many it copied. The same call as
    /// `Sovaria.OfflineMigration.migrate(from:to:prefix:batchSize:)`, on the controller.
    public static func migrate(
        from source: any OfflineStore, to target: any OfflineStore, prefix: String = "", batchSize: Int = 1_000
    ) async throws -> Int {
        try await OfflineMigration.migrate(from: source, to: target, prefix: prefix, batchSize: batchSize)
    }

    /// Copies like ``migrate(from:to:prefix:batchSize:)``, skipping (and reporting) damaged entries
    /// with `Sovaria.OfflineMigration.DamagedEntryPolicy.skip`.
    public static func migrate(
        from source: any OfflineStore, to target: any OfflineStore, prefix: String = "", batchSize: Int = 1_000,
        onDamagedEntry policy: DamagedEntryPolicy
    ) async throws -> MigrationReport {
        try await OfflineMigration.migrate(
            from: source, to: target, prefix: prefix, batchSize: batchSize, onDamagedEntry: policy)
    }
}
