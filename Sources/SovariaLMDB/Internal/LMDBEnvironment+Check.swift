import CLMDB
import Sovaria

extension LMDBEnvironment {
    /// LMDB's own accounts of the environment, held against a walk of every entry: `sovaria
    /// verify`'s engine check. Runs in one read transaction on the calling thread.
    ///
    /// Checks the reader table (`mdb_reader_check`, clearing slots of dead processes), that the
    /// pages `mdb_stat` counts fit below the last page `mdb_env_info` reports, that a cursor walks
    /// every entry (`MDB_FIRST`, `MDB_NEXT`) without an error, in strictly ascending key order, with
    /// UTF-8 keys (values are any bytes), and that it finds as many entries as `mdb_stat` says.
    func check() throws -> LMDBIntegrityReport {
        try read { txn, dbi in
            var report = LMDBIntegrityReport()
            let dataFile = path + "/data.mdb"
            guard let env = mdb_txn_env(txn) else { return report }
            var dead: Int32 = 0
            let readerCheck = mdb_reader_check(env, &dead)
            if readerCheck == MDB_SUCCESS {
                report.staleReadersCleared = Int(dead)
            } else {
                report.problems.append(
                    "LMDB's reader table (lock.mdb) could not be checked: \(OfflineStoreError.lmdbDescription(readerCheck)). "
                        + "Close every program using \(path), delete lock.mdb and open the store again.")
            }
            var status = MDB_stat()
            try checkLMDB(mdb_stat(txn, dbi, &status), "Reading LMDB's statistics of \(dataFile) failed")
            report.entriesCounted = Int(status.ms_entries)
            report.depth = Int(status.ms_depth)
            report.pages = Int(status.ms_branch_pages) + Int(status.ms_leaf_pages) + Int(status.ms_overflow_pages)
            let lastPage = Int(Self.info(env).me_last_pgno)
            if report.pages > lastPage + 1 {
                report.problems.append(
                    "LMDB counts \(report.pages) pages in use, more than the \(lastPage + 1) pages of \(dataFile): its "
                        + "meta pages are damaged.")
            }
            try walk(txn, dbi, dataFile: dataFile, into: &report)
            if report.entriesWalked != report.entriesCounted, report.problems.isEmpty {
                report.problems.append(
                    "A walk of \(dataFile) found \(report.entriesWalked) entries where LMDB counts "
                        + "\(report.entriesCounted): its pages are damaged.")
            }
            return report
        }
    }

    private func walk(
        _ txn: OpaquePointer, _ dbi: MDB_dbi, dataFile: String, into report: inout LMDBIntegrityReport
    ) throws {
        var opened: OpaquePointer?
        try checkLMDB(mdb_cursor_open(txn, dbi, &opened), "Opening an LMDB cursor on \(dataFile) failed")
        guard let cursor = opened else { return }
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val()
        var value = MDB_val()
        var previous: [UInt8]?
        var rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while rc == MDB_SUCCESS {
            let keyBytes = Array(key.bytes)
            let name = String(decoding: keyBytes, as: UTF8.self).debugDescription
            if let previous, !previous.lexicographicallyPrecedes(keyBytes) {
                report.problems.append("The key \(name) in \(dataFile) is out of order: its page is damaged.")
            }
            // Keys are UTF-8 by contract; values are any bytes (set(_:data:)), so only keys are checked.
            if (try? key.string("key")) == nil {
                report.problems.append("A key in \(dataFile) is not valid UTF-8 (\(name)).")
            }
            report.entriesWalked += 1
            previous = keyBytes
            rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
        if rc != MDB_NOTFOUND {
            report.problems.append(
                "Walking every entry of \(dataFile) stopped after \(report.entriesWalked): "
                    + "\(OfflineStoreError.lmdbDescription(rc)).")
        }
    }
}
