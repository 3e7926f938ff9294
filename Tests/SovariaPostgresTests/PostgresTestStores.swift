import Foundation
import Sovaria
import SovariaPostgres
import SovariaTestKit
import SovariaTestServers

/// Stores on the shared test database, one table per test folder.
enum PostgresTestStores {
    /// A conformance factory: each folder gets a table of its own, so reopening a folder reopens
    /// the same table.
    static func factory(_ durability: Durability) -> StoreFactory {
        StoreFactory("postgres(\(durability))", persistent: true) { folder in
            try PostgresOfflineStore(
                connection: try await PostgresCluster.sharedDatabase(), table: PostgresCluster.tableName(for: folder),
                durability: durability)
        }
    }

    /// A store on a fresh table of the shared database.
    static func make(
        durability: Durability = .synced, configuration: PostgresOfflineStore.Configuration = .init()
    ) async throws -> PostgresOfflineStore {
        try PostgresOfflineStore(
            connection: try await PostgresCluster.sharedDatabase(),
            table: "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased(),
            durability: durability, configuration: configuration)
    }
}

/// The error `body` throws, or `nil` when it succeeds.
func offlineStoreError(_ body: () async throws -> Void) async -> OfflineStoreError? {
    do {
        try await body()
        return nil
    } catch let error as OfflineStoreError {
        return error
    } catch {
        return OfflineStoreError(.unsupported, "not an OfflineStoreError: \(error)")
    }
}
