@_spi(Benchmarks) import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads the records of a trace file (the format is ``TraceCodec``'s) one at a time, from a file
/// read in chunks: a trace of any length is never held in memory, only a chunk (1 MiB by default,
/// more while one record is longer than that).
///
/// ```swift
/// let reader = try TraceReader(path: "/tmp/a.sovtrace")
/// while let record = try reader.nextRecord() { replay(record) }
/// if reader.ignoredTrailingBytes > 0 { print("the last record was cut short") }
/// ```
///
/// As a `Sequence` (`for record in reader`), a failure ends the iteration and is kept in
/// ``failure``: check it after the loop.
///
/// - Important: Not thread safe: one owner at a time. A record's ``TraceRecord/nanoseconds`` is
///   the sum of the deltas so far: the time since the trace began.
package final class TraceReader: Sequence, IteratorProtocol {
    /// The file read, for messages.
    package let path: String
    /// Whether the header says keys are hashed.
    package private(set) var keysHashed = false
    /// The bytes of a truncated last record that were ignored; 0 until the end is reached.
    package private(set) var ignoredTrailingBytes = 0
    /// The error that ended a `for … in` iteration, if one did.
    package private(set) var failure: TraceFileError?
    /// The records returned so far.
    package private(set) var recordCount = 0

    private var descriptor: Int32
    private let closesDescriptor: Bool
    private var buffer: [UInt8]
    /// The next unread byte of `buffer`, and the end of the bytes read into it.
    private var position = 0
    private var end = 0
    /// The file offset of `buffer[0]`.
    private var bufferOffset = 0
    private var reachedEnd = false
    private var nanoseconds: UInt64 = 0

    /// Opens the trace at `path` and reads its header.
    ///
    /// - Throws: ``TraceFileError/io(operation:path:errno:)`` when the file cannot be read,
    ///   ``TraceFileError/badHeader(offset:)`` or ``TraceFileError/unsupportedVersion(_:offset:)``.
    package convenience init(path: String, chunkBytes: Int = 1 << 20) throws(TraceFileError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(operation: .open, path: path, errno: errno) }
        try self.init(fileDescriptor: fd, name: path, closesDescriptor: true, chunkBytes: chunkBytes)
    }

    /// Reads a trace from `fileDescriptor` (a file or a pipe), from where it stands.
    package init(
        fileDescriptor: Int32, name: String, closesDescriptor: Bool, chunkBytes: Int = 1 << 20
    ) throws(TraceFileError) {
        descriptor = fileDescriptor
        path = name
        self.closesDescriptor = closesDescriptor
        buffer = [UInt8](repeating: 0, count: Swift.max(chunkBytes, 64))
        try readHeader()
    }

    deinit {
        if closesDescriptor { _ = close(descriptor) }
    }

    /// The next record, or `nil` at the end of the file (a truncated last record is skipped and
    /// counted in ``ignoredTrailingBytes``).
    ///
    /// - Throws: ``TraceFileError/unknownOpcode(_:offset:)``,
    ///   ``TraceFileError/malformedRecord(offset:field:)`` or a read's
    ///   ``TraceFileError/io(operation:path:errno:)``.
    package func nextRecord() throws(TraceFileError) -> TraceRecord? {
        while true {
            let start = bufferOffset + position
            let parsed = try buffer.withUnsafeBufferPointer { bytes throws(TraceFileError) in
                var cursor = Cursor(bytes: UnsafeBufferPointer(rebasing: bytes[position..<end]), offset: start)
                return try cursor.record()
            }
            if let (operation, delta, consumed) = parsed {
                position += consumed
                nanoseconds &+= delta
                recordCount += 1
                return TraceRecord(nanoseconds: nanoseconds, operation: operation)
            }
            if reachedEnd {
                ignoredTrailingBytes = end - position
                position = end
                return nil
            }
            try fill()
        }
    }

    /// The next record; a failure ends the sequence and is kept in ``failure``.
    package func next() -> TraceRecord? {
        guard failure == nil else { return nil }
        do {
            return try nextRecord()
        } catch {
            failure = error
            return nil
        }
    }

    // MARK: - Reading

    private func readHeader() throws(TraceFileError) {
        while end < TraceCodec.headerBytes && !reachedEnd { try fill() }
        let available = Swift.min(end, TraceCodec.headerBytes)
        for index in 0..<Swift.min(available, 8) where buffer[index] != TraceCodec.magic[index] {
            throw .badHeader(offset: index)
        }
        guard available == TraceCodec.headerBytes else { throw .badHeader(offset: available) }
        let version = littleEndian(at: 8)
        guard version == TraceCodec.version else { throw .unsupportedVersion(version, offset: 8) }
        keysHashed = littleEndian(at: 12) & TraceCodec.keysHashedFlag != 0
        position = TraceCodec.headerBytes
    }

    private func littleEndian(at index: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(buffer[index + $1]) << UInt32(8 * $1) }
    }

    /// Reads more bytes after `end`: moves the unread bytes to the front first, and doubles the
    /// buffer when one record fills it.
    private func fill() throws(TraceFileError) {
        if position > 0 {
            let unread = end - position
            buffer.withUnsafeMutableBufferPointer { bytes in
                guard unread > 0, let base = bytes.baseAddress else { return }
                (base).update(from: base + position, count: unread)
            }
            bufferOffset += position
            position = 0
            end = unread
        }
        if end == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
        while true {
            let count = buffer.withUnsafeMutableBytes { bytes in
                read(descriptor, bytes.baseAddress! + end, bytes.count - end)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw .io(operation: .read, path: path, errno: errno)
            }
            if count == 0 { reachedEnd = true }
            end += count
            return
        }
    }
}

/// Parses one record from bytes that may end in the middle of it.
private struct Cursor {
    let bytes: UnsafeBufferPointer<UInt8>
    /// The file offset of `bytes[0]`: the record's first byte.
    let offset: Int
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }

    /// The record's operation, delta and size in bytes; `nil` when the bytes end before it does.
    mutating func record() throws(TraceFileError) -> (TraceOperation, UInt64, Int)? {
        guard let code = byte() else { return nil }
        guard let opcode = TraceCodec.Opcode(rawValue: code) else { throw .unknownOpcode(code, offset: offset) }
        guard let delta = try varint() else { return nil }
        guard let operation = try operation(opcode) else { return nil }
        return (operation, delta, index)
    }

    private mutating func operation(_ opcode: TraceCodec.Opcode) throws(TraceFileError) -> TraceOperation? {
        switch opcode {
        case .read: return try string().map { .read(key: $0) }
        case .delete: return try string().map { .delete(key: $0) }
        case .keys: return try string().map { .keys(prefix: $0) }
        case .update, .insert, .readModifyWrite, .fetch:
            guard let key = try string(), let bytes = try count() else { return nil }
            switch opcode {
            case .update: return .update(key: key, valueBytes: bytes)
            case .insert: return .insert(key: key, valueBytes: bytes)
            case .readModifyWrite: return .readModifyWrite(key: key, valueBytes: bytes)
            default: return .fetch(key: key, valueBytes: bytes)
            }
        case .scan:
            guard let prefix = try string(), let hasAfter = byte() else { return nil }
            var after: String?
            switch hasAfter {
            case 0: break
            case 1:
                guard let read = try string() else { return nil }
                after = read
            default: throw .malformedRecord(offset: offset, field: .hasAfter)
            }
            guard let limit = try count() else { return nil }
            return .scan(prefix: prefix, after: after, limit: limit)
        case .batch:
            guard let entries = try count() else { return nil }
            var writes: [TraceOperation] = []
            writes.reserveCapacity(min(entries, 4096))
            for _ in 0..<entries {
                guard let code = byte() else { return nil }
                guard let entry = TraceCodec.Opcode(rawValue: code), [.update, .insert, .delete].contains(entry) else {
                    throw .malformedRecord(offset: offset, field: .batchEntry)
                }
                guard let key = try string() else { return nil }
                if entry == .delete {
                    writes.append(.delete(key: key))
                    continue
                }
                guard let bytes = try count() else { return nil }
                writes.append(
                    entry == .update ? .update(key: key, valueBytes: bytes) : .insert(key: key, valueBytes: bytes))
            }
            return .batch(writes)
        case .compact: return .compact
        case .phase:
            guard let code = byte() else { return nil }
            guard let phase = TracePhase(rawValue: code) else { throw .malformedRecord(offset: offset, field: .phase) }
            return .phase(phase)
        }
    }

    private mutating func byte() -> UInt8? {
        guard index < bytes.count else { return nil }
        defer { index += 1 }
        return bytes[index]
    }

    /// A uvarint; `nil` when the bytes end inside it.
    private mutating func varint() throws(TraceFileError) -> UInt64? {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 70, by: 7) {
            guard let next = byte() else { return nil }
            guard shift < 63 || next <= 1 else { throw .malformedRecord(offset: offset, field: .varint) }
            value |= UInt64(next & 0x7F) << UInt64(shift)
            if next & 0x80 == 0 { return value }
        }
        throw .malformedRecord(offset: offset, field: .varint)
    }

    /// A uvarint of a size, limit, length or count; past ``TraceCodec/maxCount`` the record is
    /// damaged (read as a length, it would have the reader wait for the rest of the file).
    private mutating func count() throws(TraceFileError) -> Int? {
        guard let value = try varint() else { return nil }
        guard value <= TraceCodec.maxCount else { throw .malformedRecord(offset: offset, field: .tooLarge) }
        return Int(value)
    }

    private mutating func string() throws(TraceFileError) -> String? {
        // A length past what is left: the record is cut short here, or goes on in the next chunk.
        guard let length = try count(), length <= bytes.count - index else { return nil }
        let count = length
        defer { index += count }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<index + count]), as: UTF8.self)
    }
}
