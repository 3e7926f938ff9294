import CLMDB
import Sovaria

extension LMDBEnvironment {
    /// The size of the memory map in bytes: the most the data file can grow to before the map grows.
    var mapSizeBytes: Int {
        handles.withShared { handles in
            guard let handles else { return 0 }
            return Self.info(handles.env).me_mapsize
        }
    }

    /// Doubles the map (up to `maxMapSizeBytes`) after `MDB_MAP_FULL`.
    ///
    /// Holds the exclusive side of ``handles``' lock, so no transaction of this process is active, as
    /// `mdb_env_set_mapsize` requires; idle read transactions are aborted first.
    func growMap() throws {
        try handles.withExclusive { handles in
            guard let open = handles else { return }
            let current = Self.info(open.env).me_mapsize
            let limit = options.maxMapSizeBytes
            guard current < limit else {
                throw OfflineStoreError.lmdbMapCouldNotGrow("it has reached maxMapSizeBytes (\(limit) bytes)")
            }
            let target = current > limit / 2 ? limit : current * 2
            abortIdleReadTransactions()
            let rc = mdb_env_set_mapsize(open.env, target)
            guard rc == MDB_SUCCESS else {
                // A failed remap can leave the map unmapped: map the old size again, or close so the next
                // call reopens.
                if mdb_env_set_mapsize(open.env, current) != MDB_SUCCESS {
                    mdb_env_close(open.env)
                    handles = nil
                }
                throw OfflineStoreError.lmdbMapCouldNotGrow(
                    "mapping \(target) bytes failed: \(OfflineStoreError.lmdbDescription(rc))", nativeCode: rc)
            }
        }
    }

    /// Adopts the map size another process set (`MDB_MAP_RESIZED`): `mdb_env_set_mapsize(env, 0)` with no
    /// transaction active in this process.
    func adoptLargerMap() throws {
        try handles.withExclusive { handles in
            guard let open = handles else { return }
            abortIdleReadTransactions()
            let rc = mdb_env_set_mapsize(open.env, 0)
            guard rc == MDB_SUCCESS else {
                mdb_env_close(open.env)
                handles = nil
                throw OfflineStoreError.lmdb(rc, "Adopting the LMDB map size another process set failed")
            }
            // The other process grew the file too: check it holds every page before reading them.
            try Self.checkDataFileIsWhole(open.env, path: path)
        }
    }

    static func info(_ env: OpaquePointer) -> MDB_envinfo {
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return info
    }
}
