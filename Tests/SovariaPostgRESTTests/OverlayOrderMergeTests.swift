import Foundation
import SovariaQueue
@_spi(Diagnostics) import SovariaSync
import SovariaTestKit
import Testing

@testable import SovariaPostgREST

/// Rows a write moved are merged into the cached order instead of sorting every row: on
/// generated answers, orders (descending, nulls first or last, two columns) and writes (inserts,
/// patches of order columns, deletes, values of another kind, missing columns), the merged
/// answer is the sorted one: body, reasons, pending rows.
@Suite struct OverlayOrderMergeTests {
    static let overlay = PostgRESTOverlay(
        tables: ["items": .init(primaryKey: "id", defaults: ["a": "null", "b": "null"])], textOrder: .bytes)
    static let orders = ["a", "a.desc", "a.nullsfirst", "b,a", "a.desc.nullslast,id", "b.desc,id", "id"]

    @Test func mergingMovedRowsGivesTheSortedAnswer() throws {
        var random = SplitMix(seed: 40)
        var merged = 0
        for index in 0..<400 {
            let order = Self.orders[index % Self.orders.count]
            let read = DataRequest(method: "GET", path: "/rest/v1/items?select=id,a,b&order=\(order)")
            let seeds = (0..<Int.random(in: 0...30, using: &random)).map { Self.row("k\($0)", using: &random) }
            // The cached answer in the read's order: the overlay's own sort of the seed rows.
            let inserts = seeds.enumerated().map {
                OverlayWrite(id: "s\($0.offset)", request: $0.element, isPending: false)
            }
            let cached = Self.overlay.answer(read, cachedBody: nil, writes: inserts).body ?? "[]"
            let writes = (0..<Int.random(in: 1...8, using: &random)).map { number in
                OverlayWrite(id: "w\(number)", request: Self.write(seeds: seeds.count, using: &random), isPending: true)
            }
            let merging = Self.overlay.cachedAnswer(of: read, cachedBody: cached, related: [])
            let sorting = Self.overlay.cachedAnswer(of: read, cachedBody: cached, related: [], mergesMovedRows: false)
            let byMerge = merging.answer(writes: writes)
            let bySort = sorting.answer(writes: writes)
            #expect(byMerge == bySort, "case \(index), order=\(order)\n  cached: \(cached)\n  writes: \(writes)")
            if merging.cachedRowsFollowOrder { merged += 1 }
        }
        #expect(merged > 200, "most cases take the merge")
    }

    /// A session fed the writes one at a time answers, after each, what a fresh evaluation of
    /// the same cached answer and writes answers; most answers are derived from the last one.
    @Test func aSessionAnswersAsAFreshEvaluationAfterEachWrite() throws {
        var random = SplitMix(seed: 41)
        let filters = ["", "&a=gte.2", "&b=eq.x", "&a=is.null", "&b=in.(x,w)"]
        var updated = 0
        for index in 0..<400 {
            let order = index % 3 == 0 ? "" : "&order=" + Self.orders[index % Self.orders.count]
            let path = "/rest/v1/items?select=id,a,b" + filters[index % filters.count] + order
            let read = DataRequest(method: "GET", path: path)
            let seeds = (0..<Int.random(in: 0...30, using: &random)).map { Self.row("k\($0)", using: &random) }
            // The cached answer: the overlay's own evaluation of the seed rows inserted into an
            // empty table.
            let inserts = seeds.enumerated().map {
                OverlayWrite(id: "s\($0.offset)", request: $0.element, isPending: false)
            }
            let cached = Self.overlay.answer(read, cachedBody: "[]", writes: inserts).body ?? "[]"
            let writes = (0..<Int.random(in: 1...10, using: &random)).map { number in
                OverlayWrite(id: "w\(number)", request: Self.write(seeds: seeds.count, using: &random), isPending: true)
            }
            let session = Self.overlay.session(read, cachedBody: cached, related: [])
            for count in 1...writes.count {
                let applied = Array(writes.prefix(count))
                let fresh = Self.overlay.answer(read, cachedBody: cached, writes: applied)
                #expect(
                    session.answer(writes: applied) == fresh,
                    "case \(index), \(path), \(count) writes\n  cached: \(cached)\n  writes: \(applied)")
            }
            updated += session.paths.updated
        }
        #expect(updated > 1_000, "most answers derived from the last one")
    }

    /// A seed row: `a` a small number or null, `b` a short text or null (sometimes a number: a
    /// column of two kinds, which no order can merge).
    static func row(_ id: String, using random: inout SplitMix) -> DataRequest {
        PostgREST.insert(into: "items", json: #"{"id":"\#(id)","a":\#(number(&random)),"b":\#(text(&random))}"#)
    }

    static func number(_ random: inout SplitMix) -> String {
        Int.random(in: 0..<5, using: &random) == 0 ? "null" : String(Int.random(in: 0..<6, using: &random))
    }

    static func text(_ random: inout SplitMix) -> String {
        switch Int.random(in: 0..<200, using: &random) {
        case 0..<30: "null"
        case 30: "7"
        // None reads as a number or a boolean ("y" would): the column stays one of text.
        default: #""\#(["x", "w", "z", "xw", "W", "é"].randomElement(using: &random)!)""#
        }
    }

    static func write(seeds: Int, using random: inout SplitMix) -> DataRequest {
        let target = "k\(Int.random(in: 0..<max(1, seeds), using: &random))"
        switch Int.random(in: 0..<6, using: &random) {
        case 0, 1: return row("n\(Int.random(in: 0..<1_000, using: &random))", using: &random)
        case 2: return PostgREST.update("items", where: [.eq("id", target)], json: #"{"a":\#(number(&random))}"#)
        case 3: return PostgREST.update("items", where: [.eq("id", target)], json: #"{"b":\#(text(&random))}"#)
        case 4: return PostgREST.insert(into: "items", json: #"{"id":"m\#(Int.random(in: 0..<99, using: &random))"}"#)
        default: return PostgREST.delete(from: "items", where: [.eq("id", target)])
        }
    }
}
