import Foundation
import SovariaPlumbing

/// Writes queue entries as JSON text, byte for byte what `JSONEncoder` writes with
/// `[.sortedKeys, .withoutEscapingSlashes]` and dates as integer milliseconds, without
/// Foundation's encoder (docs/ARCHITECTURE.md).
///
/// Keys come in UTF-8 byte order, as `.sortedKeys` gives them; strings escape `"`, `\` and
/// U+0000–U+001F (`\b \t \n \f \r` short, the others as lowercase `\u00xx`) and keep every
/// other character, `/` included, as UTF-8.
struct QueueJSONWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    /// The text written so far.
    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func write(_ write: QueuedWrite) throws {
        raw(#"{"attempts":"#)
        integer(Int64(write.attempts))
        raw(#","id":"#)
        string(write.id)
        if let lastError = write.lastError {
            raw(#","lastError":"#)
            string(lastError)
        }
        raw(#","queuedAt":"#)
        integer(try Self.milliseconds(write.queuedAt))
        raw(#","request":"#)
        request(write.request)
        raw(#","sequence":"#)
        unsigned(write.sequence)
        bytes.append(UInt8(ascii: "}"))
    }

    mutating func write(_ rejected: RejectedWrite) throws {
        raw(#"{"message":"#)
        string(rejected.message)
        if rejected.reason != .refused {
            raw(#","reason":"#)
            string(rejected.reason.rawValue)
        }
        raw(#","rejectedAt":"#)
        integer(try Self.milliseconds(rejected.rejectedAt))
        if let serverRow = rejected.serverRow {
            raw(#","serverRow":"#)
            string(serverRow)
        }
        raw(#","status":"#)
        integer(Int64(rejected.status))
        raw(#","write":"#)
        try write(rejected.write)
        bytes.append(UInt8(ascii: "}"))
    }

    mutating func request(_ request: DataRequest) {
        bytes.append(UInt8(ascii: "{"))
        if let body = request.body {
            raw(#""body":"#)
            string(body)
            bytes.append(UInt8(ascii: ","))
        }
        raw(#""headers":{"#)
        // `.sortedKeys` orders by UTF-8 bytes (checked against JSONEncoder in the tests).
        let headers =
            request.headers.count < 2
            ? Array(request.headers) : request.headers.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        for (offset, header) in headers.enumerated() {
            if offset > 0 { bytes.append(UInt8(ascii: ",")) }
            string(header.key)
            bytes.append(UInt8(ascii: ":"))
            string(header.value)
        }
        raw(#"},"method":"#)
        string(request.method)
        if let policy = request.noMatchPolicy {
            raw(#","noMatchPolicy":"#)
            string(policy.rawValue)
        }
        raw(#","path":"#)
        string(request.path)
        bytes.append(UInt8(ascii: "}"))
    }

    /// `date` as whole milliseconds since 1970, rounded to nearest as Foundation's
    /// `.millisecondsSince1970` strategy does; throws where that one traps (a date too far out for
    /// 64 bits, or not a number).
    static func milliseconds(_ date: Date) throws -> Int64 {
        let milliseconds = (date.timeIntervalSince1970 * 1_000).rounded()
        guard let exact = Int64(exactly: milliseconds) else {
            throw QueueJSONError(offset: 0, problem: "the date \(date.timeIntervalSince1970) s cannot be stored")
        }
        return exact
    }

    /// Appends ASCII punctuation and key names without looking at them.
    private mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private mutating func integer(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        unsigned(value.magnitude)
    }

    private mutating func unsigned(_ value: UInt64) {
        // Largest power of ten not above `value` (at most 10^19, which fits), then digits from the top.
        var divisor: UInt64 = 1
        while value / divisor >= 10 { divisor *= 10 }
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        } while divisor > 0
    }

    private mutating func string(_ value: String) {
        JSONStringWriter.append(value, to: &bytes)
    }
}
