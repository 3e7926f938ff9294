import Foundation
import SovariaSync
import Testing

/// `RowJSON` reads through the shared lexer and must give what `JSONSerialization` gave: the
/// same rows, numbers spelled the `NSNumber` way in filters, the same server-row text.
@Suite struct RowJSONTests {
    /// The reading `RowJSON` did with `JSONSerialization`, kept here as the reference.
    static func foundationRows(_ body: String) -> [[String: Any]]? {
        guard let data = body.data(using: .utf8),
            let array = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [Any]
        else { return nil }
        var rows: [[String: Any]] = []
        for element in array {
            guard let row = element as? [String: Any] else { return nil }
            rows.append(row)
        }
        return rows
    }

    static let numbers = [
        "1", "1.0", "1.5", "1e3", "1E3", "-0", "-0.0", "0", "-7", "0.1", "2.5e-7", "1e-400", "1.7976931348623157e308",
        "123456789012345678", "-123456789012345678", "1234567890123456789", "-1234567890123456789",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "18446744073709551615", "18446744073709551616", "123456789012345678901234567890", "1.2345678901234567891",
        "3.14e2", "0.30000000000000004", "100000000000000000000e-2", "-5e-1",
    ]

    static let bodies: [String] =
        numbers.map { #"[{"id":1,"v":\#($0)}]"# } + [
            #"[{"s":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00\u0001","t":true,"f":false,"n":null}]"#,
            #"[{"nested":{"b":[1,{"c":2.50}],"a":{}},"B":1,"b":2,"a10":3,"a9":4,"é":5,"e":6}]"#,
            #"[ {"id" : "x/y" , "v" : [ ] } , { } ]"#,
            #"[{"id":1,"id":2}]"#,
            #"[{"id":1,},]"#,
            "\u{FEFF}[{\"id\":1}]",
            "[]", "[1]", "{}", "{\"id\":1}", "[{\"id\":1}] x", "[{\"id\":01}]", "[{\"id\":1e400}]", "[{\"id\":1.}]",
            #"[{"s":"\ud800"}]"#, "[{\"s\":\"a\u{1}\"}]", "", "nul", "[{\"a\":[[[[]]]]}]",
        ]

    @Test(arguments: bodies)
    func readsWhatJSONSerializationRead(body: String) {
        let expected = Self.foundationRows(body)
        let rows = RowJSON.rows(body)
        #expect((rows == nil) == (expected == nil), "\(body)")
        guard let rows, let expected else { return }
        #expect(rows.count == expected.count)
        for (row, reference) in zip(rows, expected) {
            #expect(RowJSON.text(row) == RowJSON.text(reference), "\(body)")
            #expect(row.keys.sorted() == reference.keys.sorted(), "\(body)")
            for key in reference.keys {
                #expect(RowJSON.filterText(row[key]) == RowJSON.filterText(reference[key]), "\(body) \(key)")
            }
        }
    }

    @Test func spellsNumbersTheNSNumberWay() throws {
        func filter(_ number: String) throws -> String? {
            RowJSON.filterText(try #require(RowJSON.rows(#"[{"v":\#(number)}]"#)?.first)["v"])
        }
        #expect(try filter("1") == "1")
        #expect(try filter("1.0") == "1")
        #expect(try filter("1.5") == "1.5")
        #expect(try filter("1e3") == "1000")
        #expect(try filter("-0") == "0")
        #expect(try filter("-0.0") == "0")
        #expect(try filter("9223372036854775807") == "9223372036854775807")
        #expect(try filter("18446744073709551615") == "18446744073709551615")
        #expect(try filter("2.5e-7") == "2.5e-07")
        #expect(try filter(#""a\"b""#) == "a\"b")
        #expect(try filter("true") == "1")
        #expect(try filter("null") == nil)
    }

    @Test func writesAServerRowWithSortedKeysAndFoundationsEscapes() throws {
        let row = try #require(RowJSON.rows(#"[{"b":"x/y","a":1.50,"c":{"z":[true,null]}}]"#)?.first)
        #expect(RowJSON.text(row) == #"{"a":1.5,"b":"x\/y","c":{"z":[true,null]}}"#)
    }

    @Test func refusesWhatIsNotAnArrayOfObjects() {
        #expect(RowJSON.rows("[1]") == nil)
        #expect(RowJSON.rows(#"{"id":1}"#) == nil)
        #expect(RowJSON.rows(#"[{"id":1}"#) == nil)
        #expect(RowJSON.rows("") == nil)
    }
}
