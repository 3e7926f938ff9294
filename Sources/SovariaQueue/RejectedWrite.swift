import Foundation

/// A write that did not apply on the server: refused (a 4xx other than 401, 408 and 429),
/// matching no row, or in conflict with a row changed since it was read (``reason``). Kept in the
/// ``WriteQueue``'s rejected list with the server's answer, so the app can show it, send it
/// again (``WriteQueue/requeue(_:id:)``) or drop it (``WriteQueue/discard(_:)``).
public struct RejectedWrite: Sendable, Hashable, Codable, Identifiable {
    /// The write's client id.
    public var id: String { write.id }
    /// The write as it was when the server refused it.
    public let write: QueuedWrite
    /// The HTTP status the server answered.
    public let status: Int
    /// The server's message.
    public let message: String
    /// When the write was rejected (by the queue's clock, to the millisecond).
    public let rejectedAt: Date
    /// Why the write is here. Entries written before reasons existed read as
    /// ``RejectionReason/refused``.
    public let reason: RejectionReason
    /// The server's current row as a JSON object, for ``RejectionReason/conflict`` and
    /// ``RejectionReason/serverWon``: what the app shows beside its own write.
    public let serverRow: String?

    /// A rejected write as the queue makes them; for tests and tools
    /// (``WriteQueue/reject(_:status:message:reason:serverRow:sparing:)`` makes the real ones).
    public init(
        write: QueuedWrite, status: Int, message: String, rejectedAt: Date, reason: RejectionReason = .refused,
        serverRow: String? = nil
    ) {
        self.write = write
        self.status = status
        self.message = message
        self.rejectedAt = rejectedAt
        self.reason = reason
        self.serverRow = serverRow
    }

    private enum CodingKeys: String, CodingKey {
        case write, status, message, rejectedAt, reason, serverRow
    }

    /// Decodes an entry; one without a reason is ``RejectionReason/refused``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        write = try container.decode(QueuedWrite.self, forKey: .write)
        status = try container.decode(Int.self, forKey: .status)
        message = try container.decode(String.self, forKey: .message)
        rejectedAt = try container.decode(Date.self, forKey: .rejectedAt)
        reason = try container.decodeIfPresent(RejectionReason.self, forKey: .reason) ?? .refused
        serverRow = try container.decodeIfPresent(String.self, forKey: .serverRow)
    }

    /// Encodes the entry; ``RejectionReason/refused`` is left out, so entries of plain refusals
    /// keep the form they had before reasons existed.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(write, forKey: .write)
        try container.encode(status, forKey: .status)
        try container.encode(message, forKey: .message)
        try container.encode(rejectedAt, forKey: .rejectedAt)
        if reason != .refused { try container.encode(reason, forKey: .reason) }
        try container.encodeIfPresent(serverRow, forKey: .serverRow)
    }
}
