import Sovaria
import SovariaSQLite
import Testing

/// Engine-specific integrity checks run after each crash round.
enum CrashIntegrity {
    static func check(_ store: any OfflineStore) async throws {
        if let sqlite = store as? SQLiteOfflineStore {
            #expect(try await sqlite.quickCheck(), "PRAGMA quick_check failed after a crash")
        }
    }
}
