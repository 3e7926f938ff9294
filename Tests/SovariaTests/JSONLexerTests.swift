import SovariaPlumbing
import Testing

/// The shared JSON lexer on its own: each token kind, what it refuses and where it says so.
@Suite struct JSONLexerTests {
    /// Runs `body` over `text` and returns its result, or the failure it threw.
    static func lex<Value>(
        _ text: String, _ body: (inout JSONLexer) throws -> Value
    ) -> Result<Value, JSONLexer.Failure> {
        JSONLexer.withLexer(over: text) { lexer in
            do {
                return .success(try body(&lexer))
            } catch let failure as JSONLexer.Failure {
                return .failure(failure)
            } catch {
                Issue.record("not a JSONLexer.Failure: \(error)")
                return .failure(JSONLexer.Failure(offset: -1, problem: "\(error)"))
            }
        }
    }

    @Test func readsEveryEscapeAndJoinsSurrogatePairs() throws {
        let text = #""a\"b\\c\/d\be\ff\ng\rh\ti\u00e9\u00E9\ud83d\ude00 plain é""#
        let value = try Self.lex(text) { try $0.string() }.get()
        #expect(value == "a\"b\\c/d\u{8}e\u{C}f\ng\rh\ti\u{E9}\u{E9}\u{1F600} plain é")
    }

    @Test func aStringWithoutEscapesIsItsBytes() throws {
        #expect(try Self.lex(#""héllo wörld""#) { try $0.string() }.get() == "héllo wörld")
        #expect(try Self.lex(#""""#) { try $0.string() }.get() == "")
    }

    @Test(
        arguments: [
            (#""\ud800""#, 7, "a high surrogate without a low one"),
            (#""\ud800\u0041""#, 13, "a high surrogate without a low one"),
            (#""\udc00""#, 7, "a low surrogate without a high one"),
            (#""\x""#, 2, "unknown escape"),
            (#""\u12g4""#, 5, #"a \u escape needs four hex digits"#),
            ("\"a\u{1}\"", 2, "a control character must be escaped in a string"),
        ])
    func refusesBadStringsWithTheirOffset(text: String, offset: Int, problem: String) {
        let result = Self.lex(text) { try $0.string() }
        guard case .failure(let failure) = result else {
            Issue.record("\(text) was read")
            return
        }
        #expect(failure.offset == offset, "\(text)")
        #expect(failure.problem == problem, "\(text)")
    }

    /// Skipping a string (a key or a value `skipValue` passes over) refuses what reading it
    /// refuses, at the same byte and for the same reason, and ends where reading it ends.
    @Test(
        arguments: [
            #""\ud800""#, #""\ud800\u0041""#, #""\udc00""#, #""\x""#, #""\u12g4""#, "\"a\u{1}\"",
            #""a\"b\\c\/d\be\ff\ng\rh\ti\u00e9\ud83d\ude00 é""#, #""""#,
        ])
    func skippingAStringRefusesWhatReadingItRefuses(text: String) {
        let read = Self.lex(text) { lexer in
            _ = try lexer.string()
            return lexer.position
        }
        let skipped = Self.lex(text) { lexer in
            try lexer.skipString()
            return lexer.position
        }
        // The same string as a key and as a value of an object that `skipValue` passes over.
        let asKey = Self.lex("{" + text + ":1}") { try $0.skipValue(depth: 1, maxDepth: 4) }
        let asValue = Self.lex(#"{"k":"# + text + "}") { try $0.skipValue(depth: 1, maxDepth: 4) }
        switch (read, skipped) {
        case (.success(let end), .success(let skippedTo)):
            #expect(end == skippedTo, "\(text)")
            #expect((try? asKey.get()) != nil && (try? asValue.get()) != nil, "\(text)")
        case (.failure(let failure), .failure(let skipFailure)):
            #expect(failure.offset == skipFailure.offset && failure.problem == skipFailure.problem, "\(text)")
            for (result, shift) in [(asKey, 1), (asValue, 5)] {
                guard case .failure(let nested) = result else {
                    Issue.record("\(text) in an object was skipped")
                    continue
                }
                #expect(nested.offset == failure.offset + shift, "\(text): \(nested)")
                #expect(nested.problem == failure.problem, "\(text): \(nested)")
            }
        default:
            Issue.record("\(text): read \(read), skipped \(skipped)")
        }
    }

    @Test func aCutOffTextSaysSo() {
        guard case .failure(let skipped) = Self.lex(#""abc"#, { try $0.skipString() }) else {
            Issue.record("an open string was skipped")
            return
        }
        #expect(skipped.offset == 4 && skipped.problem == "the string does not end (the text ends)")
        guard case .failure(let failure) = Self.lex(#""abc"#, { try $0.string() }) else {
            Issue.record("an open string was read")
            return
        }
        #expect(failure.offset == 4)
        #expect(failure.problem == "the string does not end (the text ends)")
        #expect(failure.description == "invalid JSON at byte 4: the string does not end (the text ends)")
    }

    @Test(arguments: ["0", "-0", "7", "-12", "1.5", "0.25", "1e3", "1E+3", "2.5e-7", "-1.0e10"])
    func readsNumbersWhole(text: String) throws {
        let (range, end) = try Self.lex(text) { lexer in (try lexer.number().text, lexer.position) }.get()
        #expect(range == 0..<text.utf8.count)
        #expect(end == text.utf8.count)
    }

    @Test(arguments: ["01", "-", "1.", "1.e3", "1e", "1e+", "+1", ".5", "-a"])
    func refusesMalformedNumbers(text: String) {
        let result = Self.lex(text) { lexer in
            _ = try lexer.number()
            guard lexer.isAtEnd else { throw lexer.failure("text after the number") }
        }
        #expect(throws: JSONLexer.Failure.self, "\(text)") { try result.get() }
    }

    @Test func numbersAreIntegersOnlyWhenExact() throws {
        func integer(_ text: String) throws -> Int64? {
            try Self.lex(text) { lexer in try lexer.number().exactInteger(in: lexer.input, as: Int64.self) }.get()
        }
        #expect(try integer("7") == 7)
        #expect(try integer("7.0") == 7)
        #expect(try integer("70e-1") == 7)
        #expect(try integer("-0") == 0)
        #expect(try integer("-9223372036854775808") == .min)
        #expect(try integer("9223372036854775808") == nil)
        #expect(try integer("1.5") == nil)
        #expect(try integer("1e400") == nil)
    }

    @Test func skipsAnyValueAndRefusesDeepNesting() throws {
        let value = #" {"a": [1, -2.5e3, "x\"y", {"b": null}, true, false, []], "c": {}} "#
        let end = try Self.lex(value) { lexer in
            try lexer.skipValue(depth: 1, maxDepth: 4)
            lexer.skipWhitespace()
            return lexer.isAtEnd
        }.get()
        #expect(end)
        let deep = String(repeating: "[", count: 5) + String(repeating: "]", count: 5)
        #expect(throws: JSONLexer.Failure.self) { try Self.lex(deep) { try $0.skipValue(depth: 1, maxDepth: 4) }.get() }
        #expect(throws: Never.self) { try Self.lex(deep) { try $0.skipValue(depth: 1, maxDepth: 5) }.get() }
    }

    @Test func objectsAndArraysStepByMember() throws {
        let pairs = try Self.lex(#"{ "a" : 1 , "b":[ 2 , 3 ] }"#) { lexer -> [String] in
            var keys: [String] = []
            guard try !lexer.beginObject() else { return keys }
            repeat {
                keys.append(try lexer.key())
                try lexer.skipValue(depth: 1, maxDepth: 8)
            } while try !lexer.endOfMember()
            return keys
        }.get()
        #expect(pairs == ["a", "b"])
        #expect(throws: JSONLexer.Failure.self) {
            try Self.lex(#"{"a" 1}"#) {
                _ = try $0.beginObject(); _ = try $0.key()
            }.get()
        }
        #expect(throws: JSONLexer.Failure.self) {
            try Self.lex("[1 2]") { lexer in
                _ = try lexer.beginArray()
                _ = try lexer.number()
                _ = try lexer.endOfElement()
            }.get()
        }
    }

    /// A key matched by its bytes steps over it and its `:` as `key()` does; any other spelling,
    /// a key a byte longer or shorter, or text that is no key leaves the lexer where it was.
    @Test(
        arguments: [
            (#" "id" : 1"#, "id", true), (#""id":1"#, "id", true), (#""":1"#, "", true),
            (#""caf\#u{E9}":1"#, "caf\u{E9}", true), (#""\u0069d":1"#, "id", false), (#""idx":1"#, "id", false),
            (#""i":1"#, "id", false), (#""id" 1"#, "id", false), (#""id"#, "id", false), ("1", "id", false),
            ("\"a\u{1}\":1", "a\u{1}", false), (#""a\"b":1"#, "a\"b", false), (#""a\\b":1"#, "a\\b", false),
        ])
    func aKeyIsMatchedByItsBytesOrNotReadAtAll(text: String, expected: String, matches: Bool) throws {
        let (matched, position, valueStart) = try Self.lex(text) { lexer in
            let matched = lexer.keyIfWritten(as: expected)
            let position = lexer.position
            // Where `key()` leaves the lexer, when it reads a key at all.
            lexer.position = 0
            let valueStart = (try? lexer.key()).map { _ in lexer.position }
            return (matched, position, valueStart)
        }.get()
        #expect(matched == matches)
        #expect(position == (matches ? valueStart : 0))
    }

    @Test func everyPrefixOfAValueFailsWithoutTrapping() {
        let value = #"{"k":["é\n",-1.5e-3,{"n":null,"t":true,"f":false}],"u":"\ud83d\ude00"}"#
        let bytes = Array(value.utf8)
        for length in 0..<bytes.count {
            let prefix = String(decoding: bytes[..<length], as: UTF8.self)
            let result = Self.lex(prefix) { lexer in
                try lexer.skipValue(depth: 1, maxDepth: 8)
                guard lexer.isAtEnd else { throw lexer.failure("text after the value") }
            }
            #expect(throws: JSONLexer.Failure.self, "\(length) bytes") { try result.get() }
        }
        #expect(throws: Never.self) { try Self.lex(value) { try $0.skipValue(depth: 1, maxDepth: 8) }.get() }
    }
}
