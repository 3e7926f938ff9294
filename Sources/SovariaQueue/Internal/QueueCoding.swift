import Foundation
import Sovaria

/// The stored form of queue entries: JSON with sorted keys and unescaped slashes, dates as
/// whole milliseconds since 1970 (an integer).
///
/// The queue rounds its clock down to the millisecond before it makes an entry, so the value a
/// call returns and the one read back later are equal.
enum QueueCoding {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Int64((date.timeIntervalSince1970 * 1_000).rounded()))
        }
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            dateFrom(milliseconds: try decoder.singleValueContainer().decode(Int64.self))
        }
        return decoder
    }

    static func encode(_ value: some Encodable) throws -> String {
        String(decoding: try encoder().encode(value), as: UTF8.self)
    }

    /// `date` rounded down to the millisecond, made the way decoding makes it.
    static func truncatedToMilliseconds(_ date: Date) -> Date {
        dateFrom(milliseconds: Int64((date.timeIntervalSince1970 * 1_000).rounded(.down)))
    }

    private static func dateFrom(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1_000)
    }
}

/// Decodes entries read from the store (one decoder for a whole listing) and checks each
/// against its key, so a value copied under another key is caught.
struct QueueEntryReader {
    private let decoder = QueueCoding.decoder()

    func queuedWrite(_ entry: StoreEntry) throws -> QueuedWrite {
        let write: QueuedWrite = try decode(entry)
        guard let (sequence, id) = QueueKeys.parse(entry.key, prefix: QueueKeys.queuePrefix),
            sequence == write.sequence, id == write.id
        else {
            throw QueueErrors.undecodable(
                entry.key, "it holds write \(write.id) of sequence \(write.sequence), not the one its key names")
        }
        return write
    }

    func rejectedWrite(_ entry: StoreEntry) throws -> RejectedWrite {
        let rejected: RejectedWrite = try decode(entry)
        guard let (_, id) = QueueKeys.parse(entry.key, prefix: QueueKeys.rejectedPrefix), id == rejected.id else {
            throw QueueErrors.undecodable(entry.key, "it holds write \(rejected.id), not the one its key names")
        }
        return rejected
    }

    private func decode<Value: Decodable>(_ entry: StoreEntry) throws -> Value {
        do {
            return try decoder.decode(Value.self, from: Data(entry.value.utf8))
        } catch {
            throw QueueErrors.undecodable(entry.key, "\(error)", error)
        }
    }
}
