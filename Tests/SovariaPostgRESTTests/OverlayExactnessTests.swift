import Foundation
import SovariaQueue
import SovariaSync
import Testing

@testable import SovariaPostgREST

/// Issue 35, item 2: three answers the overlay called exact that PostgreSQL contradicts, each
/// found by a directed case against a real server. Each answer here is either PostgreSQL's own
/// (checked by hand against PostgreSQL 15) and exact, or inexact: never wrong and exact.
@Suite struct OverlayExactnessTests {
    /// An integer-keyed table, as the directed cases had: rows 1–5, all `qty = 1`.
    let overlay = PostgRESTOverlay(
        tables: ["items": .init(primaryKey: "id", columns: ["id", "name", "qty", "done", "rank"])], textOrder: .bytes)

    static let everyRow = (1...5).map { #"{"id":\#($0),"name":"n\#($0)","qty":1,"done":false,"rank":\#($0)}"# }

    func read(_ query: String) -> DataRequest { DataRequest(method: "GET", path: "/rest/v1/items?" + query) }

    func pending(_ requests: DataRequest...) -> [OverlayWrite] {
        requests.enumerated().map { OverlayWrite(id: "w\($0.offset + 1)", request: $0.element, isPending: true) }
    }

    /// The list screen, cached with `id,name` only: it holds every row, but not their `qty`.
    var listWithoutQty: RelatedAnswer {
        RelatedAnswer(
            read: read("select=id,name&order=id"),
            body: "[" + (1...5).map { #"{"id":\#($0),"name":"n\#($0)"}"# }.joined(separator: ",") + "]")
    }

    /// a. A full page that lost a row, refilled from a list that cannot say whether its rows match
    /// the filter: PostgreSQL answers rows 2 and 3; the overlay must not answer row 2 alone, exact.
    @Test func aFullPageIsNotRefilledExactlyFromAListThatLacksTheFilteredColumn() throws {
        let answer = overlay.answer(
            read("select=*&qty=eq.1&order=id&limit=2"),
            cachedBody: "[" + Self.everyRow[0] + "," + Self.everyRow[1] + "]",
            writes: pending(DataRequest(method: "DELETE", path: "/rest/v1/items?id=eq.1")),
            related: [listWithoutQty])
        #expect(!answer.isExact || answer.body == "[" + Self.everyRow[1] + "," + Self.everyRow[2] + "]", "\(answer)")
    }

    /// a, with a PATCH that takes row 1 out of the filter and a read that selects `id,name`.
    @Test func aPatchedFullPageIsNotRefilledExactlyFromAListThatLacksTheFilteredColumn() throws {
        let answer = overlay.answer(
            read("select=id,name&qty=eq.1&order=rank&limit=2"),
            cachedBody: #"[{"id":1,"name":"n1"},{"id":2,"name":"n2"}]"#,
            writes: pending(
                DataRequest(method: "PATCH", path: "/rest/v1/items?id=eq.1", body: #"{"qty":2}"#)),
            related: [listWithoutQty])
        #expect(!answer.isExact || answer.body == #"[{"id":2,"name":"n2"},{"id":3,"name":"n3"}]"#, "\(answer)")
    }

    /// b. A JSON string written to an integer column: PostgreSQL stores the number 10, which
    /// passes `qty=gt.3`.
    @Test func aStringWrittenToANumberColumnIsReadAsPostgreSQLReadsIt() throws {
        let answer = overlay.answer(
            read("select=*&qty=gt.3&order=id"), cachedBody: "[]",
            writes: pending(DataRequest(method: "PATCH", path: "/rest/v1/items?id=eq.1", body: #"{"qty":"10"}"#)),
            related: [
                RelatedAnswer(read: read("select=*&order=id"), body: "[" + Self.everyRow.joined(separator: ",") + "]")
            ])
        #expect(
            !answer.isExact || answer.body == #"[{"id":1,"name":"n1","qty":10,"done":false,"rank":1}]"#, "\(answer)")
        #expect(answer.body?.contains(#""qty":"10""#) != true || !answer.isExact, "PostgreSQL answers a number")
    }

    /// b, on a boolean column: `{"done":"true"}` stores `true`.
    @Test func aStringWrittenToABooleanColumnIsReadAsPostgreSQLReadsIt() throws {
        let answer = overlay.answer(
            read("select=*&done=eq.true&order=id"), cachedBody: "[]",
            writes: pending(DataRequest(method: "PATCH", path: "/rest/v1/items?id=eq.2", body: #"{"done":"true"}"#)),
            related: [
                RelatedAnswer(read: read("select=*&order=id"), body: "[" + Self.everyRow.joined(separator: ",") + "]")
            ])
        #expect(!answer.isExact || answer.body == #"[{"id":2,"name":"n2","qty":1,"done":true,"rank":2}]"#, "\(answer)")
    }

    /// b, a string PostgreSQL would refuse for the column: the write will be rejected, so the
    /// overlay cannot say what the row holds (inexact), and never shows the string.
    @Test func aStringANumberColumnRefusesMakesTheAnswerInexact() throws {
        let answer = overlay.answer(
            read("select=*&order=id"), cachedBody: "[" + Self.everyRow.joined(separator: ",") + "]",
            writes: pending(DataRequest(method: "PATCH", path: "/rest/v1/items?id=eq.1", body: #"{"qty":"ten"}"#)))
        #expect(!answer.isExact)
    }

    /// c. A key filter spelled with a leading zero: PostgreSQL reads `01` as 1, so the PATCH
    /// changes row 1.
    @Test func aKeyFilterWithALeadingZeroFindsItsRow() throws {
        let answer = overlay.answer(
            read("select=id,qty&order=id"), cachedBody: #"[{"id":1,"qty":1},{"id":2,"qty":1}]"#,
            writes: pending(DataRequest(method: "PATCH", path: "/rest/v1/items?id=eq.01", body: #"{"qty":7}"#)))
        #expect(!answer.isExact || answer.body == #"[{"id":1,"qty":7},{"id":2,"qty":1}]"#, "\(answer)")
        #expect(answer.body == #"[{"id":1,"qty":7},{"id":2,"qty":1}]"#, "the leading zero is read as PostgreSQL does")
    }

    /// c, an operand an integer column refuses (`1e0`, `1.0`): the server refuses the write, a
    /// numeric column would take it, so the overlay is not sure which row it changes.
    @Test func aKeyFilterWithAnExponentIsNotSure() throws {
        for operand in ["1e0", "1.0"] {
            let answer = overlay.answer(
                read("select=id,qty&order=id"), cachedBody: #"[{"id":1,"qty":1},{"id":2,"qty":1}]"#,
                writes: pending(
                    DataRequest(method: "PATCH", path: "/rest/v1/items?id=eq.\(operand)", body: #"{"qty":7}"#)))
            #expect(!answer.isExact, "\(operand): \(answer)")
        }
    }
}
