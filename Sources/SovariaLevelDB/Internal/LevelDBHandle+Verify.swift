import CLevelDB
import Sovaria

extension LevelDBHandle {
    /// Reads every entry once, in key order, with one iterator whose options verify every block's
    /// checksum and keep the blocks out of the cache; checks that keys ascend and are UTF-8
    /// (values are any bytes). LevelDB's iterator steps over a block that fails its checksum and keeps
    /// the first such error, read here at the end: the entries counted are those that still read.
    func verifyEveryEntry() -> LevelDBIntegrityReport {
        let options: OpaquePointer = leveldb_readoptions_create()
        defer { leveldb_readoptions_destroy(options) }
        leveldb_readoptions_set_verify_checksums(options, 1)
        leveldb_readoptions_set_fill_cache(options, 0)
        let iterator: OpaquePointer = leveldb_create_iterator(database, options)
        defer { leveldb_iter_destroy(iterator) }
        var report = LevelDBIntegrityReport()
        var previous: [UInt8]?
        leveldb_iter_seek_to_first(iterator)
        while leveldb_iter_valid(iterator) != 0 {
            var keyLength = 0
            let keyStart = leveldb_iter_key(iterator, &keyLength)
            let key = Array(UnsafeRawBufferPointer(start: keyStart, count: keyLength))
            let name = String(decoding: key, as: UTF8.self)
            if let previous, !previous.lexicographicallyPrecedes(key) {
                report.problems.append(
                    "The key \(name.debugDescription) is out of order (after \(String(decoding: previous, as: UTF8.self).debugDescription))."
                )
            }
            // Keys are UTF-8 by contract; values are any bytes (set(_:data:)), so only keys are checked.
            if String(validatingBytes: keyStart, count: keyLength) == nil {
                report.problems.append("A key is not valid UTF-8 (\(name.debugDescription)).")
            }
            report.entries += 1
            previous = key
            leveldb_iter_next(iterator)
        }
        var errorPointer: UnsafeMutablePointer<CChar>?
        leveldb_iter_get_error(iterator, &errorPointer)
        if let errorPointer {
            let message = String(cString: errorPointer)
            leveldb_free(errorPointer)
            report.problems.append(
                "LevelDB's iteration read \(report.entries) entries but not every block: \(message) (in \(path)). "
                    + "The entries of the damaged blocks cannot be read.")
        }
        return report
    }
}
