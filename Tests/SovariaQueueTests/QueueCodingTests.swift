import Foundation
import Sovaria
import Testing

@testable import SovariaQueue

/// The hand-written queue codec against the format Foundation's `JSONEncoder` wrote before it:
/// same bytes out, same values back, and a throw (never a trap or a wrong value) on anything else.
@Suite struct QueueCodingTests {
    // MARK: - Same bytes as JSONEncoder

    @Test func encoderWritesJSONEncodersBytesForHostileWrites() throws {
        let writes = Self.hostileWrites()
        for write in writes {
            #expect(try QueueCoding.encode(write) == Self.foundationText(write), "\(write)")
        }
        for rejected in Self.rejectedWrites(writes) {
            #expect(try QueueCoding.encode(rejected) == Self.foundationText(rejected), "\(rejected)")
        }
    }

    @Test func headersAreOrderedByUTF8BytesAsSortedKeysOrdersThem() throws {
        // Not case-insensitive, not numeric, not canonical: "e\u{301}x" (65 CC 81) before "f" before "éa" (C3).
        let headers = [
            "Prefer": "", "accept": "", "x10": "", "x9": "", "e\u{301}x": "", "\u{E9}a": "", "f": "", "": "",
        ]
        let write = Self.write(request: DataRequest(method: "GET", path: "/", headers: headers))
        let text = try QueueCoding.encode(write)
        #expect(text == (try Self.foundationText(write)))
        #expect(
            text.contains(#"{"":"","Prefer":"","accept":"","e\#u{301}x":"","f":"","x10":"","x9":"","\#u{E9}a":""}"#))
    }

    @Test func escapesExactlyQuoteBackslashAndControlCharactersLikeJSONEncoder() throws {
        var everyASCII = ""
        for byte in UInt8(0)..<0x80 { everyASCII.unicodeScalars.append(Unicode.Scalar(byte)) }
        let write = Self.write(request: DataRequest(method: "GET", path: "/a/b", body: everyASCII + "\u{2028}é😀"))
        let text = try QueueCoding.encode(write)
        #expect(text == (try Self.foundationText(write)))
        #expect(text.contains(#""body":"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e"#))
        #expect(text.contains(##"\u001f !\"#$%&'()*+,-./0123456789"##), "slash kept, quote escaped")
        #expect(text.contains(#"[\\]^_`"#), "backslash escaped")
        #expect(text.contains("~\u{7F}\u{2028}é😀\""), "DEL and non-ASCII kept as UTF-8")
        #expect(text.contains(#""path":"/a/b""#))
    }

    // MARK: - Round trips

    @Test func hostileWritesReadBackEqual() throws {
        let writes = Self.hostileWrites()
        for write in writes {
            #expect(try QueueJSONReader.queuedWrite(from: QueueCoding.encode(write)) == write)
        }
        for rejected in Self.rejectedWrites(writes) {
            #expect(try QueueJSONReader.rejectedWrite(from: QueueCoding.encode(rejected)) == rejected)
        }
        // And through the entry reader, whose keys need a plain id.
        let write = QueuedWrite(
            id: "w-1", sequence: 9, request: writes[writes.count - 5].request, queuedAt: writes[3].queuedAt)
        let back = try QueueEntryReader().queuedWrite(
            .init(key: QueueKeys.queued(9, "w-1"), value: try QueueCoding.encode(write)))
        #expect(back == write)
    }

    @Test func readsWhatJSONEncoderWrote() throws {
        let writes = Self.hostileWrites()
        for write in writes {
            #expect(try QueueJSONReader.queuedWrite(from: Self.foundationText(write)) == write)
        }
        for rejected in Self.rejectedWrites(writes) {
            #expect(try QueueJSONReader.rejectedWrite(from: Self.foundationText(rejected)) == rejected)
        }
    }

    @Test func aRejectedEntryWithoutAReasonReadsAsRefusedAndARefusalIsWrittenWithoutOne() throws {
        let old =
            #"{"message":"no","rejectedAt":5,"status":403,"write":{"attempts":0,"id":"a","queuedAt":1,"#
            + #""request":{"headers":{},"method":"POST","path":"/"},"sequence":1}}"#
        let rejected = try QueueJSONReader.rejectedWrite(from: old)
        #expect(rejected.reason == .refused && rejected.serverRow == nil)
        #expect(try QueueCoding.encode(rejected) == old, "a plain refusal keeps the form it always had")
        #expect(try Self.foundationDecoder().decode(RejectedWrite.self, from: Data(old.utf8)) == rejected)
        let unknown = old.replacingOccurrences(of: #""message":"no","#, with: #""message":"no","reason":"later","#)
        #expect(throws: QueueJSONError.self) { try QueueJSONReader.rejectedWrite(from: unknown) }
    }

    @Test func readsAnyKeyOrderWhitespaceEscapesAndUnknownKeysAsJSONDecoderDoes() throws {
        let text = """
             \t{ "sequence" : 7.0 , "request" :{"path":"\\/rest\\/v1\\/notes","method":"P\\u004fST",
            "headers":{ "X-\\"Q\\"":"a\\\\b\\u0000", "Emoji":"\\ud83d\\ude00\\uD834\\uDD1E" } ,"body":null,"extra":[1,{}]},
            "queuedAt":18000000005e2,"lastError":null,"id":"\\u00e9\\r\\n","attempts":-0,
            "unknown":{"a":[true,false,null,-1.5e-3,"\\b\\f\\t"]}}\r\n
            """
        let expected = QueuedWrite(
            id: "é\r\n", sequence: 7,
            request: DataRequest(
                method: "POST", path: "/rest/v1/notes",
                headers: ["X-\"Q\"": "a\\b\u{0}", "Emoji": "😀𝄞"], body: nil),
            queuedAt: QueueCoding.dateFrom(milliseconds: 1_800_000_000_500), attempts: 0, lastError: nil)
        #expect(try QueueJSONReader.queuedWrite(from: text) == expected)
        #expect(try Self.foundationDecoder().decode(QueuedWrite.self, from: Data(text.utf8)) == expected)
    }

    @Test func absentAndNullOptionalsBothReadAsNil() throws {
        let request = #"{"headers":{},"method":"GET","path":"/"}"#
        let absent = #"{"attempts":0,"id":"a","queuedAt":0,"request":"# + request + #","sequence":1}"#
        let null = #"{"attempts":0,"id":"a","lastError":null,"queuedAt":0,"request":"# + request + #","sequence":1}"#
        for text in [absent, null] {
            let write = try QueueJSONReader.queuedWrite(from: text)
            #expect(write.lastError == nil && write.request.body == nil)
            #expect(write.queuedAt == Date(timeIntervalSince1970: 0))
        }
    }

    // MARK: - Malformed input throws

    @Test func everyTruncationOfAValidEncodingThrows() throws {
        let write = Self.hostileWrites()[2]
        let rejected = RejectedWrite(write: write, status: 409, message: "dup \"x\"", rejectedAt: write.queuedAt)
        for text in [try QueueCoding.encode(write), try QueueCoding.encode(rejected)] {
            let bytes = Array(text.utf8)
            #expect(bytes.count > 100)
            for length in 0..<bytes.count {
                let prefix = String(decoding: bytes[..<length], as: UTF8.self)
                #expect(throws: QueueJSONError.self, "\(length) bytes") {
                    _ = try QueueJSONReader.queuedWrite(from: prefix)
                }
                #expect(throws: QueueJSONError.self, "\(length) bytes") {
                    _ = try QueueJSONReader.rejectedWrite(from: prefix)
                }
            }
        }
    }

    @Test(arguments: malformedWrites)
    func malformedWriteThrows(_ text: String) {
        #expect(throws: QueueJSONError.self) { _ = try QueueJSONReader.queuedWrite(from: text) }
    }

    @Test func malformedRejectedWriteThrows() {
        let write =
            #"{"attempts":0,"id":"a","queuedAt":0,"request":{"headers":{},"method":"G","path":"/"},"sequence":1}"#
        let valid = #"{"message":"m","rejectedAt":5,"status":400,"write":"# + write + "}"
        #expect((try? QueueJSONReader.rejectedWrite(from: valid))?.status == 400, "the baseline is valid")
        for text in [
            #"{"message":"m","rejectedAt":5,"status":400}"#,
            #"{"message":"m","rejectedAt":5,"status":"400","write":"# + write + "}",
            #"{"message":null,"rejectedAt":5,"status":400,"write":"# + write + "}",
            #"{"message":"m","rejectedAt":5.5,"status":400,"write":"# + write + "}",
            #"{"message":"m","rejectedAt":5,"status":400,"write":{}}"#,
            #"{"message":"m","rejectedAt":5,"status":400,"status":401,"write":"# + write + "}",
            valid + ",",
        ] {
            #expect(throws: QueueJSONError.self, "\(text)") { _ = try QueueJSONReader.rejectedWrite(from: text) }
        }
    }

    @Test func undecodableEntryIsCorruptAndNamesItsKey() {
        let key = QueueKeys.queued(1, "a")
        let error = #expect(throws: OfflineStoreError.self) {
            _ = try QueueEntryReader().queuedWrite(.init(key: key, value: #"{"attempts":"#))
        }
        #expect(error?.code == .corrupt)
        #expect(error?.key == key)
        #expect(error?.underlying is QueueJSONError)
    }

    @Test func dateTooFarForMillisecondsThrowsInsteadOfTrapping() {
        let write = Self.write(queuedAt: Date(timeIntervalSince1970: 1e300))
        #expect(throws: QueueJSONError.self) { _ = try QueueCoding.encode(write) }
    }

    /// Each is one change away from a valid write (`valid`, checked by the first argument).
    static let malformedWrites: [String] = {
        let request = #"{"headers":{"A":"b"},"method":"GET","path":"/"}"#
        func write(_ fields: String) -> String { "{" + fields + "}" }
        let rest = #""id":"a","queuedAt":0,"request":"# + request + #","sequence":1"#
        return [
            // Wrong types.
            write(#""attempts":"0","# + rest), write(#""attempts":true,"# + rest), write(#""attempts":null,"# + rest),
            write(#""attempts":0,"id":7,"queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"a","queuedAt":"0","request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"a","queuedAt":0,"request":[],"sequence":1"#),
            write(
                #""attempts":0,"id":"a","queuedAt":0,"request":{"headers":{"A":1},"method":"GET","path":"/"},"#
                    + #""sequence":1"#),
            write(
                #""attempts":0,"id":"a","queuedAt":0,"request":{"headers":[],"method":"GET","path":"/"},"#
                    + #""sequence":1"#),
            write(#""attempts":0,"lastError":5,"# + rest),
            // Numbers out of range, not whole, or not JSON numbers.
            write(#""attempts":0,"id":"a","queuedAt":0,"request":"# + request + #","sequence":-1"#),
            write(#""attempts":0,"id":"a","queuedAt":0,"request":"# + request + #","sequence":18446744073709551616"#),
            write(#""attempts":9223372036854775808,"# + rest), write(#""attempts":1e30,"# + rest),
            write(#""attempts":1.5,"# + rest), write(#""attempts":15e-1,"# + rest), write(#""attempts":01,"# + rest),
            write(#""attempts":+1,"# + rest), write(#""attempts":1.,"# + rest), write(#""attempts":.5,"# + rest),
            write(#""attempts":1e,"# + rest), write(#""attempts":-,"# + rest), write(#""attempts":NaN,"# + rest),
            // Missing fields.
            write(rest), write(#""attempts":0,"queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"a","request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"a","queuedAt":0,"sequence":1"#),
            write(#""attempts":0,"id":"a","queuedAt":0,"request":"# + request),
            write(#""attempts":0,"id":"a","queuedAt":0,"request":{"method":"GET","path":"/"},"sequence":1"#),
            write(#""attempts":0,"id":"a","queuedAt":0,"request":{"headers":{},"path":"/"},"sequence":1"#),
            write(#""attempts":0,"id":"a","queuedAt":0,"request":{"headers":{},"method":"GET"},"sequence":1"#),
            // Bad strings: escapes, lone surrogates, raw control characters, unterminated.
            write(#""attempts":0,"id":"\x","queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"\u12","queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"\u12G4","queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"\ud800","queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"\udc00\ud800","queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"\ud800\u0041","queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"\ud800\n","queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"a"# + "\n" + #"b","queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":"a"# + "\u{0}" + #"","queuedAt":0,"request":"# + request + #","sequence":1"#),
            write(#""attempts":0,"id":'a',"queuedAt":0,"request":"# + request + #","sequence":1"#),
            // Bad structure.
            write(#""attempts":0,"attempts":0,"# + rest),
            write(#""attempts":0,"lastError":null,"lastError":"x","# + rest),
            write(
                #""attempts":0,"id":"a","queuedAt":0,"request":{"headers":{"A":"b","A":"c"},"method":"GET","#
                    + #""path":"/"},"sequence":1"#),
            write(#""attempts":0,"# + rest + ","), write(#""attempts":0,,"# + rest), write(#""attempts" 0,"# + rest),
            write(#"attempts:0,"# + rest), write(#""attempts":0,"# + rest) + "}", write(#""attempts":0,"# + rest) + "x",
            "[" + write(#""attempts":0,"# + rest) + "]", "", " ", "null", "\"a\"", "{}", "{",
            write(
                #""attempts":0,"x":"# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
                    + ","
                    + rest),
            write(#""attempts":0,"x":[1,],"# + rest), write(#""attempts":0,"x":tru,"# + rest),
        ]
    }()

    @Test func theMalformedCasesDifferFromAValidWrite() throws {
        // Guards the list above: the same text with the flaw taken out reads.
        let request = #"{"headers":{"A":"b"},"method":"GET","path":"/"}"#
        let valid = #"{"attempts":0,"id":"a","queuedAt":0,"request":"# + request + #","sequence":1}"#
        #expect(try QueueJSONReader.queuedWrite(from: valid).request.headers == ["A": "b"])
        #expect(!Self.malformedWrites.contains(valid))
        let deep =
            #"{"attempts":0,"x":"# + String(repeating: "[", count: 60) + String(repeating: "]", count: 60) + ","
            + valid.dropFirst(#"{"attempts":0,"#.count)
        #expect(try QueueJSONReader.queuedWrite(from: deep).id == "a", "nesting under the limit is skipped")
    }

    // MARK: - Fixtures

    /// Strings a request, header or message may hold that a careless codec gets wrong.
    static let hostileStrings: [String] = {
        var controls = ""
        for byte in UInt8(0)..<0x20 { controls.unicodeScalars.append(Unicode.Scalar(byte)) }
        return [
            "", "\"", "\\", #"\""#, #"\\\""#, "\0", "a\0b", controls, "\u{7F}", "é", "e\u{301}", "😀", "𝄞",
            "\u{10FFFF}", "\u{FFFD}", "\u{2028}\u{2029}", "\u{FEFF}", "/rest/v1/notes?id=eq.7&b=/x/", "</script>",
            #"{"title":"Hi","n":[1,2]}"#, "\r\n\t", "\\u0041", "日本語のテキスト",
        ]
    }()

    static func hostileWrites() -> [QueuedWrite] {
        var writes: [QueuedWrite] = []
        let strings = hostileStrings
        for (index, string) in strings.enumerated() {
            let other = strings[(index + 5) % strings.count]
            writes.append(
                QueuedWrite(
                    id: string, sequence: UInt64(index),
                    request: DataRequest(
                        method: other, path: string, headers: [string: other, "X-" + other: string], body: string),
                    queuedAt: QueueCoding.dateFrom(milliseconds: Int64(index) * 1_234_567_891 - 5_000),
                    attempts: index, lastError: index.isMultiple(of: 2) ? nil : other))
        }
        var manyHeaders: [String: String] = [:]
        for number in 0..<60 { manyHeaders["H\(number)-\"q\""] = "v\"\(number)\\" + strings[number % strings.count] }
        let long = String(repeating: strings.joined(), count: 400)
        writes += [
            write(request: DataRequest(method: "POST", path: "/rest/v1/notes", headers: manyHeaders, body: long)),
            write(request: DataRequest(method: "DELETE", path: "/", headers: [:], body: nil)),
            write(request: DataRequest(method: "PATCH", path: "/", headers: ["Prefer": "return=minimal"], body: "")),
            write(request: DataRequest(method: "DELETE", path: "/rest/v1/t?id=eq.1", noMatchPolicy: .ignoreNoMatch)),
            write(
                request: DataRequest(method: "PATCH", path: "/rest/v1/t?id=eq.1", body: "{}", noMatchPolicy: .reject)),
            QueuedWrite(
                id: "max", sequence: .max, request: DataRequest(method: "GET", path: "/"),
                queuedAt: QueueCoding.dateFrom(milliseconds: -62_135_596_800_000), attempts: .max, lastError: ""),
            QueuedWrite(
                id: "min", sequence: 0, request: DataRequest(method: "GET", path: "/"),
                queuedAt: QueueCoding.dateFrom(milliseconds: 253_402_300_799_999), attempts: .min),
        ]
        return writes
    }

    static func rejectedWrites(_ writes: [QueuedWrite]) -> [RejectedWrite] {
        writes.enumerated().map { index, write in
            RejectedWrite(
                write: write, status: [400, 0, -1, .max, .min][index % 5],
                message: hostileStrings[index % hostileStrings.count],
                rejectedAt: QueueCoding.dateFrom(milliseconds: 1_800_000_000_000 + Int64(index)),
                reason: [.refused, .noMatchingRow, .conflict, .serverWon][index % 4],
                serverRow: index % 3 == 0 ? nil : hostileStrings[(index + 2) % hostileStrings.count])
        }
    }

    static func write(
        request: DataRequest = DataRequest(method: "GET", path: "/"), queuedAt: Date = Date(timeIntervalSince1970: 0)
    ) -> QueuedWrite {
        QueuedWrite(id: "id", sequence: 1, request: request, queuedAt: queuedAt)
    }

    /// The text stores were written with before the hand-written codec: Foundation's encoder,
    /// configured as the queue configured it.
    static func foundationText(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Int64((date.timeIntervalSince1970 * 1_000).rounded()))
        }
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func foundationDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            QueueCoding.dateFrom(milliseconds: try decoder.singleValueContainer().decode(Int64.self))
        }
        return decoder
    }
}
