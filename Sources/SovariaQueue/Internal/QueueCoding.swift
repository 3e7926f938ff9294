import Foundation
import Sovaria

/// The stored form of queue entries: JSON with sorted keys and unescaped slashes, dates as
/// whole milliseconds since 1970 (an integer), the bytes Foundation's `JSONEncoder` makes with
/// those options; written and read by ``QueueJSONWriter`` and ``QueueJSONReader``.
///
/// The queue rounds its clock down to the millisecond before it makes an entry, so the value a
/// call returns and the one read back later are equal.
enum QueueCoding {
    static func encode(_ write: QueuedWrite) throws -> String {
        var writer = QueueJSONWriter(capacity: 256 + write.stringBytes)
        try writer.write(write)
        return writer.text
    }

    static func encode(_ rejected: RejectedWrite) throws -> String {
        var writer = QueueJSONWriter(capacity: 320 + rejected.message.utf8.count + rejected.write.stringBytes)
        try writer.write(rejected)
        return writer.text
    }

    /// `date` rounded down to the millisecond, made the way decoding makes it.
    static func truncatedToMilliseconds(_ date: Date) -> Date {
        dateFrom(milliseconds: Int64((date.timeIntervalSince1970 * 1_000).rounded(.down)))
    }

    static func dateFrom(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
    }
}

/// Decodes entries read from the store (one decoder for a whole listing) and checks each
/// against its key, so a value copied under another key is caught.
struct QueueEntryReader {
    func queuedWrite(_ entry: StoreEntry) throws -> QueuedWrite {
        let write = try decode(entry, QueueJSONReader.queuedWrite(from:))
        guard let (sequence, id) = QueueKeys.parse(entry.key, prefix: QueueKeys.queuePrefix),
            sequence == write.sequence, id == write.id
        else {
            throw QueueErrors.undecodable(
                entry.key, "it holds write \(write.id) of sequence \(write.sequence), not the one its key names")
        }
        return write
    }

    func rejectedWrite(_ entry: StoreEntry) throws -> RejectedWrite {
        let rejected = try decode(entry, QueueJSONReader.rejectedWrite(from:))
        guard let (_, id) = QueueKeys.parse(entry.key, prefix: QueueKeys.rejectedPrefix), id == rejected.id else {
            throw QueueErrors.undecodable(entry.key, "it holds write \(rejected.id), not the one its key names")
        }
        return rejected
    }

    private func decode<Value>(_ entry: StoreEntry, _ read: (String) throws -> Value) throws -> Value {
        do {
            return try read(entry.value)
        } catch {
            throw QueueErrors.undecodable(entry.key, "\(error)", error)
        }
    }
}

extension QueuedWrite {
    /// About how many bytes its strings take, to size the output once.
    fileprivate var stringBytes: Int {
        var total = id.utf8.count + (lastError?.utf8.count ?? 0) + request.method.utf8.count + request.path.utf8.count
        total += request.body?.utf8.count ?? 0
        for (name, value) in request.headers { total += name.utf8.count + value.utf8.count + 6 }
        return total
    }
}
