import Foundation

/// JSON encoders and decoders set up for PostgREST's JSON: dates as ISO 8601 text, written with
/// fractional seconds (`2026-12-01T18:17:30.123Z`) and read with or without them, in any offset
/// PostgreSQL writes (`+00:00`).
public enum JSONCoding {
    /// A decoder for PostgREST's answers.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseDate(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "Expected an ISO 8601 date, found \(text)")
            }
            return date
        }
        return decoder
    }

    /// An encoder for PostgREST's requests; keys are sorted, so the same value is the same body.
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(withFractions))
        }
        return encoder
    }

    private static let withFractions = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let withoutFractions = Date.ISO8601FormatStyle()

    /// `text` as an ISO 8601 date and time, with or without fractional seconds (any number of
    /// digits: PostgreSQL writes microseconds), and with or without an offset (none: UTC).
    static func parseDate(_ text: String) -> Date? {
        if let date = parseZonedDate(text) { return date }
        // PostgreSQL's `timestamp` (without time zone) has no offset: read it as UTC.
        return parseZonedDate(text + "Z")
    }

    private static func parseZonedDate(_ text: String) -> Date? {
        if let date = try? withFractions.parse(text) { return date }
        if let date = try? withoutFractions.parse(text) { return date }
        // More than the three fractional digits the format style reads: keep three.
        guard let dot = text.firstIndex(of: ".") else { return nil }
        let digits = text[text.index(after: dot)...].prefix(while: \.isNumber)
        guard digits.count > 3 else { return nil }
        let trimmed = text[..<dot] + "." + digits.prefix(3) + text[digits.endIndex...]
        return try? withFractions.parse(String(trimmed))
    }
}
