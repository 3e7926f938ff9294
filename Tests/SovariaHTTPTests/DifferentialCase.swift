import Foundation
import SovariaQueue
import SovariaTestKit

@testable import SovariaPostgREST

/// One case of the overlay's differential test: the rows the server starts with, the reads
/// cached online, the writes made offline. Values are drawn so that text, integers, booleans
/// and nulls all meet every operator, and writes stay within what the table accepts (a refused
/// write is counted, not compared).
struct DifferentialCase {
    let index: Int
    let seedJSON: String
    let reads: [DataRequest]
    let writes: [DataRequest]

    static let columns = ["id", "name", "qty", "active", "note", "rank"]
    static let names = ["apple", "Banana", "cherry", "apple pie", "Éclair", "date", "b", "fig"]
    static let notes = ["x", "Zed", "note", "ripe"]

    static func generate(index: Int, withListScreen: Bool, using random: inout SplitMix) -> DifferentialCase {
        var generator = Generator(random: random)
        let rowCount = Int.random(in: 4...12, using: &generator.random)
        generator.ids = (0..<rowCount).map { "i" + String(format: "%02d", $0) }
        let seed = generator.ids.map { generator.row(id: $0, columns: columns) }
        // The first read is an app's list screen, every row, as most apps have one; the others
        // are random views. Two lists in nine leave out a column or two: they hold every row, but
        // not everything the other reads filter on (issue 35).
        let listColumns = generator.pick(
            ["*", "*", "*", "*", "*", "*", "*", "id,name,qty,active,note", "id,name,active,rank"])
        let list = DataRequest(method: "GET", path: "/rest/v1/items?select=\(listColumns)&order=id")
        var reads = (withListScreen ? [list] : [generator.read()]) + (0..<3).map { _ in generator.read() }
        // Two reads of four ask for a count (none with an offset: PostgREST refuses a counted page
        // past its rows), chosen without a draw so that every case keeps its rows and writes.
        for index in [1, 3] where !reads[index].path.contains("offset=") {
            reads[index].setHeader("Prefer", "count=exact")
        }
        let writes = (0..<Int.random(in: 1...5, using: &generator.random)).map { generator.write(number: $0) }
        random = generator.random
        return DifferentialCase(
            index: index, seedJSON: "[" + seed.joined(separator: ",") + "]", reads: reads, writes: writes)
    }

    private struct Generator {
        var random: SplitMix
        var ids: [String] = []
        var fresh = 0

        mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }
        mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &random)] }

        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }

        /// A JSON value for `column`, as the table takes it.
        mutating func value(_ column: String) -> String {
            switch column {
            case "name": quoted(pick(DifferentialCase.names))
            case "qty": String(Int.random(in: -3...12, using: &random))
            case "active": chance(50) ? "true" : "false"
            case "note": chance(35) ? "null" : quoted(pick(DifferentialCase.notes))
            default: chance(40) ? "null" : String(Int.random(in: -2...5, using: &random))  // rank
            }
        }

        /// A value a write sends for `column`: mostly as the table takes it, sometimes a number or
        /// a boolean as a JSON string, which PostgreSQL reads as the column's type (`"07"` is 7,
        /// `"t"` is true).
        mutating func writtenValue(_ column: String) -> String {
            guard (column == "qty" || column == "active"), chance(12) else { return value(column) }
            if column == "active" { return quoted(pick(["true", "false", "t", "f", "yes"])) }
            let number = Int.random(in: 0...12, using: &random)
            return quoted(chance(50) ? String(number) : "0" + String(number))
        }

        /// A row object setting `columns` (the id first); `written`: values as a write sends them.
        mutating func row(id: String, columns: [String], written: Bool = false) -> String {
            var fields = [#""id":"# + quoted(id)]
            for column in columns where column != "id" {
                fields.append(quoted(column) + ":" + (written ? writtenValue(column) : value(column)))
            }
            return "{" + fields.joined(separator: ",") + "}"
        }

        /// A whole number as an operand: sometimes with a leading zero, as PostgreSQL reads it too.
        mutating func spelled(_ number: Int) -> String {
            guard chance(15) else { return String(number) }
            return number < 0 ? "-0" + String(-number) : "0" + String(number)
        }

        /// A filter PostgREST reads, with operands that meet the seeded values.
        mutating func filter() -> String {
            let negate = chance(10) ? "not." : ""
            switch pick(["id", "name", "qty", "qty", "active", "note", "rank"]) {
            case "id":
                switch Int.random(in: 0..<3, using: &random) {
                case 0: return "id=\(negate)eq.\(pick(ids))"
                case 1: return "id=\(negate)in.(\(pick(ids)),\(pick(ids)))"
                default: return "id=\(negate)gt.\(pick(ids))"
                }
            case "name":
                switch Int.random(in: 0..<5, using: &random) {
                case 0: return "name=\(negate)eq.\(pick(DifferentialCase.names))"
                case 1: return "name=\(negate)like.*a*"
                case 2: return "name=\(negate)ilike.B*"
                case 3: return "name=\(negate)gt.c"
                default: return "name=\(negate)in.(apple,\"apple pie\",fig)"
                }
            case "qty":
                let op = pick(["eq", "neq", "gt", "gte", "lt", "lte"])
                return "qty=\(negate)\(op).\(spelled(Int.random(in: -1...8, using: &random)))"
            case "active": return "active=\(negate)" + pick(["eq.true", "eq.false", "is.true", "is.false"])
            case "note": return "note=\(negate)" + pick(["is.null", "eq.x", "neq.x", "in.(x,ripe)"])
            default: return "rank=\(negate)" + pick(["is.null", "gt.0", "lt.3", "eq.2", "gte.-1", "eq.02", "lt.03"])
            }
        }

        /// `column=condition` as a query item, the condition percent-encoded as the builders do.
        func item(_ filter: String) -> String {
            let parts = filter.split(separator: "=", maxSplits: 1).map(String.init)
            return parts[0] + "=" + PostgREST.encode(parts[1])
        }

        /// A read as apps write them: most select every column (`*`), the others the columns they
        /// filter and order on, and a few not all of them (those answers are inexact whenever a
        /// write moves a row); one in fifty has an offset.
        mutating func read() -> DataRequest {
            let filters = (0..<Int.random(in: 0...2, using: &random)).map { _ in filter() }
            var order: [String] = []
            var ordered = false
            if chance(65) {
                for _ in 0..<Int.random(in: 1...2, using: &random) {
                    var term = pick(["name", "qty", "rank", "note", "active"])
                    if chance(40) { term += ".desc" }
                    if chance(25) { term += pick([".nullsfirst", ".nullslast"]) }
                    order.append(term)
                }
                if chance(85) {
                    order.append(chance(30) ? "id.desc" : "id")
                    ordered = true
                }
            }
            var selected = ["*"]
            if chance(25) {
                let used = Set(
                    filters.map { String($0.prefix { $0 != "=" }) } + order.map { String($0.prefix { $0 != "." }) })
                selected = DifferentialCase.columns.filter { column in
                    column == "id" || (used.contains(column) && chance(95)) || chance(40)
                }
                if chance(5) { selected.removeFirst() }
                if selected.isEmpty { selected = ["name"] }
            }
            var query = ["select=" + selected.joined(separator: ",")] + filters.map(item)
            if !order.isEmpty { query.append("order=" + order.joined(separator: ",")) }
            if ordered, chance(40) { query.append("limit=\(Int.random(in: 2...6, using: &random))") }
            if ordered, chance(2) { query.append("offset=1") }
            return DataRequest(method: "GET", path: "/rest/v1/items?" + query.joined(separator: "&"))
        }

        mutating func write(number: Int) -> DataRequest {
            let roll = Int.random(in: 0..<100, using: &random)
            let settable = ["name", "qty", "active", "note", "rank"]
            if roll < 35 {
                fresh += 1
                let id = "n\(fresh)"
                let columns = chance(60) ? DifferentialCase.columns : ["name"] + settable.filter { _ in chance(40) }
                let object = row(id: id, columns: Array(Set(columns)).sorted(), written: true)
                ids.append(id)
                return PostgREST.insert(into: "items", json: object, returning: false)
            }
            if roll < 55 {
                let known = chance(85)
                let id: String
                if known {
                    id = pick(ids)
                } else {
                    fresh += 1
                    id = "n\(fresh)"
                    ids.append(id)
                }
                // Most upserts send whole rows (a Codable value encodes every field); one always
                // sets `name`: the row it proposes must pass NOT NULL first.
                let columns = known && chance(15) ? ["name"] + settable.filter { _ in chance(40) } : settable
                return PostgREST.insert(
                    into: "items", json: row(id: id, columns: Array(Set(columns)).sorted(), written: true),
                    returning: false, upsert: true)
            }
            let path = "/rest/v1/items?" + item(chance(75) ? "id=eq.\(pick(ids))" : filter())
            if roll < 80 {
                var changes: [String] = []
                for column in settable where chance(35) {
                    changes.append(quoted(column) + ":" + writtenValue(column))
                }
                if changes.isEmpty { changes.append(#""qty":"# + writtenValue("qty")) }
                return DataRequest(
                    method: "PATCH", path: path, headers: ["Prefer": "return=minimal"],
                    body: "{" + changes.joined(separator: ",") + "}")
            }
            return DataRequest(method: "DELETE", path: path, headers: ["Prefer": "return=minimal"])
        }
    }
}
