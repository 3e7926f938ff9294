import Dispatch
import Foundation
import SovariaQueue
import SovariaSync
import Synchronization

extension PostgRESTOverlay {
    /// For each answer, the changes that can alter it (`OverlayEvaluator`'s contract): a change
    /// of a row the answer holds (by primary key), or an upsert of a row it does not hold whose
    /// new values match the read's filters (or may: a filter the overlay cannot decide counts as a
    /// match). Each change's row is parsed once for every answer.
    ///
    /// Every change counts for a read whose answer is not a list of rows, a page past an `offset`
    /// (a row before it moves the page), an answer that does not show the primary key, or one
    /// whose read the overlay leaves to the server.
    ///
    /// - Important: The answers to parse are parsed together, spread over the device's cores
    ///   (`DispatchQueue.concurrentPerform`) when there are many; the call returns when every one
    ///   is parsed.
    ///
    /// - Complexity: O(answers + rows they hold) to group them (`TableReach`), then per change a
    ///   lookup of its key and a filter evaluation for each answer its row may match: those whose
    ///   first `eq` filter its value passes, and those with none (`EqualityIndex`). One parse of
    ///   each change's row, and of each answer whose body is not the one the last page parsed
    ///   (kept in `ParsedAnswers`, up to 8 MiB of bodies). ``changesThatCanAlter(versioned:among:)``
    ///   keeps the grouping between pages too.
    public func changesThatCanAlter(
        _ answers: [(read: DataRequest, cachedBody: String)], among changes: [RowChange]
    ) -> [[Int]] {
        // Each answer by its place, at no version: a reach of this call's own, nothing kept.
        var reach = TableReach()
        let entries = entries(of: answers.map { ($0.read, $0.cachedBody, nil) })
        reach.reserveHolders(for: entries)
        for (index, var entry) in entries.enumerated() {
            entry.slot = index
            reach.set("#\(index)", entry)
        }
        let found = Self.found(answers.count, in: &reach, changes: changes)
        return found.map { $0 ?? Array(changes.indices) }
    }

    /// ``changesThatCanAlter(_:among:)`` with what earlier pages learned of each answer kept by
    /// table (each answer's `id`, at its `version`): an answer met at the same version (and
    /// body, when one is given) is neither given again nor parsed; one at a new version, or with
    /// another body, is parsed from its body and replaces the kept one; the table's kept answers
    /// not among `answers` are forgotten.
    /// `nil` for an answer without a body that is not kept at its version.
    ///
    /// - Important: The answers to parse (every answer, at an app's first page after a launch)
    ///   are parsed together once the others are met, spread over the device's cores
    ///   (`DispatchQueue.concurrentPerform`) when there are many; the call returns when every
    ///   one is parsed.
    ///
    /// - Complexity: O(answers) version comparisons, then per change as
    ///   ``changesThatCanAlter(_:among:)``: nothing is grouped again.
    public func changesThatCanAlter(versioned answers: [FeedAnswer], among changes: [RowChange]) -> [[Int]?] {
        guard let first = answers.first else { return [] }
        let table = api.table(of: first.read) ?? ""
        return parsedAnswers.withReach(of: table) { reach in
            let call = reach.beginCall()
            var known = [Bool](repeating: true, count: answers.count)
            var again: [(index: Int, first: Int)] = []  // an id given twice takes its first's answer
            var met = 0  // kept entries among `answers`
            // The answers to parse (no parse of their body is kept: every answer of an app just
            // launched), parsed together after the others are met, and the ids they hold: a later
            // answer of one waits too, so that each is met in turn, as if kept one by one.
            var deferred: [Int] = []
            var deferredIDs = Set<TableReach.AnswerID>()
            /// Keeps `parse` as the answer's at `index`; one without a parse (no body) is not known.
            func keep(_ index: Int, _ parse: TableReach.Entry?) {
                guard var entry = parse else {
                    known[index] = false
                    reach.remove(answers[index].id)
                    return
                }
                (entry.slot, entry.call) = (index, call)
                reach.set(answers[index].id, entry)
                met += 1
            }
            // By index, without a copy of each answer: most are met at their version, and a copy
            // (its id, its read) cost as much as the meeting.
            for index in answers.indices {
                if !deferredIDs.isEmpty, deferredIDs.contains(TableReach.AnswerID(answers[index].id)) {
                    deferred.append(index)
                    continue
                }
                switch reach.meet(
                    answers[index].id, at: answers[index].version, body: answers[index].cachedBody, slot: index,
                    call: call)
                {
                case .known:
                    met += 1
                    continue
                case .again(let first):
                    again.append((index, first))
                    continue
                case .unknown:
                    break
                }
                let answer = answers[index]
                guard let body = answer.cachedBody else {
                    keep(index, nil)
                    continue
                }
                guard let entry = keptEntry(answer.read, body: body, version: answer.version) else {
                    deferred.append(index)
                    deferredIDs.insert(TableReach.AnswerID(answer.id))
                    continue
                }
                keep(index, entry)
            }
            if !deferred.isEmpty {
                let parsed = parsedEntries(
                    of: deferred.compactMap { index in
                        answers[index].cachedBody.map { (answers[index].read, $0, answers[index].version) }
                    })
                reach.reserveHolders(for: parsed)
                var next = parsed.makeIterator()
                for index in deferred {
                    let answer = answers[index]
                    let parse = answer.cachedBody == nil ? nil : next.next()  // one for each with a body
                    if case .again(let first) = reach.meet(
                        answer.id, at: answer.version, body: answer.cachedBody, slot: index, call: call)
                    {
                        again.append((index, first))
                        continue
                    }
                    keep(index, parse)
                }
            }
            // Entries beyond those met are answers gone from the table's.
            if reach.count > met { reach.removeAll(notMetIn: call) }
            var found = Self.foundAgain(answers.count, in: &reach, changes: changes)
            for (index, first) in again { (found[index], known[index]) = (found[first], known[first]) }
            return zip(known, found).map { $0 ? $1 : nil }
        }
    }

    /// The ``entry(_:body:version:)`` of each answer: those kept parsed first, then the others
    /// parsed together (``parsedEntries(of:)``).
    private func entries(of answers: [(read: DataRequest, body: String, version: UInt64?)]) -> [TableReach.Entry] {
        var entries = answers.map { keptEntry($0.read, body: $0.body, version: $0.version) }
        let unparsed = entries.indices.filter { entries[$0] == nil }
        for (index, entry) in zip(unparsed, parsedEntries(of: unparsed.map { answers[$0] })) { entries[index] = entry }
        return entries.map { $0! }
    }

    /// The ``entry(_:body:version:)`` of each answer, none of them kept parsed as a rule (an app
    /// just launched parses every cached answer of the table at its first page), parsed on the
    /// device's cores when there are many (``parsesOnEveryCore``): each parse is independent of
    /// the others, and only the index they go into is built in order, by the caller.
    private func parsedEntries(
        of answers: [(read: DataRequest, body: String, version: UInt64?)]
    ) -> [TableReach.Entry] {
        let chunks = (answers.count + Self.answersPerChunk - 1) / Self.answersPerChunk
        guard chunks > 1, parsesOnEveryCore, ProcessInfo.processInfo.activeProcessorCount > 1 else {
            return answers.map { entry($0.read, body: $0.body, version: $0.version) }
        }
        let parsed = Mutex([[TableReach.Entry]](repeating: [], count: chunks))
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            let start = chunk * Self.answersPerChunk
            let chunkEntries = answers[start..<min(start + Self.answersPerChunk, answers.count)].map {
                entry($0.read, body: $0.body, version: $0.version)
            }
            parsed.withLock { $0[chunk] = chunkEntries }
        }
        return parsed.withLock { Array($0.joined()) }
    }

    /// The answers parsed together on one core, at least: fewer cost less to parse than to hand
    /// to another core.
    private static let answersPerChunk = 16

    /// What `read`'s answer `body` can be reached by (``TableReach/Entry``), parsed unless a
    /// parse of the same bytes is kept.
    private func entry(_ read: DataRequest, body: String, version: UInt64?) -> TableReach.Entry {
        guard api.answerShape(of: read) == .rows else {
            return .init(version: version, parsed: nil, bytes: body.utf8.count)
        }
        let parsed = parsedAnswers.answer(to: read, body: body) {
            cachedAnswer(of: read, cachedBody: body, related: [])
        }
        return Self.entry(parsed, version: version, bytes: body.utf8.count)
    }

    /// ``entry(_:body:version:)`` without a parse: `nil` when no parse of the same bytes is kept.
    private func keptEntry(_ read: DataRequest, body: String, version: UInt64?) -> TableReach.Entry? {
        guard api.answerShape(of: read) == .rows else {
            return .init(version: version, parsed: nil, bytes: body.utf8.count)
        }
        return parsedAnswers.kept(read, body: body).map { Self.entry($0, version: version, bytes: body.utf8.count) }
    }

    /// The entry of `cached`, parsed from `bytes` bytes. Every change counts for a read whose
    /// answer is not a list of rows, a page past an `offset` (a row before it moves the page), an
    /// answer that does not show the primary key, or one whose read the overlay leaves to the
    /// server.
    private static func entry(_ cached: OverlayCachedAnswer, version: UInt64?, bytes: Int) -> TableReach.Entry {
        guard cached.settled == nil, (cached.query.offset ?? 0) == 0,
            cached.cachedColumns.map({ $0.contains(cached.table.primaryKey) }) ?? true
        else { return .init(version: version, parsed: nil, bytes: bytes) }
        return .init(version: version, parsed: cached, bytes: bytes)
    }

    /// ``found(_:in:changes:)``, or the last call's where nothing it depends on has moved since:
    /// the same changes, and the same entries at the same slots (a controller asks again with the
    /// bodies it read, and they were the bodies kept: a page that alters answers it did not read
    /// asks twice).
    private static func foundAgain(_ count: Int, in reach: inout TableReach, changes: [RowChange]) -> [[Int]?] {
        if let last = reach.lastCall, last.revision == reach.revision, last.count == count,
            same(last.changes, changes)
        {
            return last.found
        }
        let found = found(count, in: &reach, changes: changes)
        reach.lastCall = TableReach.Found(revision: reach.revision, count: count, changes: changes, found: found)
        return found
    }

    /// Whether `a` and `b` are the same changes, byte for byte (Swift's `==` takes two
    /// spellings of one text for one: a key or a row another way is another change here).
    private static func same(_ a: [RowChange], _ b: [RowChange]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { a, b in
            guard a.position == b.position, a.table.hasSameUTF8Bytes(as: b.table), a.key.hasSameUTF8Bytes(as: b.key)
            else { return false }
            switch (a.operation, b.operation) {
            case (.delete, .delete): return true
            case (.upsert(let rowA), .upsert(let rowB)): return rowA.hasSameUTF8Bytes(as: rowB)
            default: return false
            }
        }
    }

    /// For each of the `count` slots of the call, the indexes of the `changes` that can alter
    /// the answer kept there (every slot's answer is kept: the caller met or set each). Each
    /// change's row is parsed once, and kept in `reach` for the answers the page applies it to.
    private static func found(_ count: Int, in reach: inout TableReach, changes: [RowChange]) -> [[Int]?] {
        var found = [[Int]?](repeating: [], count: count)
        reach.pageRows = [:]
        reach.pageRows.reserveCapacity(changes.count)
        var rowKeys: [String] = []  // the rows of a table share their keys
        var altered: [Int] = []  // the slots a change alters
        // Room for a slot's share of the changes and a few more, made at its first: grown from
        // empty, each slot's list was three allocations for five changes.
        let expected = changes.count / max(1, count) + 4
        for (changeIndex, change) in changes.enumerated() {
            var parsed: (text: String, row: JSONObject, isWrittenAsIs: Bool)?
            if case .upsert(let text) = change.operation,
                let (row, isWrittenAsIs) = JSONParser.pageRow(text, sharingKeys: &rowKeys)
            {
                parsed = (text, row, isWrittenAsIs)
            }
            reach.slots(alteredBy: change, row: parsed?.row, into: &altered)
            // Kept only for the answers that apply it: at most a page of rows, until the next page.
            if let parsed, !altered.isEmpty { reach.pageRows[change.position] = parsed }
            for slot in altered {
                if found[slot]?.isEmpty == true { found[slot]?.reserveCapacity(expected) }
                found[slot]?.append(changeIndex)
            }
        }
        return found
    }

    /// Forgets the answers kept for the next page and the reads' parsed queries
    /// (`ParsedAnswers`), on memory pressure.
    public func shedKeptAnswers() {
        parsedAnswers.removeAll()
    }

    /// The ``Table/primaryKey`` of `table`, when ``tables`` lists it: the key a `ConflictRule`
    /// without a key column of its own takes.
    public func primaryKey(of table: String) -> String? {
        tables[table]?.primaryKey
    }
}
