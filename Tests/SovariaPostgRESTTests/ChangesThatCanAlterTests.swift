import Foundation
import SovariaPlumbing
import SovariaQueue
import SovariaSync
import SovariaTestKit
import Testing

@_spi(Benchmarks) @testable import SovariaPostgREST

/// Which of a page's changes can alter a cached answer (issue 62, item 2): the feed evaluates an
/// answer with those alone.
@Suite struct ChangesThatCanAlterTests {
    static let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
    static let open = PostgREST.select("notes", columns: "id,title,done", where: [.eq("done", "false")], order: "id")
    static let openBody = #"[{"id":"n1","title":"Milk","done":false},{"id":"n3","title":"Eggs","done":false}]"#

    static func upsert(_ key: String, _ row: String) -> RowChange {
        RowChange(position: 1, table: "notes", key: key, operation: .upsert(row: row))
    }
    static func delete(_ key: String) -> RowChange {
        RowChange(position: 1, table: "notes", key: key, operation: .delete)
    }

    @Test func aChangeAltersAnAnswerThatHoldsItsRowOrWhoseReadItsNewRowMatches() {
        let changes = [
            Self.upsert("n1", #"{"id":"n1","title":"Oat milk","done":true}"#),  // held: leaves the answer
            Self.upsert("n2", #"{"id":"n2","title":"Bread","done":true}"#),  // not held, does not match
            Self.upsert("n4", #"{"id":"n4","title":"Apples","done":false}"#),  // not held, matches
            Self.delete("n3"),  // held
            Self.delete("n9"),  // not held
        ]
        let found = Self.overlay.changesThatCanAlter([(Self.open, Self.openBody)], among: changes)
        #expect(found == [[0, 2, 3]])
    }

    @Test func everyChangeCountsWhereTheAnswerCannotTellWhatItHolds() {
        let changes = [Self.delete("n9"), Self.upsert("n2", #"{"id":"n2","title":"Bread","done":true}"#)]
        let paged = PostgREST().select("notes", columns: "id,title,done", where: [.eq("done", "false")], order: "id")
        var offset = paged
        offset.path += "&offset=10"
        let noKey = PostgREST.select("notes", columns: "title", where: [.eq("done", "false")], order: "title")
        var csv = Self.open
        csv.setHeader("Accept", "text/csv")
        let found = Self.overlay.changesThatCanAlter(
            [(offset, Self.openBody), (noKey, #"[{"title":"Eggs"},{"title":"Milk"}]"#), (csv, "id\nn1")],
            among: changes)
        #expect(found == [[0, 1], [0, 1], [0, 1]], "a row before the offset, rows without their key, CSV")
    }

    /// A page parses each change's row once: the rows parsed to find what they reach are kept
    /// for the page's answers (`TableReach.pageRows`), and a change at the same position whose
    /// row is another text (another feed, another account's page) is parsed afresh.
    @Test func anAnswerAppliesThePagesParsedRowOnlyForTheSameText() {
        let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        let oat = #"{"id":"n1","title":"Oat milk","done":false}"#
        let renamed = RowChange(position: 7, table: "notes", key: "n1", operation: .upsert(row: oat))
        let asked = [FeedAnswer(id: "open", version: 1, read: Self.open, cachedBody: Self.openBody)]
        #expect(overlay.changesThatCanAlter(versioned: asked, among: [renamed]) == [[0]])
        #expect(overlay.parsedAnswers.pageRows(of: "notes")[7]?.text == oat, "the page's row is kept parsed")
        let applied = overlay.answer(Self.open, cachedBody: Self.openBody, writes: [OverlayWrite(change: renamed)])
        #expect(
            applied.body == #"[{"id":"n1","title":"Oat milk","done":false},{"id":"n3","title":"Eggs","done":false}]"#)
        var other = renamed
        other.operation = .upsert(row: #"{"id":"n1","title":"Rice milk","done":false}"#)
        let otherAnswer = overlay.answer(Self.open, cachedBody: Self.openBody, writes: [OverlayWrite(change: other)])
        #expect(otherAnswer.body?.contains("Rice milk") == true && otherAnswer.isExact)
        #expect(overlay.changesThatCanAlter(versioned: asked, among: [Self.delete("n3")]) == [[0]])
        #expect(overlay.parsedAnswers.pageRows(of: "notes").isEmpty, "the next page's rows replace them")
    }

    /// A live query's session and a change feed's page share one parse of an answer's body
    /// (issue 62: a page reuses the parsed answer a live session holds), whichever comes first;
    /// a session with related answers parses its own, and so does a read that differs by a
    /// header, or by the bytes of its path or body alone.
    @Test func aPageUsesTheParseALiveSessionMadeOfTheSameBody() throws {
        let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        _ = overlay.session(Self.open, cachedBody: Self.openBody, related: [])
        let session = try #require(overlay.parsedAnswers.kept(Self.open, body: Self.openBody), "the session's parse")
        let asked = [FeedAnswer(id: "open", version: 1, read: Self.open, cachedBody: Self.openBody)]
        let change = Self.upsert("n1", #"{"id":"n1","title":"Oat milk","done":false}"#)
        #expect(overlay.changesThatCanAlter(versioned: asked, among: [change]) == [[0]])
        #expect(overlay.parsedAnswers.kept(Self.open, body: Self.openBody) === session, "the page parsed nothing")
        #expect(overlay.parsedAnswers.count == 1)

        let other = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        let related = RelatedAnswer(read: PostgREST.select("notes", columns: "id,title,done"), body: Self.openBody)
        _ = other.session(Self.open, cachedBody: Self.openBody, related: [related])
        #expect(other.parsedAnswers.count == 0, "a parse with related rows is the session's own")

        // The page first, then the session.
        let pageFirst = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        #expect(pageFirst.changesThatCanAlter(versioned: asked, among: [change]) == [[0]])
        let page = try #require(pageFirst.parsedAnswers.kept(Self.open, body: Self.openBody), "the page's parse")
        _ = pageFirst.session(Self.open, cachedBody: Self.openBody, related: [])
        #expect(pageFirst.parsedAnswers.kept(Self.open, body: Self.openBody) === page, "the session parsed nothing")
        // Another page of the same path (a Range), and the same text in other bytes: not shared.
        var ranged = Self.open
        ranged.setHeader("Range", "0-0")
        #expect(pageFirst.parsedAnswers.kept(ranged, body: Self.openBody) == nil)
        let decomposed = Self.openBody.replacingOccurrences(of: "Eggs", with: "E\u{301}ggs")
        let composed = Self.openBody.replacingOccurrences(of: "Eggs", with: "\u{C9}ggs")
        #expect(decomposed == composed, "Swift calls the two bodies equal")
        _ = pageFirst.session(Self.open, cachedBody: composed, related: [])
        let kept = try #require(pageFirst.parsedAnswers.kept(Self.open, body: composed))
        #expect(pageFirst.parsedAnswers.kept(Self.open, body: decomposed) == nil, "other bytes: parsed afresh")
        #expect(kept.cachedBody?.hasSameUTF8Bytes(as: composed) == true)
    }

    /// A page keeps each answer it parsed for the next (`ParsedAnswers`): one whose body changed
    /// since is parsed again, and a copy of the overlay told another table configuration parses
    /// afresh.
    @Test func aKeptParseServesTheSameBodyOnlyUnderTheSameConfiguration() {
        let read = PostgREST.select("notes", columns: "id,title", order: "id")
        let holdsN1 = #"[{"id":"n1","title":"Milk"}]"#
        let holdsN2 = #"[{"id":"n2","title":"Milk"}]"#
        let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        #expect(overlay.changesThatCanAlter([(read, holdsN1)], among: [Self.delete("n1")]) == [[0]])
        #expect(overlay.changesThatCanAlter([(read, holdsN1)], among: [Self.delete("n1")]) == [[0]])
        #expect(overlay.parsedAnswers.count == 1, "one read, parsed once and kept")
        #expect(
            overlay.changesThatCanAlter([(read, holdsN2)], among: [Self.delete("n1")]) == [[]],
            "the new body no longer holds n1")
        var byTitle = overlay
        byTitle.tables = ["notes": .init(primaryKey: "title")]
        #expect(
            byTitle.changesThatCanAlter([(read, holdsN2)], among: [Self.delete("n2")]) == [[]],
            "keyed by title, the answer holds Milk, not n2")
        #expect(overlay.changesThatCanAlter([(read, holdsN2)], among: [Self.delete("n2")]) == [[0]])
    }

    /// The equality index passes over an answer only when evaluating the read on the row would
    /// say no: seeded answers filtered by `eq` on numbers, strings, booleans, a non-text column,
    /// with and without other filters, against rows of every JSON type (or without the column),
    /// each checked against a full evaluation of every answer.
    @Test(arguments: Array(1...20) as [UInt64])
    func theEqualityIndexNeverPassesOverAnAnswerTheRowMayMatch(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        let overlay = PostgRESTOverlay(
            tables: ["notes": .init(primaryKey: "id", nonTextColumns: ["at"])], textOrder: .bytes)
        let operands = ["5", "5.0", "05", "-5", "6", "a", "A", "true", "t", "1e0", " 5", "2024-01-01", ""]
        let values = [
            "5", "5.0", "6", "-5", "1", "\"5\"", "\"a\"", "\"A\"", "\"\"", "true", "false", "null", "[5]",
            "{\"a\":5}", "\"2024-01-01\"", "\"2024-01-01T00:00:00\"",
        ]
        let columns = ["qty", "title", "done", "at"]
        let answers: [(read: DataRequest, cachedBody: String)] = (0..<40).map { _ in
            var filters: [PostgREST.Filter] = []
            if Int.random(in: 0..<5, using: &random) > 0 {
                filters.append(.eq(columns.randomElement(using: &random)!, operands.randomElement(using: &random)!))
            }
            if Bool.random(using: &random) {
                filters.append(.eq(columns.randomElement(using: &random)!, operands.randomElement(using: &random)!))
            }
            return (PostgREST.select("notes", where: filters), "[]")
        }
        let changes = (0..<60).map { index -> RowChange in
            var fields = [#""id":"x\#(index)""#]
            for column in columns where Int.random(in: 0..<6, using: &random) > 0 {
                fields.append(#""\#(column)":\#(values.randomElement(using: &random)!)"#)
            }
            return Self.upsert("x\(index)", "{" + fields.joined(separator: ",") + "}")
        }
        let found = overlay.changesThatCanAlter(answers, among: changes)
        var everyChange = 0
        for (answerIndex, answer) in answers.enumerated() {
            let cached = overlay.cachedAnswer(of: answer.read, cachedBody: answer.cachedBody, related: [])
            // A read the overlay settles without rows (`eq.` of nothing) takes every change.
            let takesEvery = cached.settled != nil
            let expected = changes.indices.filter { index in
                if takesEvery { return true }
                guard case .upsert(let text) = changes[index].operation,
                    case .object(let row) = try! JSONParser.parse(text)
                else { return true }
                let truth = cached.readTruth(on: OverlayRows.Row(values: row, cachedIndex: nil, ordinal: 0))
                return truth != .no && truth != .null
            }
            #expect(found[answerIndex] == expected, "seed \(seed), \(answer.read.path)")
            everyChange += takesEvery ? 1 : 0
        }
        #expect(everyChange < answers.count / 2, "most answers are decided change by change")
    }

    /// What a page learned of an answer is kept by the answer's id at its version: the next page
    /// at the same version needs no body; a new version comes with its body and replaces what was
    /// kept; an answer not kept and without a body is `nil`; an answer left out is forgotten.
    @Test func aVersionedAnswerIsKeptUntilItsVersionMovesOrItIsLeftOut() {
        let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        let read = PostgREST.select("notes", columns: "id,title", order: "id")
        let other = PostgREST.select("notes", columns: "id,title", where: [.eq("title", "b")])
        func answer(_ id: String, _ version: UInt64, _ read: DataRequest, _ body: String?) -> FeedAnswer {
            FeedAnswer(id: id, version: version, read: read, cachedBody: body)
        }
        let deleteN1 = [Self.delete("n1")]
        let n1 = #"[{"id":"n1","title":"a"}]"#
        #expect(overlay.changesThatCanAlter(versioned: [answer("q", 1, read, n1)], among: deleteN1) == [[0]])
        #expect(
            overlay.changesThatCanAlter(versioned: [answer("q", 1, read, nil)], among: deleteN1) == [[0]],
            "kept at version 1: no body needed")
        #expect(
            overlay.changesThatCanAlter(versioned: [answer("q", 2, read, nil)], among: deleteN1) == [nil],
            "version 2 is not kept")
        let n2 = #"[{"id":"n2","title":"a"}]"#
        #expect(overlay.changesThatCanAlter(versioned: [answer("q", 2, read, n2)], among: deleteN1) == [[]])
        #expect(
            overlay.changesThatCanAlter(versioned: [answer("q", 2, read, nil)], among: [Self.delete("n2")]) == [[0]],
            "version 2 holds n2, not n1")
        // Another answer alone: "q" is forgotten, and must come with its body again.
        let bRow = Self.upsert("n5", #"{"id":"n5","title":"b"}"#)
        #expect(overlay.changesThatCanAlter(versioned: [answer("r", 1, other, "[]")], among: [bRow]) == [[0]])
        #expect(
            overlay.changesThatCanAlter(
                versioned: [answer("q", 2, read, nil), answer("r", 1, other, nil)], among: [bRow]) == [nil, [0]])
        #expect(
            overlay.changesThatCanAlter(versioned: [answer("q", 3, read, n2)], among: [bRow]) == [[0]],
            "a new row with no filter to pass over counts for an unfiltered read")
        overlay.shedKeptAnswers()
        #expect(overlay.changesThatCanAlter(versioned: [answer("q", 3, read, nil)], among: [bRow]) == [nil])
    }

    /// An id given twice gets what its first got, and an answer kept from an earlier call but not
    /// given is forgotten even then (its place from that call is not taken for another's).
    @Test func anIdGivenTwiceGetsItsFirstsAnswer() {
        let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        let read = PostgREST.select("notes", columns: "id,title", order: "id")
        let n1 = #"[{"id":"n1","title":"a"}]"#
        let deleteN1 = [Self.delete("n1")]
        _ = overlay.changesThatCanAlter(
            versioned: [
                FeedAnswer(id: "q", version: 1, read: read, cachedBody: "[]"),
                FeedAnswer(id: "r", version: 1, read: read, cachedBody: n1),
            ], among: deleteN1)
        let found = overlay.changesThatCanAlter(
            versioned: [
                FeedAnswer(id: "q", version: 1, read: read, cachedBody: nil),
                FeedAnswer(id: "q", version: 1, read: read, cachedBody: nil),
            ], among: deleteN1)
        #expect(found == [[], []], "r, which holds n1, is gone: its old place 1 is not q's")
        #expect(
            overlay.changesThatCanAlter(
                versioned: [FeedAnswer(id: "r", version: 1, read: read, cachedBody: nil)], among: deleteN1) == [nil])
    }

    /// An id given twice, its first unknown and its second kept: each gets what the first gets,
    /// as if the answers were met in turn (the first replaces what was kept before the second is
    /// met), whether the two differ in version, in body, or come without bodies.
    @Test func anIdGivenTwiceIsMetInTurnWhenItsFirstIsNotKept() {
        let read = PostgREST.select("notes", columns: "id,title", order: "id")
        let n1 = #"[{"id":"n1","title":"a"}]"#
        let deleteN1 = [Self.delete("n1")]
        func overlayKeepingQAtVersion1() -> PostgRESTOverlay {
            let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
            _ = overlay.changesThatCanAlter(
                versioned: [FeedAnswer(id: "q", version: 1, read: read, cachedBody: "[]")], among: [])
            return overlay
        }
        var overlay = overlayKeepingQAtVersion1()
        #expect(
            overlay.changesThatCanAlter(
                versioned: [
                    FeedAnswer(id: "q", version: 2, read: read, cachedBody: n1),
                    FeedAnswer(id: "q", version: 1, read: read, cachedBody: nil),
                ], among: deleteN1) == [[0], [0]], "a new version, then the kept one")
        #expect(
            overlay.changesThatCanAlter(
                versioned: [FeedAnswer(id: "q", version: 2, read: read, cachedBody: nil)], among: deleteN1) == [[0]],
            "version 2 is kept")
        overlay = overlayKeepingQAtVersion1()
        #expect(
            overlay.changesThatCanAlter(
                versioned: [
                    FeedAnswer(id: "q", version: 2, read: read, cachedBody: nil),
                    FeedAnswer(id: "q", version: 1, read: read, cachedBody: nil),
                ], among: deleteN1) == [nil, nil], "a version not kept, without its body")
        overlay = overlayKeepingQAtVersion1()
        #expect(
            overlay.changesThatCanAlter(
                versioned: [
                    FeedAnswer(id: "q", version: 1, read: read, cachedBody: n1),
                    FeedAnswer(id: "q", version: 1, read: read, cachedBody: "[]"),
                ], among: deleteN1) == [[0], [0]], "another body at the same version, then the kept one")
    }

    /// Pages of versioned answers, as a controller asks them (a body only where the version moved,
    /// again with bodies where the overlay says `nil`), find for every answer what a fresh look at
    /// every body finds: seeded answers that change, go and come back between pages, and memory
    /// pressure that empties what was kept.
    @Test(arguments: Array(1...20) as [UInt64])
    func versionedPagesFindWhatAFreshLookFinds(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        let reads = (0..<12).map { index -> DataRequest in
            switch index % 4 {
            case 0: PostgREST.select("notes", columns: "id,qty", where: [.eq("qty", String(index % 5))], order: "id")
            case 1: PostgREST.select("notes", columns: "id,qty", where: [.eq("id", "x\(index)")])
            case 2: PostgREST.select("notes", columns: "id,qty", where: [.gte("qty", "3")], order: "id")
            default: PostgREST.select("notes", columns: "id,qty", order: "id")
            }
        }
        func body(_ random: inout SplitMix) -> String {
            let ids = Set(
                (0..<Int.random(in: 0..<5, using: &random)).map { _ in Int.random(in: 0..<15, using: &random) })
            let rows = ids.sorted().map { #"{"id":"x\#($0)","qty":\#(Int.random(in: 0..<6, using: &random))}"# }
            return "[" + rows.joined(separator: ",") + "]"
        }
        var answers: [(version: UInt64, body: String)?] = reads.map { _ in (1, body(&random)) }
        var lastAsked: [UInt64?] = Array(repeating: nil, count: reads.count)
        var version: UInt64 = 1
        for page in 0..<8 {
            for index in reads.indices {
                switch Int.random(in: 0..<6, using: &random) {
                case 0:
                    version += 1
                    answers[index] = (version, body(&random))
                case 1: answers[index] = Bool.random(using: &random) ? nil : answers[index]
                case 2 where answers[index] == nil:
                    version += 1
                    answers[index] = (version, body(&random))
                default: break
                }
            }
            if Int.random(in: 0..<5, using: &random) == 0 { overlay.shedKeptAnswers() }
            let present = reads.indices.filter { answers[$0] != nil }
            let changes = (0..<6).map { index -> RowChange in
                let id = "x\(Int.random(in: 0..<15, using: &random))"
                return Bool.random(using: &random)
                    ? Self.delete(id)
                    : Self.upsert(id, #"{"id":"\#(id)","qty":\#(Int.random(in: 0..<6, using: &random))}"#)
            }
            func asked(withBodies all: Bool) -> [FeedAnswer] {
                present.map { index in
                    let (version, body) = answers[index]!
                    let known = lastAsked[index] == version
                    return FeedAnswer(
                        id: "q\(index)", version: version, read: reads[index], cachedBody: all || !known ? body : nil)
                }
            }
            var found = overlay.changesThatCanAlter(versioned: asked(withBodies: false), among: changes)
            if found.contains(where: { $0 == nil }) {
                found = overlay.changesThatCanAlter(versioned: asked(withBodies: true), among: changes)
            }
            let fresh = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
                .changesThatCanAlter(present.map { (reads[$0], answers[$0]!.body) }, among: changes)
            for (position, index) in present.enumerated() {
                #expect(found[position] == fresh[position], "seed \(seed), page \(page), \(reads[index].path)")
            }
            for index in reads.indices { lastAsked[index] = answers[index]?.version }
        }
    }

    /// Many answers met at once (an app just launched meets every answer at its first page, and
    /// parses them together, on several cores): each finds what it finds alone, an id given twice
    /// takes its first's, an answer without a body that is not kept is `nil`, and each is kept
    /// for the next page as if it had been parsed alone; parsed on every core or on one.
    @Test(arguments: Array(1...5) as [UInt64], [true, false])
    func manyAnswersMetAtOnceFindWhatEachFindsAlone(seed: UInt64, onEveryCore: Bool) throws {
        var random = SplitMix(seed: seed)
        var overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        overlay.parsesOnEveryCore = onEveryCore
        func body() -> String {
            let ids = Set(
                (0..<Int.random(in: 0..<6, using: &random)).map { _ in Int.random(in: 0..<40, using: &random) })
            let rows = ids.sorted().map { #"{"id":"x\#($0)","qty":\#(Int.random(in: 0..<6, using: &random))}"# }
            return "[" + rows.joined(separator: ",") + "]"
        }
        var answers = (0..<70).map { index in
            let read =
                switch index % 3 {
                case 0:
                    PostgREST.select("notes", columns: "id,qty", where: [.eq("qty", String(index % 6))], order: "id")
                case 1: PostgREST.select("notes", columns: "id,qty", where: [.gte("qty", "3")], order: "id")
                default: PostgREST.select("notes", columns: "id,qty", order: "id")
                }
            return FeedAnswer(id: "q\(index)", version: 1, read: read, cachedBody: body())
        }
        answers[41] = answers[9]  // an id given twice
        answers[55].cachedBody = nil  // not kept, no body
        // Two deletes and two upserts, one of them of a `qty` no `eq` filter names: some answers
        // are reached, and some not.
        let changes = (0..<4).map { index -> RowChange in
            let id = "x\(Int.random(in: 0..<40, using: &random))"
            let qty = index == 3 ? 1 : Int.random(in: 0..<6, using: &random)
            return index < 2 ? Self.delete(id) : Self.upsert(id, #"{"id":"\#(id)","qty":\#(qty)}"#)
        }
        func alone(_ answer: FeedAnswer) -> [Int]? {
            answer.cachedBody.map {
                PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
                    .changesThatCanAlter([(answer.read, $0)], among: changes)[0]
            }
        }
        let found = overlay.changesThatCanAlter(versioned: answers, among: changes)
        #expect(found == answers.map(alone))
        #expect(found[41] == found[9] && found[55] == nil)
        #expect(found.contains { $0?.isEmpty == false } && found.contains { $0?.isEmpty == true })
        // Kept at their versions: asked again without bodies, the same.
        answers[55].cachedBody = body()
        let expected = answers.map(alone)
        let bodies = answers.map(\.cachedBody)
        for index in answers.indices where index != 55 { answers[index].cachedBody = nil }
        #expect(overlay.changesThatCanAlter(versioned: answers, among: changes) == expected)
        // Half of them at new versions, with new bodies: parsed again, together.
        for index in answers.indices where index % 2 == 0 && index != 41 {
            answers[index].version = 2
            answers[index].cachedBody = body()
        }
        for index in answers.indices where answers[index].cachedBody == nil {
            answers[index].cachedBody = bodies[index]
        }
        #expect(overlay.changesThatCanAlter(versioned: answers, among: changes) == answers.map(alone))
    }

    @Test func aDeletesKeyIsHeldAsTextOrAsANumber() {
        let numbered = PostgREST.select("notes", columns: "id,title", order: "id")
        let found = Self.overlay.changesThatCanAlter(
            [(numbered, #"[{"id":7,"title":"a"}]"#), (numbered, #"[{"id":"7","title":"b"}]"#)],
            among: [Self.delete("7")])
        #expect(found == [[0], [0]])
    }

    @Test func anEmptyAnswerIsAlteredOnlyByRowsThatMatch() {
        let changes = [
            Self.upsert("n2", #"{"id":"n2","title":"Bread","done":true}"#),
            Self.upsert("n4", #"{"id":"n4","title":"Apples","done":false}"#), Self.delete("n1"),
        ]
        #expect(Self.overlay.changesThatCanAlter([(Self.open, "[]")], among: changes) == [[1]])
    }

    /// Two answers whose ids spell one text two ways (`é` composed, and `e` with a combining
    /// accent: the cache keys of two reads PostgreSQL tells apart) are two answers, each found
    /// by its own read, though Swift's `String` calls the ids equal.
    @Test func answersWhoseIdsDifferOnlyInTheirBytesAreTwo() {
        let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        let composed = PostgREST.select("notes", columns: "id,title", where: [.eq("title", "caf\u{E9}")])
        let decomposed = PostgREST.select("notes", columns: "id,title", where: [.eq("title", "cafe\u{301}")])
        let asked = [
            FeedAnswer(id: "title=caf\u{E9}", version: 1, read: composed, cachedBody: "[]"),
            FeedAnswer(id: "title=cafe\u{301}", version: 1, read: decomposed, cachedBody: "[]"),
        ]
        #expect(asked[0].id == asked[1].id, "Swift calls the two ids equal")
        let change = Self.upsert("n1", "{\"id\":\"n1\",\"title\":\"caf\u{E9}\"}")
        #expect(overlay.changesThatCanAlter(versioned: asked, among: [change]) == [[0], []])
        #expect(overlay.changesThatCanAlter(versioned: asked, among: [change]) == [[0], []], "kept, the same")
    }

    /// Asked again with what it was just asked (a controller with the bodies it read), the
    /// overlay answers as it did; a change whose row differs at the same position, answers
    /// given in another order, an answer at another body, or a change spelled another way is
    /// found afresh, not taken from the call before.
    @Test func askedAgainFindsWhatAFreshLookFinds() {
        let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        let qty1 = PostgREST.select("notes", columns: "id,qty", where: [.eq("qty", "1")], order: "id")
        let x1 = PostgREST.select("notes", columns: "id,qty", where: [.eq("id", "x1")])
        let (qty1Body, x1Body) = (#"[{"id":"x1","qty":1}]"#, #"[{"id":"x1","qty":1}]"#)
        func ask(_ answers: [(String, DataRequest, String?, UInt64)], _ changes: [RowChange]) -> [[Int]?] {
            overlay.changesThatCanAlter(
                versioned: answers.map { FeedAnswer(id: $0.0, version: $0.3, read: $0.1, cachedBody: $0.2) },
                among: changes)
        }
        let toQty1 = RowChange(position: 5, table: "notes", key: "x5", operation: .upsert(row: #"{"id":"x5","qty":1}"#))
        let toQty2 = RowChange(position: 5, table: "notes", key: "x5", operation: .upsert(row: #"{"id":"x5","qty":2}"#))
        let both = [("q", qty1, qty1Body, UInt64(1)), ("x", x1, x1Body, UInt64(1))]
        #expect(ask(both, [toQty1]) == [[0], []])
        #expect(ask(both, [toQty1]) == [[0], []], "the same call again")
        #expect(ask(both.map { ($0.0, $0.1, nil, $0.3) }, [toQty1]) == [[0], []], "again without the bodies")
        #expect(ask(both.reversed(), [toQty1]) == [[], [0]], "the answers in another order")
        #expect(ask(both, [toQty1]) == [[0], []], "back in their order")
        #expect(ask(both, [toQty2]) == [[], []], "the same position, another row")
        let emptied = [("q", qty1, "[]", UInt64(2)), ("x", x1, x1Body, UInt64(1))]
        let deleteX1 = RowChange(position: 6, table: "notes", key: "x1", operation: .delete)
        #expect(ask(both, [deleteX1]) == [[0], [0]])
        #expect(ask(emptied, [deleteX1]) == [[], [0]], "q at a new version, without x1")
        // A row that Swift's `==` calls the same, spelled another way: `café` composed passes the
        // read's `eq`, decomposed does not (PostgreSQL compares the bytes).
        let cafe = PostgREST.select("notes", columns: "id,title", where: [.eq("title", "caf\u{E9}")])
        func titled(_ title: String) -> RowChange {
            RowChange(
                position: 7, table: "notes", key: "x7",
                operation: .upsert(row: "{\"id\":\"x7\",\"title\":\"\(title)\"}"))
        }
        #expect(titled("caf\u{E9}") == titled("cafe\u{301}"), "Swift calls the two changes equal")
        #expect(ask([("c", cafe, "[]", 1)], [titled("caf\u{E9}")]) == [[0]])
        #expect(ask([("c", cafe, "[]", 1)], [titled("cafe\u{301}")]) == [[]], "the row spelled another way")
    }
}
