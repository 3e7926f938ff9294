import CLevelDB
import Foundation
import Sovaria
import SovariaPlumbing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A walk, in byte order, over the keys that start with a prefix, with one LevelDB iterator.
///
/// The iterator reads a consistent snapshot: a batch written during the walk is seen whole or
/// not at all. The walk can run in chunks (``advance(maxEntries:maxBytes:)``), so a store runs a
/// short one on the caller's executor and hands a long one over to a work queue halfway.
// @unchecked Sendable: one thread at a time; the queue gets the scan only after the inline chunk returned.
final class LevelDBScan: @unchecked Sendable {
    /// Keeps the database open for as long as the iterator lives.
    private let handle: LevelDBHandle
    /// `nil` once the walk ended and the iterator was destroyed.
    private var iterator: OpaquePointer?
    private let prefix: [UInt8]
    private let reading: Reading
    private var remaining: Int
    /// The keys read so far, in byte order.
    private(set) var keys: [String] = []
    /// The values of ``keys``, when the scan reads them as strings.
    private(set) var values: [String] = []
    /// The values of ``keys``, when the scan reads them as bytes.
    private(set) var dataValues: [Data] = []

    /// What a scan reads besides the keys.
    enum Reading {
        /// Keys only.
        case keys
        /// Values as strings: one that is not UTF-8 throws ``OfflineStoreError/Code/notUTF8``.
        case strings
        /// Values as bytes.
        case bytes
    }

    /// Positions a scan at the first key that starts with `prefix` and sorts after `after`.
    init(handle: LevelDBHandle, prefix: String, after: String?, limit: Int, reading: Reading) {
        self.handle = handle
        self.prefix = Array(prefix.utf8)
        self.reading = reading
        remaining = max(limit, 0)
        let iterator = handle.makeIterator()
        self.iterator = iterator
        // Seek to max(prefix, after): every key before it is either outside the prefix or not after `after`.
        if let after, !after.utf8.lexicographicallyPrecedes(prefix.utf8) {
            after.withUTF8Bytes { after in
                leveldb_iter_seek(iterator, after.cChars, after.count)
                // `after` itself is not part of the page.
                if leveldb_iter_valid(iterator) != 0, Self.currentKey(of: iterator).elementsEqual(after) {
                    leveldb_iter_next(iterator)
                }
            }
        } else if self.prefix.isEmpty {
            leveldb_iter_seek_to_first(iterator)
        } else {
            prefix.withUTF8Bytes { leveldb_iter_seek(iterator, $0.cChars, $0.count) }
        }
    }

    deinit {
        if let iterator { leveldb_iter_destroy(iterator) }
    }

    /// Reads up to `maxEntries` more entries, stopping early once `maxBytes` of keys and values were
    /// copied; returns `true` when the walk is complete.
    func advance(maxEntries: Int = .max, maxBytes: Int = .max) throws(OfflineStoreError) -> Bool {
        guard let iterator else { return true }
        // Appends go to locals, not to the properties: no exclusivity check per entry.
        var keys = self.keys
        var values = self.values
        var dataValues = self.dataValues
        self.keys = []
        self.values = []
        self.dataValues = []
        defer {
            self.keys = keys
            self.values = values
            self.dataValues = dataValues
        }
        var entries = 0
        var bytes = 0
        while remaining > 0, leveldb_iter_valid(iterator) != 0 {
            guard entries < maxEntries, bytes < maxBytes else { return false }
            let key = Self.currentKey(of: iterator)
            guard hasPrefix(key) else { break }
            // Keys and values are copied out before `next` invalidates LevelDB's buffers.
            guard let keyString = String(validatingBytes: key.cChars, count: key.count) else {
                throw OfflineStoreError.leveldbNotUTF8(path: handle.path, key: LevelDBHandle.name(key))
            }
            if reading != .keys {
                var valueLength = 0
                let value = UnsafeRawBufferPointer(
                    start: leveldb_iter_value(iterator, &valueLength), count: valueLength)
                if reading == .bytes {
                    dataValues.append(Data(value))
                } else {
                    values.append(try StoreValue.string(value, key: keyString, engine: .leveldb))
                }
                bytes += valueLength
            }
            keys.append(keyString)
            bytes += key.count
            entries += 1
            remaining -= 1
            leveldb_iter_next(iterator)
        }
        try finish(iterator)
        return true
    }

    /// Walks the rest of the scan on the calling thread, handing `visit` each key's and value's
    /// bytes in LevelDB's own buffers (valid until the iterator moves), until it returns `false`.
    /// A scan ``Reading/keys`` hands no value.
    func visit(_ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Bool) throws(OfflineStoreError) {
        guard let iterator else { return }
        while remaining > 0, leveldb_iter_valid(iterator) != 0 {
            let key = Self.currentKey(of: iterator)
            guard hasPrefix(key) else { break }
            var value = UnsafeRawBufferPointer(start: nil, count: 0)
            if reading != .keys {
                var valueLength = 0
                value = UnsafeRawBufferPointer(start: leveldb_iter_value(iterator, &valueLength), count: valueLength)
            }
            remaining -= 1
            guard visit(UnsafeRawBufferPointer(key), value) else { break }
            leveldb_iter_next(iterator)
        }
        try finish(iterator)
    }

    /// Whether `key` starts with the scan's prefix, by bytes.
    private func hasPrefix(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        guard key.count >= prefix.count else { return false }
        return prefix.withUnsafeBytes { prefix in
            guard let prefixStart = prefix.baseAddress, let keyStart = key.baseAddress else { return prefix.isEmpty }
            return memcmp(keyStart, prefixStart, prefix.count) == 0
        }
    }

    /// The entries read, key with value.
    var entries: [StoreEntry] {
        zip(keys, values).map { StoreEntry(key: $0, value: $1) }
    }

    /// The entries read, key with value as bytes.
    var dataEntries: [StoreDataEntry] {
        zip(keys, dataValues).map { StoreDataEntry(key: $0, data: $1) }
    }

    /// Checks the iterator's status (a read error ends a walk like the end of the data does) and
    /// destroys the iterator.
    private func finish(_ iterator: OpaquePointer) throws(OfflineStoreError) {
        self.iterator = nil
        defer { leveldb_iter_destroy(iterator) }
        try checkLevelDB("Listing keys", path: handle.path) { leveldb_iter_get_error(iterator, $0) }
    }

    /// The key the valid `iterator` is on; valid until the iterator moves.
    private static func currentKey(of iterator: OpaquePointer) -> UnsafeBufferPointer<UInt8> {
        var length = 0
        let key = leveldb_iter_key(iterator, &length)
        return UnsafeBufferPointer(start: UnsafeRawPointer(key)?.assumingMemoryBound(to: UInt8.self), count: length)
    }
}
