/// Parses the text of a ``StoreURL`` against the schemes an opener knows.
///
/// Every error names the part of the text it is about, as written.
struct StoreURLParser {
    let text: String
    var schemes: [String: StoreScheme] = OfflineStores.registeredSchemes

    func parse() throws(StoreURLError) -> StoreURL {
        guard let colon = text.firstIndex(of: ":") else { throw failure(text, .missingScheme) }
        let schemeText = String(text[..<colon])
        guard !schemeText.isEmpty else { throw failure(":", .missingScheme) }
        var names = schemeText.split(separator: "+", omittingEmptySubsequences: false).map(String.init)
        let engineName = names.removeLast()
        guard !engineName.isEmpty, !names.contains(where: \.isEmpty) else {
            throw failure(schemeText + ":", .missingScheme)
        }
        guard let engine = schemes[engineName.lowercased()], !engine.isWrapper else {
            throw failure(engineName, .unknownEngine)
        }
        var wrappers: [StoreScheme] = []
        for name in names {
            guard let wrapper = schemes[name.lowercased()], wrapper.isWrapper else {
                throw failure(name, .unknownWrapper)
            }
            wrappers.append(wrapper)
        }
        var url = StoreURL(engine: engine.name, wrappers: wrappers.map(\.name))

        var rest = String(text[text.index(after: colon)...])
        let allowed = wrappers.reduce(engine.options.union([StoreURL.durabilityOption])) { $0.union($1.options) }
        if let question = rest.lastIndex(of: "?") {
            let query = String(rest[rest.index(after: question)...])
            // A location passed on as written (a postgresql:// URL) keeps a query that is not
            // ours: its own parameters, such as `?sslmode=require`.
            let isOurs =
                engine.location != .optional
                || query.split(separator: "&").allSatisfy { pair in
                    pair.split(separator: "=", maxSplits: 1).first.map { allowed.contains(String($0)) } ?? false
                }
            if isOurs {
                rest = String(rest[..<question])
                try readOptions(query, allowed: allowed, into: &url)
            }
        }
        if engine.location == .optional {
            url.location = rest
        } else {
            if rest.hasPrefix("//") { rest.removeFirst(2) }  // file:///tmp/x is /tmp/x
            url.location = try decoded(rest)
        }
        switch engine.location {
        case .absent where !url.location.isEmpty: throw failure(rest, .unexpectedLocation)
        case .required where url.location.isEmpty: throw failure(schemeText + ":", .missingLocation)
        default: break
        }
        return url
    }

    private func readOptions(_ query: String, allowed: Set<String>, into url: inout StoreURL) throws(StoreURLError) {
        var seen: Set<String> = []
        for pair in query.split(separator: "&") {  // `?` alone, or `&&`, names nothing
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty else { throw failure(String(pair), .badOption) }
            let name = try decoded(parts[0])
            let value = try decoded(parts[1])
            guard allowed.contains(name) else { throw failure(parts[0], .unknownOption) }
            guard seen.insert(name).inserted else { throw failure(String(pair), .badOption) }
            if name == StoreURL.durabilityOption {
                switch value {
                case "synced": url.durability = .synced
                case "flushed": url.durability = .flushed
                default: throw failure(parts[1], .badDurability)
                }
            } else {
                url.options[name] = value
            }
        }
    }

    /// `encoded` with each `%XX` replaced by its byte; the bytes must be UTF-8.
    private func decoded(_ encoded: String) throws(StoreURLError) -> String {
        guard encoded.contains("%") else { return encoded }
        var bytes: [UInt8] = []
        var input = Array(encoded.utf8)[...]
        while let byte = input.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            let digits = input.prefix(2)
            // Two hexadecimal digits exactly (`UInt8(_:radix:)` alone would take a sign), and never
            // NUL: a C path ends at it, so `a%00b` would open `a`.
            guard digits.count == 2, digits.allSatisfy({ Character(Unicode.Scalar($0)).isHexDigit }),
                let value = UInt8(String(decoding: digits, as: UTF8.self), radix: 16), value != 0
            else {
                throw failure("%" + String(decoding: digits, as: UTF8.self), .badPercentEncoding)
            }
            input.removeFirst(2)
            bytes.append(value)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw failure(encoded, .badPercentEncoding) }
        return text
    }

    private func failure(_ part: String, _ reason: StoreURLError.Reason) -> StoreURLError {
        StoreURLError(url: text, part: part, reason: reason)
    }
}
