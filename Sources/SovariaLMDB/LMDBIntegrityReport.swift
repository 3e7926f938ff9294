/// What LMDB's own accounts and a walk of every entry found: `sovaria verify`'s engine check
/// (``LMDBOfflineStore/integrityReport()``).
package struct LMDBIntegrityReport: Sendable {
    /// Entries `mdb_stat` counts in the main database.
    package var entriesCounted = 0
    /// Entries a cursor walked before it ended (at the end, or at an error).
    package var entriesWalked = 0
    /// The b-tree's depth, from `mdb_stat`.
    package var depth = 0
    /// Branch, leaf and overflow pages in use, from `mdb_stat`.
    package var pages = 0
    /// Reader slots of dead processes `mdb_reader_check` cleared now.
    package var staleReadersCleared = 0
    /// What is wrong, one sentence each naming `data.mdb`; empty for a sound environment.
    package var problems: [String] = []
}
