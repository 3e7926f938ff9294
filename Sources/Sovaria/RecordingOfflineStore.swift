import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Records every call an app makes on a store — the operation, the key (or a hash of it), the
/// value's size, a batch's shape and when it was made — to a trace file that `sovaria-bench
/// replay` runs on every engine, so an engine is chosen on the app's own workload.
///
/// Values are never recorded, only their sizes in UTF-8 bytes. Each call is recorded when it is
/// made, before the wrapped store runs it, so calls that fail are in the trace too. What each call
/// becomes: ``get(_:)`` and ``withValue(_:_:)`` a read, ``set(_:_:)`` an update (the recorder
/// does not know whether the key existed: a replay runs both as a set), ``delete(_:)`` a delete,
/// ``keys(_:)`` and ``withKeys(_:after:limit:_:)`` a keys call (replayed as a listing of the
/// whole prefix, whatever page it read), ``entries(_:after:limit:)`` (and
/// its byte and borrowed forms) a scan, ``write(_:)`` a batch of updates and deletes,
/// ``compact()`` a compaction.
///
/// With ``Configuration/hashesKeys`` the trace can leave the device without the app's keys: each
/// key keeps its namespace, up to and including its second `:` (`sov:cache:`), and the rest becomes
/// the 16 hexadecimal digits of its FNV-1a 64 hash, the same for the same key on every device and
/// run. Prefixes are hashed the same way, so a prefix that is a namespace (`sov:cache:`) stays as
/// it is and still matches the hashed keys on replay; a longer prefix matches nothing.
///
/// - Important: Cost: a clock read, the record's encoding into an in-memory buffer under one lock
///   (hashing the key when asked): under a microsecond; the buffer is written to the file in
///   blocks of 256 KiB, and at the first call a second or more after the last write (an idle
///   app's last records stay in the buffer until its next call, ``flush()`` or
///   ``stopRecording()``), never synced. `sovaria-bench` measures it against the same store
///   unwrapped.
/// - Important: Recording never fails a call. When the trace cannot be written (a full disk, a
///   folder that cannot be written), recording stops, ``recordingState`` says why, and the calls
///   go on to the wrapped store as before. Records still in the buffer when the process dies are
///   lost; a reader skips the record cut short at the end of a file.
/// - Important: Size is bounded: when a file reaches ``Configuration/maxFileBytes`` it becomes
///   `name.1.sovtrace` (the older ones `name.2.sovtrace` …) and a new `name.sovtrace` starts; at
///   most ``Configuration/keptFiles`` files are kept, the oldest removed. Each file starts with its
///   own header and is readable alone; its first record's time counts from the previous file's
///   last record.
/// - Important: Capabilities, durability and persistence are the wrapped store's. Safe from any
///   number of tasks; calls are recorded in the order they take the lock.
///
/// ```swift
/// var configuration = RecordingOfflineStore.Configuration()
/// configuration.hashesKeys = true
/// let store = RecordingOfflineStore(
///     wrapping: try SQLiteOfflineStore(fileURL: folder.appendingPathComponent("offline.sqlite")),
///     traceFile: folder.appendingPathComponent("app.sovtrace"), configuration: configuration)
/// try await store.set("sov:cache:feed", json)   // recorded as an update of "sov:cache:<16 hex digits>"
/// store.stopRecording()                          // or let the store go: it flushes on deinit
/// ```
public final class RecordingOfflineStore: OfflineStore {
    /// How a recording store writes its trace; every field has a default.
    public struct Configuration: Sendable, Hashable {
        /// Whether keys are replaced by their namespace and a hash (see ``RecordingOfflineStore``).
        /// Default: `false`.
        public var hashesKeys = false
        /// A trace file is rotated when it reaches this size. Default: 64 MiB.
        public var maxFileBytes = 64 << 20
        /// The number of trace files kept, the current one included (at least 1). Default: 4.
        public var keptFiles = 4
        /// Records are written to the file when this many bytes are buffered. Not public because
        /// no one has needed to tune it: 256 KiB.
        var bufferBytes = 256 << 10
        /// Buffered records are written at the first call this long after the last write. SPI, so
        /// a test can keep them buffered however slow its machine is. Default: one second.
        @_spi(Benchmarks) public var flushIntervalNanoseconds: UInt64 = 1_000_000_000

        /// The defaults.
        public init() {}
    }

    /// Whether the store is recording.
    public enum State: Sendable, Equatable {
        /// Every call is recorded.
        case recording
        /// Recording has stopped for good; calls still reach the wrapped store.
        case stopped(StopReason)
    }

    /// Why recording stopped.
    public enum StopReason: Sendable, Equatable {
        /// ``stopRecording()`` was called.
        case stopped
        /// The trace file at `path` could not be created (`errno` says why: `EACCES`, `ENOENT`, …).
        case creatingFailed(path: String, errno: Int32)
        /// Writing to the trace file at `path` failed (`ENOSPC` for a full disk).
        case writingFailed(path: String, errno: Int32)
        /// Renaming or removing an older trace file at `path` failed while rotating.
        case rotatingFailed(path: String, errno: Int32)
    }

    /// The store that runs every call.
    public let wrapped: any OfflineStore
    /// The current trace file; older ones are beside it, numbered.
    public let traceFile: URL
    /// How the trace is written.
    public let configuration: Configuration

    private let recorder: Mutex<Recorder>
    /// The monotonic clock's reading when recording began: record times count from it.
    private let startNanoseconds: UInt64

    /// Records the calls made on `store` to `traceFile`, which must end in `.sovtrace`.
    ///
    /// An existing file there is replaced. When the file cannot be created, the store records
    /// nothing and ``recordingState`` says why; it never throws.
    public init(wrapping store: any OfflineStore, traceFile: URL, configuration: Configuration = Configuration()) {
        precondition(
            traceFile.lastPathComponent.hasSuffix(".sovtrace") && traceFile.lastPathComponent != ".sovtrace",
            "A RecordingOfflineStore's trace file name ends in .sovtrace (rotated files are name.1.sovtrace, …)")
        wrapped = store
        self.traceFile = traceFile
        self.configuration = configuration
        startNanoseconds = Self.monotonicNanoseconds()
        recorder = Mutex(Recorder(path: traceFile.path, configuration: configuration))
    }

    deinit {
        recorder.withLock { $0.stop(because: .stopped) }
    }

    /// Whether the store is recording, or why it stopped.
    public var recordingState: State { recorder.withLock { $0.state } }

    /// The wrapped store's capabilities.
    public var capabilities: StoreCapabilities { wrapped.capabilities }

    /// Writes the buffered records to the trace file (without syncing it).
    public func flush() {
        recorder.withLock { $0.flush() }
    }

    /// Writes the buffered records and closes the trace file; calls are no longer recorded.
    public func stopRecording() {
        recorder.withLock { $0.stop(because: .stopped) }
    }

    // MARK: - OfflineStore

    /// Records a read, then returns the wrapped store's value for `key`.
    public func get(_ key: String) async throws -> String? {
        record(.read(key: recorded(key)))
        return try await wrapped.get(key)
    }

    /// Records a read, then hands `body` the wrapped store's bytes for `key`.
    public func withValue<Result>(
        _ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) async throws -> Result? {
        record(.read(key: recorded(key)))
        return try await wrapped.withValue(key, body)
    }

    /// Records a read, then returns the wrapped store's bytes for `key`.
    public func data(_ key: String) async throws -> Data? {
        record(.read(key: recorded(key)))
        return try await wrapped.data(key)
    }

    /// Records an update of `data`'s size, then stores `data` in the wrapped store.
    public func set(_ key: String, data: Data) async throws {
        record(.update(key: recorded(key), valueBytes: data.count))
        try await wrapped.set(key, data: data)
    }

    /// Records an update of `value`'s UTF-8 size, then stores `value` in the wrapped store.
    public func set(_ key: String, _ value: String) async throws {
        record(.update(key: recorded(key), valueBytes: value.utf8.count))
        try await wrapped.set(key, value)
    }

    /// Records a delete, then removes `key` from the wrapped store.
    public func delete(_ key: String) async throws {
        record(.delete(key: recorded(key)))
        try await wrapped.delete(key)
    }

    /// Records a keys call, then lists the wrapped store's keys under `prefix`.
    public func keys(_ prefix: String) async throws -> [String] {
        record(.keys(prefix: recorded(prefix)))
        return try await wrapped.keys(prefix)
    }

    /// Records the batch's shape (each write's key and value size), then hands it to the wrapped
    /// store as one batch.
    public func write(_ batch: [StoreWrite]) async throws {
        record(
            .batch(
                batch.map { write in
                    switch write {
                    case .set(let key, _), .setData(let key, _):
                        .update(key: recorded(key), valueBytes: write.valueByteCount)
                    case .delete(let key): .delete(key: recorded(key))
                    }
                }))
        try await wrapped.write(batch)
    }

    /// Records a scan, then reads the page from the wrapped store.
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        record(.scan(prefix: recorded(prefix), after: after.map(recorded), limit: limit))
        return try await wrapped.entries(prefix, after: after, limit: limit)
    }

    /// Records a scan, then reads the page from the wrapped store as bytes.
    public func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        record(.scan(prefix: recorded(prefix), after: after.map(recorded), limit: limit))
        return try await wrapped.dataEntries(prefix, after: after, limit: limit)
    }

    /// Records a scan, then hands `body` the wrapped store's borrowed page as it is.
    public func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        record(.scan(prefix: recorded(prefix), after: after.map(recorded), limit: limit))
        return try await wrapped.withEntries(prefix, after: after, limit: limit, body)
    }

    /// Records a keys call, then hands `body` the wrapped store's borrowed keys as they are.
    public func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        record(.keys(prefix: recorded(prefix)))
        return try await wrapped.withKeys(prefix, after: after, limit: limit, body)
    }

    /// Records a compaction, then compacts the wrapped store.
    public func compact() async throws {
        record(.compact)
        try await wrapped.compact()
    }

    // MARK: - Recording

    private func recorded(_ key: String) -> String {
        configuration.hashesKeys ? Self.hashedKey(key) : key
    }

    private func record(_ operation: TraceOperation) {
        let now = Self.monotonicNanoseconds() &- startNanoseconds
        recorder.withLock { $0.append(TraceRecord(nanoseconds: now, operation: operation)) }
    }

    /// `key` with everything after its namespace replaced by 16 lowercase hex digits of the rest's
    /// FNV-1a 64 hash. The namespace ends at the second `:` (with fewer, at the last `:`; with
    /// none it is empty); a key that is only its namespace is kept as it is.
    @_spi(Benchmarks) public static func hashedKey(_ key: String) -> String {
        var colons = 0
        var namespaceEnd = key.utf8.startIndex
        for index in key.utf8.indices where key.utf8[index] == UInt8(ascii: ":") {
            colons += 1
            namespaceEnd = key.utf8.index(after: index)
            if colons == 2 { break }
        }
        let rest = key.utf8[namespaceEnd...]
        guard !rest.isEmpty else { return key }
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in rest {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01B3
        }
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8](repeating: 0, count: 16)
        for position in 0..<16 { hex[position] = digits[Int(hash >> UInt64(60 - 4 * position) & 0xF)] }
        return String(Substring(key.utf8[..<namespaceEnd])) + String(decoding: hex, as: UTF8.self)
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}

extension RecordingOfflineStore {
    /// The trace file being written and the rotation; only touched under the store's lock.
    ///
    /// Possible states: 1) recording, `writer` set; 2) stopped, `writer` nil, `state` says why
    /// (never back to 1).
    private struct Recorder {
        var state: State = .recording
        private var writer: TraceWriter?
        private let path: String
        private let configuration: Configuration
        private var lastFlushNanoseconds: UInt64 = 0
        private var lastRecordNanoseconds: UInt64 = 0

        init(path: String, configuration: Configuration) {
            self.path = path
            self.configuration = configuration
            openFile(startNanoseconds: 0)
        }

        /// The path of the file `age` rotations old: `name.sovtrace`, then `name.1.sovtrace`, ….
        private func path(age: Int) -> String {
            age == 0 ? path : String(path.dropLast(".sovtrace".count)) + ".\(age).sovtrace"
        }

        /// Creates the current file and writes its header at once, so a folder that cannot be
        /// written shows at the start, and an empty trace is a valid file.
        private mutating func openFile(startNanoseconds: UInt64) {
            do {
                let writer = try TraceWriter(
                    path: path, keysHashed: configuration.hashesKeys, startNanoseconds: startNanoseconds,
                    bufferBytes: configuration.bufferBytes)
                try writer.flush()
                self.writer = writer
            } catch {
                stopAfter(error, creating: true)
            }
        }

        mutating func append(_ record: TraceRecord) {
            guard let writer else { return }
            do {
                try writer.append(record)
                lastRecordNanoseconds = record.nanoseconds
                if writer.byteCount >= configuration.maxFileBytes {
                    try writer.close()
                    self.writer = nil
                    rotate()
                    lastFlushNanoseconds = record.nanoseconds
                } else if record.nanoseconds &- lastFlushNanoseconds >= configuration.flushIntervalNanoseconds {
                    try writer.flush()
                    lastFlushNanoseconds = record.nanoseconds
                }
            } catch {
                stopAfter(error, creating: false)
            }
        }

        mutating func flush() {
            do {
                try writer?.flush()
            } catch {
                stopAfter(error, creating: false)
            }
        }

        mutating func stop(because reason: StopReason) {
            guard let writer else { return }
            do {
                try writer.close()
                self.writer = nil
                state = .stopped(reason)
            } catch {
                stopAfter(error, creating: false)
            }
        }

        /// Shifts every kept file one age older (dropping the oldest) and starts a new current file.
        private mutating func rotate() {
            let kept = max(configuration.keptFiles, 1)
            for age in stride(from: kept - 1, through: 0, by: -1) {
                let from = path(age: age)
                let code: Int32
                if age == kept - 1 {
                    code = unlink(from) == 0 ? 0 : errno
                } else {
                    code = rename(from, path(age: age + 1)) == 0 ? 0 : errno
                }
                if code != 0 && code != ENOENT {
                    writer = nil
                    state = .stopped(.rotatingFailed(path: from, errno: code))
                    return
                }
            }
            openFile(startNanoseconds: lastRecordNanoseconds)
        }

        private mutating func stopAfter(_ error: TraceFileError, creating: Bool) {
            writer = nil  // its deinit closes the file; what it still buffers is dropped with it
            guard case .io(let operation, let path, let code) = error else {
                state = .stopped(.writingFailed(path: path, errno: 0))
                return
            }
            state = .stopped(
                creating && operation == .open
                    ? .creatingFailed(path: path, errno: code) : .writingFailed(path: path, errno: code))
        }
    }
}
