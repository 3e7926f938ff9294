import Foundation

extension PostgresCluster {
    private static let sharedDatabaseName = SharedDatabase()

    /// The conninfo of one database of the shared cluster, made on first use and used by every
    /// test of this process that asks for it; tests keep apart by table (``tableName(for:)``).
    public static func sharedDatabase() async throws -> String {
        try await sharedDatabaseName.conninfo()
    }

    /// A table name of its own for a test folder: the same folder always gives the same name, so
    /// a store "reopened" on a folder finds what an earlier one wrote, as a file-based one would.
    public static func tableName(for folder: URL) -> String {
        // FNV-1a 64 of the path: stable across runs and processes (Hasher is seeded per process).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in folder.standardizedFileURL.path.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return "kv_" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// Makes the shared database once: one task every caller awaits (the actor is reentrant).
private actor SharedDatabase {
    private var making: Task<String, any Error>?

    func conninfo() async throws -> String {
        if let making { return try await making.value }
        let task = Task { try await PostgresCluster.shared().makeDatabase() }
        making = task
        return try await task.value
    }
}
