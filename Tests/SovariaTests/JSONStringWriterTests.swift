import Foundation
import SovariaPlumbing
import Testing

/// The one JSON string writer: what it escapes, what it leaves as bytes, and that the shared lexer
/// and Foundation read back what it wrote.
@Suite struct JSONStringWriterTests {
    static func written(_ value: String) -> String {
        var bytes: [UInt8] = []
        JSONStringWriter.append(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func escapesQuotesBackslashesAndControlCharactersOnly() {
        #expect(Self.written(#"a"b\c/d é 😀"#) == #""a\"b\\c/d é 😀""#)
        #expect(Self.written("\u{8}\u{9}\u{A}\u{C}\u{D}") == #""\b\t\n\f\r""#)
        #expect(Self.written("\u{0}\u{1}\u{1F}") == #""\u0000\u0001\u001f""#)
        #expect(Self.written("") == #""""#)
    }

    @Test func everyControlCharacterReadsBackThroughTheLexerAndFoundation() throws {
        let value = String(String.UnicodeScalarView((0..<0x20).map { Unicode.Scalar(UInt8($0)) })) + "\"\\ plain é"
        let text = Self.written(value)
        let lexed = try JSONLexer.withLexer(over: text) { try $0.string() }
        #expect(lexed == value)
        let decoded = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed) as? String
        #expect(decoded == value)
    }
}
