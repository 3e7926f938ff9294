import CLMDB
import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension LMDBEnvironment {
    /// Shrinks `data.mdb` to the pages in use: copies the environment with `MDB_CP_COMPACT` into a folder
    /// of its own, then closes the environment, renames the copy over `data.mdb` and opens it again.
    ///
    /// Call only on ``writeQueue``, so no write of this process lands between the copy and the swap. The
    /// copy holds the shared side of ``handles``' lock (reads go on); the swap holds the exclusive side, so every store
    /// sharing this environment finds the new file on its next call. The swap is refused with
    /// ``OfflineStoreError/Code/locked`` when another process has the environment open or wrote to it
    /// during the copy: replacing the file under another process would lose its writes.
    func compact() throws {
        try reopenIfClosed()
        let copyFolder = path + "/" + LMDBFolder.copyFolderPrefix + String(getpid())
        LMDBFolder.removeTree(copyFolder)
        try LMDBFolder.create(copyFolder)
        defer { LMDBFolder.removeTree(copyFolder) }
        let copiedFile = copyFolder + "/data.mdb"

        let copiedTxnID: Int = try handles.withShared { handles in
            guard let handles else { throw Self.closedError(path) }
            let txnID = Self.info(handles.env).me_last_txnid
            try checkLMDB(
                mdb_env_copy2(handles.env, copyFolder, UInt32(MDB_CP_COMPACT)),
                "Copying the LMDB environment to compact it failed (the store is unchanged)")
            return txnID
        }
        try LMDBFolder.sync(copiedFile, directory: false)

        try handles.withExclusive { handles in
            guard let open = handles else { throw Self.closedError(path) }
            let info = Self.info(open.env)
            guard info.me_last_txnid == copiedTxnID else {
                throw OfflineStoreError(
                    .locked,
                    "Another process wrote to the LMDB environment while it was being compacted; the store is "
                        + "unchanged. Call compact() when no other process uses the folder.",
                    engine: .lmdb)
            }
            abortIdleReadTransactions()
            mdb_env_close(open.env)
            handles = nil

            let swapError = swapIn(copiedFile)
            do {
                handles = try Self.openHandles(path: path, options: options, mapSizeBytes: info.me_mapsize).0
            } catch {
                throw swapError ?? error
            }
            if let swapError { throw swapError }
        }
    }

    /// Renames `copiedFile` over `data.mdb` while holding the lock that keeps other processes from opening
    /// the environment; returns what went wrong, if anything. The environment must be closed.
    private func swapIn(_ copiedFile: String) -> OfflineStoreError? {
        do {
            guard let descriptor = try LMDBFolder.lockOutOtherProcesses(lockFile: path + "/lock.mdb") else {
                return OfflineStoreError(
                    .locked,
                    "Another process has the LMDB environment open, so it was not compacted; call compact() when "
                        + "no other process uses the folder.",
                    engine: .lmdb)
            }
            defer { LMDBFolder.releaseEnvironmentLock(descriptor) }
            try LMDBFolder.replace(path + "/data.mdb", with: copiedFile)
            try LMDBFolder.sync(path, directory: true)
            return nil
        } catch {
            return error
        }
    }

    static func closedError(_ path: String) -> OfflineStoreError {
        OfflineStoreError(
            .closed, "The LMDB environment in \(path) is closed after a failed reopen; open the store again.",
            engine: .lmdb)
    }
}
