/// What a full read of a LevelDB store found: `sovaria verify`'s engine check
/// (``LevelDBOfflineStore/verifyEveryEntry()``).
package struct LevelDBIntegrityReport: Sendable {
    /// Entries read: all of them, or those outside the blocks that failed their checksums.
    package var entries = 0
    /// What is wrong, one sentence each; empty for a sound store.
    package var problems: [String] = []
}
