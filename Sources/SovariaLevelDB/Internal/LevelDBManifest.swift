import Foundation
import Sovaria

/// Reads a LevelDB MANIFEST before LevelDB opens it, to catch the one damage LevelDB opens
/// silently: a MANIFEST cut short.
///
/// LevelDB reads its MANIFEST (a log of version edits) up to the last whole record and ignores a
/// torn tail, since a crash can leave one. A MANIFEST cut far back then describes an old version
/// of the database: one whose log was deleted long ago. LevelDB opens that version, finds no log
/// to replay, and deletes every table file the old version does not name — the data. The check
/// here: if the log the MANIFEST's last version names is gone while table files it does not name
/// exist, the MANIFEST lost edits, and opening would discard those tables.
///
/// A crash never produces that state: LevelDB deletes a log only after a MANIFEST edit naming its
/// successor is synced, so the log a readable MANIFEST names always exists after a crash. Byte
/// flips inside records are LevelDB's to find (every record has a CRC, checked at open).
enum LevelDBManifest {
    /// What the readable part of a MANIFEST says.
    struct Version {
        /// The log whose writes are not in any table yet.
        var logNumber: UInt64 = 0
        /// The table files of the version.
        var liveTables: Set<UInt64> = []
    }

    /// Throws ``OfflineStoreError/Code/corrupt`` when the MANIFEST of the database in `folder`
    /// lost edits (see the type's comment). A folder without a database, or a MANIFEST this code
    /// cannot parse, is left to LevelDB.
    static func check(folder: String) throws(OfflineStoreError) {
        guard let current = FileManager.default.contents(atPath: folder + "/CURRENT"),
            let name = String(data: current, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
            name.utf8.starts(with: "MANIFEST-".utf8),
            let bytes = FileManager.default.contents(atPath: folder + "/" + name),
            let version = readVersion([UInt8](bytes))
        else { return }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let unnamedTables = names.compactMap(tableNumber).filter { !version.liveTables.contains($0) }
        let logName = String(format: "%06llu.log", version.logNumber)
        guard version.logNumber != 0, !names.contains(logName), !unnamedTables.isEmpty else { return }
        throw OfflineStoreError(
            .corrupt,
            "The LevelDB store at \(folder) has a damaged \(name): it names the log \(logName), which is gone, "
                + "and not the \(unnamedTables.count) table file(s) that hold the data, so opening it would "
                + "discard them. Restore the folder from a backup, or rebuild the MANIFEST from the tables with "
                + "LevelDBOfflineStore.repair(directory:) (writes after the last compaction may be lost).",
            engine: .leveldb)
    }

    /// The number of a table file's name (`000005.ldb`, or `.sst` from older LevelDB), or `nil`.
    private static func tableNumber(_ name: String) -> UInt64? {
        guard name.hasSuffix(".ldb") || name.hasSuffix(".sst") else { return nil }
        return UInt64(name.dropLast(4))
    }

    /// The version the whole records of `bytes` describe, or `nil` when they do not parse.
    static func readVersion(_ bytes: [UInt8]) -> Version? {
        var version = Version()
        var record: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            let leftInBlock = blockSize - offset % blockSize
            guard leftInBlock >= headerSize else {
                offset += leftInBlock  // the block's zero trailer
                continue
            }
            guard offset + headerSize <= bytes.count else { break }  // a torn header at the end
            let length = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8
            let type = bytes[offset + 6]
            let start = offset + headerSize
            guard start + length <= bytes.count, headerSize + length <= leftInBlock else { break }
            let payload = bytes[start..<start + length]
            offset = start + length
            switch type {
            case fullType:
                guard apply(payload, to: &version) else { return nil }
            case firstType:
                record = Array(payload)
            case middleType:
                record += payload
            case lastType:
                record += payload
                guard apply(record[...], to: &version) else { return nil }
                record = []
            default:
                return nil
            }
        }
        return version
    }

    private static let blockSize = 32_768
    private static let headerSize = 7
    private static let fullType: UInt8 = 1
    private static let firstType: UInt8 = 2
    private static let middleType: UInt8 = 3
    private static let lastType: UInt8 = 4

    /// Applies one encoded `VersionEdit`; returns `false` for a tag this code does not know.
    private static func apply(_ edit: ArraySlice<UInt8>, to version: inout Version) -> Bool {
        var cursor = edit
        while !cursor.isEmpty {
            guard let tag = varint(&cursor) else { return false }
            switch tag {
            case 1:  // comparator name
                guard skipLengthPrefixed(&cursor) else { return false }
            case 2:  // log number
                guard let number = varint(&cursor) else { return false }
                version.logNumber = number
            case 3, 4, 9:  // next file number, last sequence, previous log number
                guard varint(&cursor) != nil else { return false }
            case 5:  // compaction pointer: level, internal key
                guard varint(&cursor) != nil, skipLengthPrefixed(&cursor) else { return false }
            case 6:  // deleted file: level, number
                guard varint(&cursor) != nil, let number = varint(&cursor) else { return false }
                version.liveTables.remove(number)
            case 7:  // new file: level, number, size, smallest, largest
                guard varint(&cursor) != nil, let number = varint(&cursor), varint(&cursor) != nil,
                    skipLengthPrefixed(&cursor), skipLengthPrefixed(&cursor)
                else { return false }
                version.liveTables.insert(number)
            default:
                return false
            }
        }
        return true
    }

    private static func varint(_ cursor: inout ArraySlice<UInt8>) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while let byte = cursor.popFirst(), shift < 64 {
            value |= UInt64(byte & 0x7f) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
        return nil
    }

    private static func skipLengthPrefixed(_ cursor: inout ArraySlice<UInt8>) -> Bool {
        guard let length = varint(&cursor), length <= UInt64(cursor.count) else { return false }
        cursor = cursor.dropFirst(Int(length))
        return true
    }
}
