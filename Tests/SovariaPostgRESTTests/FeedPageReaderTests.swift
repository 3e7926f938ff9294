import Foundation
import SovariaSync
import SovariaTestKit
import Testing

@testable import SovariaPostgREST

/// A feed page read off its bytes: the fields a general parse of the same text gives, each row
/// kept as the server wrote it, and every page that is not an array of changes refused, typed.
@Suite struct FeedPageReaderTests {
    @Test func readsEachChangeAndKeepsItsRowAsWritten() throws {
        let body = """
            [ {"p":5,"k":"a","o":"upsert","r":{ "id" : "a", "t":"caf\\u00e9" }},
              {"position":6,"key":"b","op":"delete","row":null},
              {"o":"trimmed","p":7} ]
            """
        let page = try FeedPageReader.read(body, table: "notes")
        #expect(
            page.changes == [
                RowChange(
                    position: 5, table: "notes", key: "a", operation: .upsert(row: #"{ "id" : "a", "t":"caf\u00e9" }"#)),
                RowChange(position: 6, table: "notes", key: "b", operation: .delete),
            ])
        #expect(page.last == 7 && page.mustRefetch && page.count == 3)
        let empty = try FeedPageReader.read(" [ ] ", table: "notes")
        #expect(empty.changes.isEmpty && empty.last == nil && !empty.mustRefetch && empty.count == 0)
    }

    /// A position is any integer `Int64` holds, read from its digits as `Int64(_:)` reads them.
    @Test(arguments: [
        ("9223372036854775807", Int64.max), ("-9223372036854775808", Int64.min), ("-0", 0), ("0", 0), ("42", 42),
        ("-42", -42),
    ])
    func aPositionIsAnyInt64(text: String, position: Int64) throws {
        let page = try FeedPageReader.read(#"[{"p":\#(text),"k":"a","o":"delete"}]"#, table: "notes")
        #expect(page.changes.map(\.position) == [position] && page.last == position)
        #expect(Int64(text) == position)
    }

    /// The request's one-letter name wins over the column's own, whichever comes first; of one
    /// name, the last one met counts (as in a parsed object); a table named is kept.
    @Test func theOneLetterNameIsPreferredAndTheLastOfANameCounts() throws {
        let body = """
            [{"position":1,"p":2,"key":"x","k":"y","op":"delete","o":"upsert","row":{"a":1},"r":{"b":2},"r":{"c":3},\
            "table":"other","extra":{"deep":[1,{"two":null}]}}]
            """
        let page = try FeedPageReader.read(body, table: "notes")
        #expect(
            page.changes == [RowChange(position: 2, table: "other", key: "y", operation: .upsert(row: #"{"c":3}"#))])
    }

    @Test(arguments: [
        ("", "no JSON"), ("{}", "an object"), ("[1,", "a cut-off array"), ("[] x", "text after the array"),
        ("[7]", "an element that is not an object"), (#"[{"k":"a","o":"delete"}]"#, "no position"),
        (#"[{"p":1.5,"k":"a","o":"delete"}]"#, "a position with a fraction"),
        (#"[{"p":1e3,"k":"a","o":"delete"}]"#, "a position with an exponent"),
        (#"[{"p":"7","k":"a","o":"delete"}]"#, "a position as a string"),
        (#"[{"p":null,"position":7,"k":"a","o":"delete"}]"#, "a null position before a good one"),
        (#"[{"p":9223372036854775808,"k":"a","o":"delete"}]"#, "a position past Int64"),
        (#"[{"p":-9223372036854775809,"k":"a","o":"delete"}]"#, "a position before Int64"),
        (#"[{"p":1,"k":"a"}]"#, "no op"), (#"[{"p":1,"o":"delete"}]"#, "no key"),
        (#"[{"p":1,"k":7,"o":"delete"}]"#, "a key that is not a string"),
        (#"[{"p":1,"k":"a","o":"merge"}]"#, "an unknown op"),
        (#"[{"p":1,"k":"a","o":"upsert"}]"#, "an upsert without a row"),
        (#"[{"p":1,"k":"a","o":"upsert","r":null}]"#, "an upsert whose row is null"),
        (#"[{"p":1,"k":"a","o":"upsert","r":"{}"}]"#, "an upsert whose row is a string"),
        (#"[{"p":1,"k":"a","o":"upsert","r":[{}]}]"#, "an upsert whose row is an array"),
        (#"[{"p":1,"k":"a","o":"upsert","r":{"id":a}}]"#, "a row that is not JSON"),
        (#"[{"p":1,"k":"a","o":"delete","table":3}]"#, "a table that is not a string"),
        (#"[{"p":1,"k":"a","o":"delete"},{"p":2,"k":"b","o":"delete","x":tru}]"#, "a later element not JSON"),
    ])
    func aPageThatIsNotAnArrayOfChangesIsATypedError(body: String, why: String) {
        do {
            let page = try FeedPageReader.read(body, table: "notes")
            Issue.record("\(why): read as \(page.changes)")
        } catch let error as ChangeFeedError {
            #expect(error.code == .malformedChange && error.table == "notes", "\(why): \(error)")
        } catch {
            Issue.record("\(why): not a ChangeFeedError: \(error)")
        }
    }

    /// A value nests as deep as the overlay's parser reads one (a member's innermost value at
    /// depth 511), a row as deep as the feed's reader always validated it (512): one level more
    /// refuses the page.
    @Test func aValueNestedPastTheParsersDepthRefusesThePage() throws {
        func nested(_ count: Int) -> String {
            String(repeating: "[", count: count) + String(repeating: "]", count: count)
        }
        let member = { (count: Int) in #"[{"p":1,"k":"a","o":"delete","x":\#(nested(count))}]"# }
        let row = { (count: Int) in #"[{"p":1,"k":"a","o":"upsert","r":{"a":\#(nested(count))}}]"# }
        #expect(try FeedPageReader.read(member(510), table: "notes").changes.count == 1)
        #expect(throws: ChangeFeedError.self) { try FeedPageReader.read(member(511), table: "notes") }
        #expect(try FeedPageReader.read(row(510), table: "notes").changes.count == 1)
        #expect(throws: ChangeFeedError.self) { try FeedPageReader.read(row(511), table: "notes") }
        // Not an object: a value as deep refuses the page too.
        #expect(throws: ChangeFeedError.self) { try FeedPageReader.read("[" + nested(511) + "]", table: "notes") }
    }

    /// Random pages, their members in any order, spelled either way, repeated, with members the
    /// feed does not name and space anywhere: the reader finds what a general parse of the same
    /// text finds (`p` before `position`, the last of one name), rows included.
    @Test(arguments: 0..<8)
    func randomPagesReadAsTheirGeneralParse(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        for _ in 0..<40 {
            var elements: [String] = []
            for element in 0..<Int(random.next() % 6) {
                var members: [String] = []
                members.append(#""\#(random.pick(["p", "position"]))":\#(element + 1)"#)
                members.append(#""\#(random.pick(["k", "key"]))":"k\#(random.next() % 9)""#)
                let op = random.pick(["upsert", "delete", "upsert", "delete", "trimmed"])
                members.append(#""\#(random.pick(["o", "op"]))":"\#(op)""#)
                if op == "upsert" || random.next() % 2 == 0 {
                    let row = #"{"id":"k\#(random.next() % 9)",\#(random.pick([" ", ""]))"n":\#(random.next() % 99)}"#
                    members.append(#""\#(random.pick(["r", "row"]))":\#(row)"#)
                }
                if random.next() % 4 == 0 {
                    members.append(#""\#(random.pick(["p", "k", "r", "extra"]))":\#(members.count)"#)
                }
                if random.next() % 4 == 0 { members.append(#""extra":{"a":[1,"p"]}"#) }
                if random.next() % 5 == 0 { members.append(#""table":"t\#(random.next() % 3)""#) }
                // Any order, the earlier repeated names kept before the later ones they may replace.
                let order = random.next() % 2 == 0 ? members : members.reversed()
                let space = random.pick(["", " ", "\n  "])
                elements.append("{" + space + order.joined(separator: "," + space) + space + "}")
            }
            let body = "[" + elements.joined(separator: ", ") + "]"
            let expected = try Self.generalRead(body, table: "notes")
            switch expected {
            case .success(let (changes, last, mustRefetch)):
                let page = try FeedPageReader.read(body, table: "notes")
                #expect(page.count == elements.count, "\(body)")
                #expect(page.last == last && page.mustRefetch == mustRefetch, "\(body)")
                #expect(page.changes.count == changes.count, "\(body)")
                for (read, general) in zip(page.changes, changes) {
                    #expect(read.position == general.position && read.key == general.key, "\(body)")
                    #expect(read.table == general.table && read.operation.isDelete == general.row.isNil, "\(body)")
                    if case .upsert(let row) = read.operation, let expectedRow = general.row {
                        #expect(try JSONParser.parse(row).isIdentical(to: expectedRow), "\(body)")
                    }
                }
            case .failure:
                #expect(throws: ChangeFeedError.self, "\(body)") { try FeedPageReader.read(body, table: "notes") }
            }
        }
    }

    /// A change as a general parse of the page gives it.
    struct GeneralChange {
        var position: Int64
        var table: String
        var key: String
        var row: JSONValue?
    }

    /// The changes of `body` read with the overlay's general parser, each field by its
    /// one-letter name or else its own; a failure where an element is not a change.
    static func generalRead(
        _ body: String, table: String
    ) throws -> Result<(changes: [GeneralChange], last: Int64?, mustRefetch: Bool), Failure> {
        guard case .array(let items) = try JSONParser.parse(body) else { return .failure(Failure()) }
        var changes: [GeneralChange] = []
        var (last, mustRefetch): (Int64?, Bool) = (nil, false)
        for item in items {
            guard case .object(let object) = item,
                case .number(let number)? = object["p"] ?? object["position"], let position = Int64(number),
                case .string(let op)? = object["o"] ?? object["op"]
            else { return .failure(Failure()) }
            last = position
            if op == "trimmed" {
                mustRefetch = true
                continue
            }
            guard case .string(let key)? = object["k"] ?? object["key"] else { return .failure(Failure()) }
            var named = table
            if let value = object["table"] {
                guard case .string(let text) = value else { return .failure(Failure()) }
                named = text
            }
            switch op {
            case "delete": changes.append(GeneralChange(position: position, table: named, key: key, row: nil))
            case "upsert":
                guard case .object? = object["r"] ?? object["row"] else { return .failure(Failure()) }
                changes.append(
                    GeneralChange(position: position, table: named, key: key, row: object["r"] ?? object["row"]))
            default: return .failure(Failure())
            }
        }
        return .success((changes, last, mustRefetch))
    }

    struct Failure: Error {}

}

extension SplitMix {
    /// One of `choices`, at random.
    fileprivate mutating func pick<T>(_ choices: [T]) -> T { choices[Int(next() % UInt64(choices.count))] }
}

extension RowChange.Operation {
    fileprivate var isDelete: Bool { if case .delete = self { true } else { false } }
}

extension Optional {
    fileprivate var isNil: Bool { self == nil }
}
