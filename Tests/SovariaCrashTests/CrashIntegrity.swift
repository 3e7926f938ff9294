import Sovaria

/// Engine-specific integrity checks run after each crash round.
enum CrashIntegrity {
    static func check(_ store: any OfflineStore) async throws {}
}
