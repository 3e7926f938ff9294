import Foundation
import SovariaPostgREST
import SovariaQueue
import Testing

@testable import SovariaSync

/// An evaluator that implements only ``OverlayEvaluator/answer(_:cachedBody:writes:related:)``
/// (an app on another API): the controller serves its local-first reads through the default
/// session, keeps the answer while nothing changes, and asks afresh when the writes change.
@Suite struct OverlayEvaluatorTests {
    /// Answers the cached body followed by the ids of the writes, and records each call's writes.
    struct ListingEvaluator: OverlayEvaluator {
        let calls = Recorder<[String]>()

        func answer(
            _ read: DataRequest, cachedBody: String?, writes: [OverlayWrite], related: [RelatedAnswer]
        ) -> OverlayAnswer {
            calls.append(writes.map(\.id))
            return OverlayAnswer(
                body: (cachedBody ?? "") + "+" + writes.map(\.id).joined(separator: ","),
                pendingRows: writes.map { PendingRow(key: nil, writeIDs: [$0.id]) }, changedByPendingWrites: true)
        }
    }

    @Test func aStatelessEvaluatorServesLocalFirstReadsThroughTheDefaultSession() async throws {
        let evaluator = ListingEvaluator()
        let rig = try await Rig(.memory) { $0.overlay = evaluator }
        let notes = PostgREST.select("notes", order: "id")
        rig.transport.answer(DataResponse(status: 200, body: "[]"))
        _ = try await rig.offline.read(notes)
        rig.transport.online = false
        guard case .queued(let first) = try await rig.offline.write(insert(1)) else {
            Issue.record("an offline write is queued")
            return
        }

        let shown = try await rig.offline.read(notes, policy: .cacheOnly)
        #expect(shown.body == "[]+\(first.id)" && shown.pendingRows.map(\.writeIDs) == [[first.id]])
        #expect(rig.offline.sessions.count == 1, "the default session is kept")
        #expect(try await rig.offline.read(notes, policy: .cacheOnly) == shown)
        #expect(evaluator.calls.all == [[first.id]], "nothing changed: the kept answer, the evaluator not asked")

        guard case .queued(let second) = try await rig.offline.write(insert(2)) else {
            Issue.record("an offline write is queued")
            return
        }
        let after = try await rig.offline.read(notes, policy: .cacheOnly)
        #expect(after.body == "[]+\(first.id),\(second.id)")
        #expect(evaluator.calls.all == [[first.id], [first.id, second.id]], "asked afresh with every write")
    }
}
