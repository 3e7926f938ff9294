import Foundation
import SovariaPostgREST
import SovariaQueue
import SovariaSync

extension LocalFirstSection {
    /// Issue 61's cost of the read shapes the overlay now answers: an `or=` of three branches and
    /// a singular read (`Accept: application/vnd.pgrst.object+json`, supabase's `.single()`),
    /// each against the plain `eq` read of the same rows, all evaluated cold from the text over
    /// the 1,000-row list as a related answer, with 10 pending writes; the calls take turns.
    func measureReadShapes(stopwatch: Stopwatch, calls: Int) async throws -> [Measurement] {
        let section = BenchSection.localFirst.rawValue
        let related = [RelatedAnswer(read: Self.list, body: Self.body)]
        let writes = (0..<10).map { OverlayWrite(id: "w\($0)", request: Self.write($0), isPending: true) }
        // The columns named: with nothing cached, `*` names no column the overlay knows.
        let columns = "id,name,qty,note"
        var single = PostgREST.select("items", columns: columns, where: [.eq("id", "r00500")])
        single.setHeader("Accept", "application/vnd.pgrst.object+json")
        let reads: [(name: String, read: DataRequest)] = [
            ("eq (the baseline)", PostgREST.select("items", columns: columns, where: [.eq("qty", "5")], order: "id")),
            (
                "or= of 3 branches",
                DataRequest(
                    method: "GET",
                    path: "/rest/v1/items?select=\(columns)&or=(qty.eq.5,qty.eq.6,name.eq.Item%207)&order=id")
            ),
            ("singular (object)", single),
        ]
        for (name, read) in reads {
            let answer = Self.overlay.answer(read, cachedBody: nil, writes: writes, related: related)
            guard answer.isExact, answer.body != nil else {
                throw BenchError.failed("\(name): not exact over the related answer (\(answer.inexactReasons))")
            }
        }
        var samples: [[Double]] = Array(repeating: [], count: reads.count)
        let blocks = max(20, calls / 5)
        for _ in 0..<blocks {
            for (which, entry) in reads.enumerated() {
                let start = Stopwatch.now()
                for _ in 0..<5 {
                    _ = Self.overlay.answer(entry.read, cachedBody: nil, writes: writes, related: related)
                }
                samples[which].append(Double(Stopwatch.now() - start) / 5)
            }
        }
        var rows = reads.indices.map { which in
            Sample(
                perItemNanoseconds: [samples[which].reduce(0, +) / Double(samples[which].count)],
                callLatencies: samples[which]
            )
            .measurement(
                section: section, subject: "overlay", variant: "1,000 rows related, 10 pending",
                operation: "evaluate: " + reads[which].name)
        }
        for which in rows.indices.dropFirst() {
            rows[which].ratio = rows[which].p50Nanoseconds / max(1, rows[0].p50Nanoseconds)
            rows[which].baseline = "the eq read, taking turns"
            rows[which].note = "goal: at most 1.5x"
        }
        return rows
    }
}
