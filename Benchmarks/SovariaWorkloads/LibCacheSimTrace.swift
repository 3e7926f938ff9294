import Foundation
@_spi(Benchmarks) import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A libCacheSim trace format (https://github.com/1a1a11a/libCacheSim), so public cache traces
/// (Twitter, Meta, CloudPhysics) replay as key/value workloads.
package enum LibCacheSimFormat: Sendable, Equatable {
    /// `oracleGeneral`: 24-byte little-endian records — `UInt32` time in seconds, `UInt64` object
    /// id, `UInt32` size in bytes, `Int64` next access (-1 for none; not used here).
    case oracleGeneral
    /// `csv`: one request a line, the columns named by ``LibCacheSimCSVOptions``.
    case csv(LibCacheSimCSVOptions)
}

/// Which columns of a libCacheSim `csv` trace hold what, as libCacheSim's own `-t` options say
/// (`time-col`, `obj-id-col`, `obj-size-col`, `delimiter`, `has-header`, `obj-id-is-num`).
package struct LibCacheSimCSVOptions: Sendable, Equatable {
    /// The time's column, from 1; `nil`: every request at time 0. Default: `nil`.
    package var timeColumn: Int?
    /// The object id's column, from 1.
    package var objectIDColumn: Int
    /// The size's column, from 1; `nil`: every object ``defaultSizeBytes``. Default: `nil`.
    package var sizeColumn: Int?
    /// Whether the first line names the columns (and is skipped). Default: `false`.
    package var hasHeader = false
    /// The byte between columns. Default: `,`.
    package var delimiter = UInt8(ascii: ",")
    /// Whether ids are numbers (`obj:42`); otherwise the id's text is the key's end. Default: `true`.
    package var objectIDIsNumber = true
    /// The time column's unit in nanoseconds. Default: a second, libCacheSim's.
    package var timeUnitNanoseconds: Double = 1e9
    /// The size of an object when there is no size column. Default: 1 byte.
    package var defaultSizeBytes = 1

    /// Options naming the id's column; the others as their defaults say.
    package init(objectIDColumn: Int, timeColumn: Int? = nil, sizeColumn: Int? = nil) {
        self.objectIDColumn = objectIDColumn
        self.timeColumn = timeColumn
        self.sizeColumn = sizeColumn
    }

    /// Options from libCacheSim's `-t` text, for example
    /// `"time-col=1,obj-id-col=2,obj-size-col=3,delimiter=,,has-header=true,obj-id-is-num=0"`
    /// (the delimiter is the one character after `delimiter=`; `\t` or `tab` for a tab).
    package init(libCacheSimParameters text: String) throws(LibCacheSimTraceError) {
        self.init(objectIDColumn: 0)
        var rest = Substring(text)
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { throw .badOptions(String(rest)) }
            let name = rest[..<equals].trimmingCharacters(in: .whitespaces)
            rest = rest[rest.index(after: equals)...]
            var value: Substring
            if name == "delimiter" {
                let length = rest.hasPrefix("\\t") ? 2 : rest.hasPrefix("tab") ? 3 : 1
                value = rest.prefix(length)
                rest = rest.dropFirst(length)
                guard rest.isEmpty || rest.first == "," else { throw .badOptions(name) }
            } else {
                value = rest.prefix { $0 != "," }
                rest = rest.dropFirst(value.count)
            }
            rest = rest.dropFirst()  // the ","
            value = Substring(value.trimmingCharacters(in: .whitespaces))
            switch name {
            case "time-col": timeColumn = try Self.column(value, name)
            case "obj-id-col": objectIDColumn = try Self.column(value, name)
            case "obj-size-col": sizeColumn = try Self.column(value, name)
            case "has-header": hasHeader = try Self.flag(value, name)
            case "obj-id-is-num": objectIDIsNumber = try Self.flag(value, name)
            case "delimiter":
                guard let byte = value == "\\t" || value == "tab" ? 9 : value.utf8.first, value.utf8.count <= 3
                else { throw .badOptions(name) }
                delimiter = byte
            default: continue  // libCacheSim's other options (op-type-col, ttl-col, …) do not apply
            }
        }
        guard objectIDColumn > 0 else { throw .badOptions("obj-id-col") }
    }

    private static func column(_ value: Substring, _ name: String) throws(LibCacheSimTraceError) -> Int {
        guard let column = Int(value), column > 0 else { throw .badOptions(name) }
        return column
    }

    private static func flag(_ value: Substring, _ name: String) throws(LibCacheSimTraceError) -> Bool {
        switch value.lowercased() {
        case "1", "true", "yes": return true
        case "0", "false", "no": return false
        default: throw .badOptions(name)
        }
    }
}

/// Why a libCacheSim trace could not be read.
package enum LibCacheSimTraceError: Error, Equatable, Sendable {
    /// A system call on `path` failed.
    case io(operation: TraceFileError.Operation, path: String, errno: Int32)
    /// `zstd -dc` could not run (`status` -1), or ended with `status` after `decompressedBytes`
    /// bytes of output (a damaged or cut file, or `zstd` not installed: `apt-get install zstd`).
    case decompressionFailed(path: String, status: Int32, decompressedBytes: Int)
    /// A csv line (from 1) lacks a column or holds a value that is not a number.
    case badLine(line: Int, column: Int)
    /// libCacheSim csv options that do not parse; the option's name.
    case badOptions(String)
    /// The oracleGeneral record starting at byte `offset` (of the decompressed stream, for a `.zst`
    /// file) is cut short: only `bytes` of its 24 are there. The trace is damaged or was copied
    /// in part.
    case truncatedRecord(path: String, offset: Int, bytes: Int)
}

extension LibCacheSimTraceError: CustomStringConvertible {
    /// What went wrong and where in the file, for a person (the caller names the file).
    package var description: String {
        switch self {
        case .io(let operation, _, let errno):
            "\(operation) failed: \(String(cString: strerror(errno))) (errno \(errno))"
        case .decompressionFailed(_, let status, _) where status == -1:
            "zstd -dc could not run: install zstd (apt-get install zstd)"
        case .decompressionFailed(_, let status, let bytes):
            "zstd -dc failed (status \(status)) at byte \(bytes) of the decompressed trace: "
                + "the file is damaged or incomplete"
        case .badLine(let line, let column): "line \(line), column \(column): missing, or not a number"
        case .badOptions(let name): "libCacheSim csv options: \(name) does not parse"
        case .truncatedRecord(let path, let offset, let bytes):
            "the oracleGeneral record at byte \(offset)"
                + (path.hasSuffix(".zst") ? " of the decompressed trace" : "")
                + " is cut short (\(bytes) of its 24 bytes): the trace is damaged or incomplete"
        }
    }
}

/// Reads a libCacheSim trace as ``TraceRecord``s, one request at a time: each request becomes
/// ``TraceOperation/fetch(key:valueBytes:)`` of `keyPrefix` + the object id (`obj:42`) and the
/// object's size, at its time since the first request. A `.zst` file is read through `zstd -dc`
/// (the Debian package `zstd`); neither form is ever held whole in memory.
///
/// ```swift
/// let reader = try LibCacheSimTraceReader(path: "cluster52.oracleGeneral.zst", format: .oracleGeneral)
/// while let request = try reader.nextRecord() { … }
/// ```
///
/// - Important: Not thread safe: one owner at a time. As a `Sequence`, a failure ends the
///   iteration and is kept in ``failure``. A binary record cut short (a damaged or partly copied
///   trace) throws ``LibCacheSimTraceError/truncatedRecord(path:offset:bytes:)`` after the
///   requests before it; a csv file's last line needs no newline.
package final class LibCacheSimTraceReader: Sequence, IteratorProtocol {
    /// The file read.
    package let path: String
    /// The format it is read as.
    package let format: LibCacheSimFormat
    /// What each object id is appended to, to make a key. Default: `obj:`.
    package let keyPrefix: String
    /// The requests returned so far.
    package private(set) var requestCount = 0
    /// The error that ended a `for … in` iteration, if one did.
    package private(set) var failure: LibCacheSimTraceError?

    private var input: ChunkedInput
    private var firstTime: Double?
    private var lastNanoseconds: UInt64 = 0
    private var lineNumber = 0

    /// Opens `path` (through `zstd -dc` when it ends in `.zst`).
    package init(path: String, format: LibCacheSimFormat, keyPrefix: String = "obj:") throws(LibCacheSimTraceError) {
        self.path = path
        self.format = format
        self.keyPrefix = keyPrefix
        input = try ChunkedInput(path: path, decompress: path.hasSuffix(".zst"))
    }

    /// The next request, or `nil` at the end of the trace.
    package func nextRecord() throws(LibCacheSimTraceError) -> TraceRecord? {
        switch format {
        case .oracleGeneral: return try nextOracleGeneral()
        case .csv(let options): return try nextCSV(options)
        }
    }

    /// The next request; a failure ends the sequence and is kept in ``failure``.
    package func next() -> TraceRecord? {
        guard failure == nil else { return nil }
        do {
            return try nextRecord()
        } catch {
            failure = error
            return nil
        }
    }

    private func request(time: Double, id: String, size: Int) -> TraceRecord {
        let first = firstTime ?? time
        firstTime = first
        let nanoseconds = Swift.max(lastNanoseconds, UInt64(Swift.max(0, (time - first).rounded())))
        lastNanoseconds = nanoseconds
        requestCount += 1
        return TraceRecord(nanoseconds: nanoseconds, operation: .fetch(key: keyPrefix + id, valueBytes: size))
    }

    private func nextOracleGeneral() throws(LibCacheSimTraceError) -> TraceRecord? {
        guard let record = try input.take(24) else {
            guard input.remaining == 0 else {
                throw .truncatedRecord(path: path, offset: requestCount * 24, bytes: input.remaining)
            }
            return nil
        }
        func little<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            (0..<MemoryLayout<T>.size).reduce(T.zero) { $0 | T(record[record.startIndex + offset + $1]) << T($1 * 8) }
        }
        let seconds = little(0, UInt32.self)
        let id = little(4, UInt64.self)
        let size = little(12, UInt32.self)
        return request(time: Double(seconds) * 1e9, id: String(id), size: Int(size))
    }

    private func nextCSV(_ options: LibCacheSimCSVOptions) throws(LibCacheSimTraceError) -> TraceRecord? {
        while let line = try input.line() {
            lineNumber += 1
            if lineNumber == 1 && options.hasHeader { continue }
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == 9 }) { continue }
            let columns = line.split(separator: options.delimiter, omittingEmptySubsequences: false)
            func field(_ column: Int) throws(LibCacheSimTraceError) -> String {
                guard column <= columns.count else { throw .badLine(line: lineNumber, column: column) }
                return String(decoding: columns[column - 1], as: UTF8.self).trimmingCharacters(in: .whitespaces)
            }
            var time = 0.0
            if let column = options.timeColumn {
                guard let value = Double(try field(column)) else { throw .badLine(line: lineNumber, column: column) }
                time = value * options.timeUnitNanoseconds
            }
            var id = try field(options.objectIDColumn)
            if options.objectIDIsNumber {
                guard let number = UInt64(id) else { throw .badLine(line: lineNumber, column: options.objectIDColumn) }
                id = String(number)
            }
            var size = options.defaultSizeBytes
            if let column = options.sizeColumn {
                guard let value = Int(try field(column)), value >= 0 else {
                    throw .badLine(line: lineNumber, column: column)
                }
                size = value
            }
            return request(time: time, id: id, size: size)
        }
        return nil
    }
}

/// A file or a decompressor's output read in chunks of 1 MiB.
private final class ChunkedInput {
    private let path: String
    private var descriptor: Int32
    private var process: Process?
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    private var position = 0
    private var end = 0
    private var reachedEnd = false
    /// Bytes read from the file or the decompressor so far.
    private var totalRead = 0

    init(path: String, decompress: Bool) throws(LibCacheSimTraceError) {
        self.path = path
        guard decompress else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw .io(operation: .open, path: path, errno: errno) }
            return
        }
        guard access(path, R_OK) == 0 else { throw .io(operation: .open, path: path, errno: errno) }
        let pipe = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["zstd", "-dcq", "--", path]
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw .decompressionFailed(path: path, status: -1, decompressedBytes: 0)
        }
        self.process = process
        descriptor = dup(pipe.fileHandleForReading.fileDescriptor)
        try? pipe.fileHandleForReading.close()
        try? pipe.fileHandleForWriting.close()
    }

    deinit {
        _ = close(descriptor)
        if let process, process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Bytes read and not yet taken.
    var remaining: Int { end - position }

    /// The next `count` bytes, or `nil` when the input ends first (what is left stays in `remaining`).
    func take(_ count: Int) throws(LibCacheSimTraceError) -> ArraySlice<UInt8>? {
        while remaining < count {
            if reachedEnd { return nil }
            try fill()
        }
        defer { position += count }
        return buffer[position..<position + count]
    }

    /// The next line without its `\n` (and `\r`), or `nil` at the end; a last line needs no `\n`.
    func line() throws(LibCacheSimTraceError) -> ArraySlice<UInt8>? {
        var scanned = 0  // bytes after `position` known to hold no newline
        while true {
            if let newline = buffer[(position + scanned)..<end].firstIndex(of: UInt8(ascii: "\n")) {
                var line = buffer[position..<newline]
                position = newline + 1
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                return line
            }
            scanned = end - position
            if reachedEnd {
                guard remaining > 0 else { return nil }
                defer { position = end }
                return buffer[position..<end]
            }
            try fill()
        }
    }

    private func fill() throws(LibCacheSimTraceError) {
        if position > 0 {
            buffer.replaceSubrange(0..<end - position, with: buffer[position..<end])
            end -= position
            position = 0
        }
        if end == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + end, $0.count - end) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .io(operation: .read, path: path, errno: errno)
            }
            end += count
            totalRead += count
            if count == 0 {
                reachedEnd = true
                try finishProcess()
            }
            return
        }
    }

    private func finishProcess() throws(LibCacheSimTraceError) {
        guard let process else { return }
        process.waitUntilExit()
        self.process = nil
        if process.terminationStatus != 0 {
            throw .decompressionFailed(path: path, status: process.terminationStatus, decompressedBytes: totalRead)
        }
    }
}
