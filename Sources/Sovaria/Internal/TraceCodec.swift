#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The trace file format (`.sovtrace`): what ``TraceWriter`` writes and the Benchmarks package's
/// `TraceReader` reads, and what the C replayer (`Benchmarks/c-baseline/sovaria_c_replay.c`) reads too.
///
/// A header of 16 bytes:
/// - the ASCII magic `SOVTRACE` (8 bytes);
/// - the version, a little-endian `UInt32`: 1;
/// - flags, a little-endian `UInt32`: bit 0 set when keys are hashed (``RecordingOfflineStore``'s
///   option); the other bits are 0 and a reader ignores them.
///
/// Then records until the end of the file, each:
/// - an opcode, one byte;
/// - the nanoseconds since the previous record (the first record: since the trace began), a uvarint;
/// - the operation's fields, by opcode:
///
/// | opcode | operation | fields |
/// |---|---|---|
/// | 1 | read | key |
/// | 2 | update | key, size |
/// | 3 | insert | key, size |
/// | 4 | delete | key |
/// | 5 | scan | prefix, hasAfter (one byte, 0 or 1), after (when hasAfter is 1), limit (uvarint) |
/// | 6 | readModifyWrite | key, size |
/// | 7 | keys | prefix |
/// | 8 | batch | count (uvarint), then count × (opcode 2, 3 or 4 (one byte), key, size for 2 and 3) |
/// | 9 | compact | — |
/// | 10 | phase | one byte: 1 load, 2 run |
/// | 11 | fetch | key, size |
///
/// A string (key, prefix, after) is its UTF-8 byte count as a uvarint, then those bytes; a size
/// is a uvarint. A uvarint is unsigned LEB128: 7 bits a byte, least significant first, the high
/// bit set on every byte but the last (at most 10 bytes for 64 bits). A size, limit, string length
/// or batch count is at most ``maxCount`` (64 MiB): a larger one is a damaged record. A writer
/// records a larger value size or scan limit as ``maxCount`` (a store may take values past
/// 64 MiB, and a scan may ask for `Int.max` entries), so what it writes always reads back.
///
/// A reader ignores a truncated last record (the recording process died while writing it) and
/// says how many bytes it ignored; a bad header, an unknown opcode or a malformed record is a
/// ``TraceFileError`` naming the byte offset.
///
/// SPI, not API, for the reason ``TraceOperation`` is: the format is a tool's.
@_spi(Benchmarks) public enum TraceCodec {
    /// `SOVTRACE`.
    public static let magic: [UInt8] = Array("SOVTRACE".utf8)
    /// The version this code writes and reads.
    public static let version: UInt32 = 1
    /// The header's size in bytes.
    public static let headerBytes = 16
    /// The largest value size, scan limit, string length or batch count a trace may hold
    /// (64 MiB): a larger one is a damaged record, refused where it is read, never allocated.
    public static let maxCount: UInt64 = 64 << 20
    /// Flag bit 0: keys are hashed.
    public static let keysHashedFlag: UInt32 = 1

    /// The opcodes of the format.
    public enum Opcode: UInt8 {
        case read = 1, update, insert, delete, scan, readModifyWrite, keys, batch, compact, phase, fetch
    }

    /// The 16 header bytes.
    public static func header(keysHashed: Bool) -> [UInt8] {
        var bytes = magic
        appendLittleEndian(version, to: &bytes)
        appendLittleEndian(keysHashed ? keysHashedFlag : 0, to: &bytes)
        return bytes
    }

    static func appendLittleEndian(_ value: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// Appends `value` as a uvarint.
    @inline(__always)
    public static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// `count` as a trace holds it: 0 when negative, ``maxCount`` when larger.
    @inline(__always)
    public static func clamped(_ count: Int) -> UInt64 {
        UInt64(min(max(count, 0), Int(maxCount)))
    }

    @inline(__always)
    static func appendString(_ string: String, to bytes: inout [UInt8]) {
        let utf8 = string.utf8
        appendVarint(UInt64(utf8.count), to: &bytes)
        if utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: utf8)
        }
    }

    /// Appends one record: `operation`, `deltaNanoseconds` after the previous one.
    ///
    /// - Precondition: a batch holds only updates, inserts and deletes (a programming error
    ///   otherwise: no reader could read it back).
    public static func append(
        _ operation: TraceOperation, deltaNanoseconds: UInt64, to bytes: inout [UInt8]
    ) {
        func sized(_ opcode: Opcode, _ key: String, _ size: Int) {
            bytes.append(opcode.rawValue)
            appendVarint(deltaNanoseconds, to: &bytes)
            appendString(key, to: &bytes)
            appendVarint(clamped(size), to: &bytes)
        }
        func keyed(_ opcode: Opcode, _ key: String) {
            bytes.append(opcode.rawValue)
            appendVarint(deltaNanoseconds, to: &bytes)
            appendString(key, to: &bytes)
        }
        switch operation {
        case .read(let key): keyed(.read, key)
        case .update(let key, let size): sized(.update, key, size)
        case .insert(let key, let size): sized(.insert, key, size)
        case .delete(let key): keyed(.delete, key)
        case .scan(let prefix, let after, let limit):
            keyed(.scan, prefix)
            if let after {
                bytes.append(1)
                appendString(after, to: &bytes)
            } else {
                bytes.append(0)
            }
            appendVarint(clamped(limit), to: &bytes)
        case .readModifyWrite(let key, let size): sized(.readModifyWrite, key, size)
        case .keys(let prefix): keyed(.keys, prefix)
        case .batch(let writes):
            bytes.append(Opcode.batch.rawValue)
            appendVarint(deltaNanoseconds, to: &bytes)
            appendVarint(UInt64(writes.count), to: &bytes)
            for write in writes {
                switch write {
                case .update(let key, let size), .insert(let key, let size):
                    bytes.append(write.isInsert ? Opcode.insert.rawValue : Opcode.update.rawValue)
                    appendString(key, to: &bytes)
                    appendVarint(clamped(size), to: &bytes)
                case .delete(let key):
                    bytes.append(Opcode.delete.rawValue)
                    appendString(key, to: &bytes)
                default:
                    preconditionFailure("A trace batch holds updates, inserts and deletes only, not \(write)")
                }
            }
        case .compact:
            bytes.append(Opcode.compact.rawValue)
            appendVarint(deltaNanoseconds, to: &bytes)
        case .phase(let phase):
            bytes.append(Opcode.phase.rawValue)
            appendVarint(deltaNanoseconds, to: &bytes)
            bytes.append(phase.rawValue)
        case .fetch(let key, let size): sized(.fetch, key, size)
        }
    }
}

extension TraceOperation {
    fileprivate var isInsert: Bool {
        if case .insert = self { return true }
        return false
    }
}

/// Why a trace file could not be read or written.
@_spi(Benchmarks) public enum TraceFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file does not start with the 16-byte header (`SOVTRACE`, version, flags); `offset` is
    /// the first byte that is wrong (the file's size when it is shorter than the header).
    case badHeader(offset: Int)
    /// The header names a version this code does not read.
    case unsupportedVersion(UInt32, offset: Int)
    /// A record starts with an opcode the format does not have.
    case unknownOpcode(UInt8, offset: Int)
    /// A record's fields break the format (a uvarint longer than 10 bytes, a batch entry that is
    /// not an update, insert or delete, a phase or hasAfter byte out of range); `offset` is the
    /// record's first byte.
    case malformedRecord(offset: Int, field: Field)
    /// A system call failed on `path`.
    case io(operation: Operation, path: String, errno: Int32)

    /// The field of a record that broke the format.
    public enum Field: String, Sendable {
        case varint, batchEntry, phase, hasAfter
        /// A value size, scan limit, string length or batch count past ``TraceCodec/maxCount``.
        case tooLarge
    }

    /// The system call that failed.
    public enum Operation: String, Sendable {
        case open, read, write, close, rename, remove, spawn
    }

    /// What went wrong and where, for a message.
    public var description: String {
        switch self {
        case .badHeader(let offset): "not a Sovaria trace (bad header at byte \(offset))"
        case .unsupportedVersion(let version, let offset):
            "trace version \(version) at byte \(offset) is not supported (this reader reads 1)"
        case .unknownOpcode(let opcode, let offset): "unknown opcode \(opcode) at byte \(offset)"
        case .malformedRecord(let offset, let field): "malformed record at byte \(offset) (\(field.rawValue))"
        case .io(let operation, let path, let code):
            "\(operation.rawValue) \(path) failed: \(String(cString: strerror(code)))"
        }
    }
}

/// Appends trace records to a file, through a large buffer: the file is written in blocks, never
/// a system call per record, and never synced (a trace is a measurement, not data to keep).
///
/// ```swift
/// let writer = try TraceWriter(path: "/tmp/a.sovtrace")
/// try writer.append(TraceRecord(nanoseconds: 0, operation: .read(key: "sov:cache:feed")))
/// try writer.close()
/// ```
///
/// - Important: Not thread safe: one owner at a time (``RecordingOfflineStore`` keeps its writer
///   under its lock). After a failed ``flush()`` the buffered records are dropped.
@_spi(Benchmarks) public final class TraceWriter {
    /// The file written, for messages.
    public let path: String
    private var descriptor: Int32
    private var buffer: [UInt8]
    private let bufferBytes: Int
    /// The absolute time of the last record appended, to write the next one's delta.
    private var lastNanoseconds: UInt64
    /// Bytes handed to the file so far (the header included).
    private var flushedBytes: Int = 0

    /// Creates (or truncates) the file at `path` and writes the header into the buffer.
    ///
    /// - Parameters:
    ///   - startNanoseconds: the time the trace began on the records' clock: the first record's
    ///     delta is counted from it. Default: 0.
    ///   - bufferBytes: how much is kept before a write. Default: 1 MiB.
    public init(
        path: String, keysHashed: Bool = false, startNanoseconds: UInt64 = 0, bufferBytes: Int = 1 << 20
    ) throws(TraceFileError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io(operation: .open, path: path, errno: errno) }
        self.path = path
        descriptor = fd
        self.bufferBytes = max(bufferBytes, 4096)
        buffer = []
        buffer.reserveCapacity(self.bufferBytes + 4096)
        buffer.append(contentsOf: TraceCodec.header(keysHashed: keysHashed))
        lastNanoseconds = startNanoseconds
    }

    deinit {
        if descriptor >= 0 {
            _ = try? flush()
            _ = closeDescriptor(descriptor)
        }
    }

    /// The file's size once everything appended is written: the header, the records written and
    /// those in the buffer.
    public var byteCount: Int { flushedBytes + buffer.count }

    /// Appends `record`; writes the buffer when it is full.
    ///
    /// `record.nanoseconds` is the time on the trace's clock; a time before the previous
    /// record's is written as 0 nanoseconds after it.
    public func append(_ record: TraceRecord) throws(TraceFileError) {
        let delta = record.nanoseconds >= lastNanoseconds ? record.nanoseconds - lastNanoseconds : 0
        lastNanoseconds = max(lastNanoseconds, record.nanoseconds)
        TraceCodec.append(record.operation, deltaNanoseconds: delta, to: &buffer)
        if buffer.count >= bufferBytes { try flush() }
    }

    /// Hands the buffered bytes to the file (a `write`, no `fsync`).
    public func flush() throws(TraceFileError) {
        guard !buffer.isEmpty, descriptor >= 0 else { return }
        defer { buffer.removeAll(keepingCapacity: true) }
        let code: Int32? = buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
        if let code { throw .io(operation: .write, path: path, errno: code) }
        flushedBytes += buffer.count
    }

    /// Writes what is buffered and closes the file; the writer takes no more records.
    public func close() throws(TraceFileError) {
        guard descriptor >= 0 else { return }
        defer {
            _ = closeDescriptor(descriptor)
            descriptor = -1
        }
        try flush()
    }
}

/// `close(2)`, named apart from ``TraceWriter/close()``.
@inline(__always)
private func closeDescriptor(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.close(descriptor)
    #elseif canImport(Musl)
        Musl.close(descriptor)
    #else
        Darwin.close(descriptor)
    #endif
}
