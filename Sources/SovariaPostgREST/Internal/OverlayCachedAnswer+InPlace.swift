import SovariaQueue
import SovariaSync

// MARK: - Changes that rewrite rows in place

extension OverlayCachedAnswer {
    /// The answer and its parse after `writes`, when every one is a change the feed brought that
    /// rewrites a row this answer holds in place: an upsert of a held row (by key) that leaves its
    /// key and the read's order columns as they were, whose row the read's filters surely keep,
    /// whose strings the server keeps as strings, and whose values shown are of the kinds the
    /// answer's parse learned. Each such row is written again from its new values, every other
    /// row is its cached text, and no row is sorted or paged: what
    /// ``evaluatedAnswerAndParse(writes:pageRows:)`` gives for such a page, without the
    /// evaluation. `nil` for any other page (the evaluation answers it): a delete, an insert, a
    /// key or order column changed, a row the filters may no longer keep, a string the server may
    /// read as a number or a boolean, a shown value of a kind the parse did not learn of its
    /// column (or `null` for one that told a kind), a `select` with aliases, a page (`limit`,
    /// `offset`), a count, related answers, a reason met reading the answer.
    ///
    /// - Complexity: O(columns) per change and O(columns) per row rewritten, then one copy of the
    ///   body's bytes.
    func answerInPlace(
        writes: [OverlayWrite], pageRows: TableReach.PageRows
    ) -> (answer: OverlayAnswer, parse: OverlayCachedAnswer?)? {
        guard settled == nil, hasCache, relatedAreEmpty, !answersFromRelated, reasons.isEmpty, !countsRows,
            query.limit == nil, (query.offset ?? 0) == 0, query.selectItems == nil, let cachedBody,
            rows.count == cachedCount, let cachedColumns, cachedColumns.contains(table.primaryKey)
        else { return nil }
        // The columns shown, each once (as `OverlayReadEvaluation.project(_:)` takes them; an
        // object's keys are).
        var columns = cachedColumns
        if let selected = query.columns {
            columns = []
            for column in selected where !columns.contains(column) { columns.append(column) }
        }
        // Columns a change's string surely stays a string in, learned once for the answer's rows
        // (compared as a row's few columns are, not hashed per change).
        var textColumns: [String] = []
        // The rows the changes rewrote, by index, with their new values and the text of the row
        // a change became whole, where writing the row gives it back (the body takes it as it
        // is; `nil`: the row is written from its values).
        var rewritten = [Rewritten?](repeating: nil, count: rows.count)
        // What the rewrite asks of each column shown, by place: learned once for this answer and
        // its rewrites (`columnFacts`), for changes naming the held row's columns in their order;
        // `nil` where two columns are one name to `String`'s `==` (the loop goes by name).
        var facts: [ColumnFacts]?? = columnFacts.map { .some($0) }
        var metRow = false
        var ours: (table: String, isOurs: Bool)?  // the last change's table, told once for a page's run
        // An array of names found to be the columns shown, held (so its storage is not reused
        // while it is): a page's rows share one, met again by its storage, not name by name.
        var namesMet: [String]?
        func namesTheColumns(_ values: JSONObject) -> Bool {
            if let namesMet, Self.isSameStorage(values.keys, namesMet) { return true }
            guard Self.areNamed(values, columns) else { return false }
            namesMet = values.keys
            return true
        }
        for write in writes {
            guard case .change(let change) = write.effect, !write.isPending else { return nil }
            // Another table's change leaves this answer as it is (`OverlayRows` skips it too).
            if ours.map({ !$0.table.hasSameUTF8Bytes(as: change.table) }) ?? true {
                ours = (change.table, api.tableOfChange(change.table) == readTable)
            }
            guard ours?.isOurs == true else { continue }
            guard case .upsert(let text) = change.operation else { return nil }
            let pageRow = pageRows[change.position].flatMap { $0.text.hasSameUTF8Bytes(as: text) ? $0 : nil }
            var changed = pageRow?.row
            if changed == nil, case .object(let object)? = try? JSONParser.parse(text) { changed = object }
            // A held row whose text is the cached body's and whose columns are the ones shown.
            guard let changed, let key = changed[table.primaryKey], let index = positions[OverlayRows.keyText(key)],
                rows[index].cachedRange != nil, Self.areNamed(rows[index].values, columns)
            else { return nil }
            metRow = true
            // A change naming the columns shown in their order, as the held row does (a feed's
            // rows do): its values are compared by place, and it becomes the row as it is (no
            // copy of the row). A row an earlier change gave another column goes by name.
            let held = rewritten[index]?.values ?? rows[index].values
            if Self.areNamed(held, columns), namesTheColumns(changed) {
                if facts == nil { facts = .some(learnColumnFacts(of: columns)) }
                if case .some(let byPlace?) = facts {
                    guard let isRewritten = Self.rewrites(held, with: changed, byPlace, answer: self) else {
                        return nil
                    }
                    // In the answer's own array of columns (the held row's are the same names),
                    // so the body written next, and the next page, compare them at once.
                    if isRewritten {
                        rewritten[index] = Rewritten(
                            values: changed.sharingKeys(held.keys), text: pageRow?.isWrittenAsIs == true ? text : nil)
                    }
                    continue
                }
            }
            var values = held
            var isRewritten = rewritten[index] != nil
            for (column, value) in changed.members {
                if case .string = value, !textColumns.contains(column) {
                    guard !mayReadAsAnotherKind(value, in: column) else { return nil }
                    if serverKinds[column] == .string || table.nonTextColumns.contains(column) {
                        textColumns.append(column)
                    }
                }
                // The server's own value, byte for byte, is no change (as `OverlayRows.merge`).
                let held = values[column]
                if let held, held.isIdentical(to: value) { continue }
                // (A filter's column may change: the row stays where the read's filters keep it,
                // checked below, as the evaluation checks it.)
                guard column != table.primaryKey, !orderColumns.contains(column),
                    !columns.contains(column) || keepsKinds(column, held, value)
                else { return nil }
                values[column] = value
                isRewritten = true
            }
            if isRewritten { rewritten[index] = Rewritten(values: values, text: nil) }
        }
        guard metRow else { return (OverlayAnswer(body: cachedBody), nil) }
        // A rewritten row stays only where the read's filters surely keep it.
        for (index, row) in rewritten.enumerated() {
            guard let row else { continue }
            guard readTruth(on: OverlayRows.Row(values: row.values, cachedIndex: index, ordinal: index)) == .yes else {
                return nil
            }
        }
        let names = shownNames.flatMap { $0.isWritten(for: columns) ? $0 : nil } ?? ShownNames(columns)
        guard let (body, written) = bodyInPlace(cachedBody, rewritten: rewritten, columns: columns, names: names)
        else { return nil }
        let answer = OverlayAnswer(body: body)
        guard !body.hasSameUTF8Bytes(as: cachedBody) else { return (answer, nil) }
        return (
            answer,
            OverlayCachedAnswer(
                rewriting: self, body: body, rows: written, columnFacts: facts ?? nil, shownNames: names)
        )
    }

    /// A row a page's changes rewrote: its new values, and its text where writing them gives it.
    private struct Rewritten {
        var values: JSONObject
        var text: String?
    }

    /// The columns shown, each written as a rewrite writes it before its value (`"name":`), back
    /// to back: made once for an answer and kept with the parses its rewrites make
    /// (``shownNames``).
    struct ShownNames {
        /// The columns, in order.
        let columns: [String]
        /// Their names written, and where each ends.
        let bytes: [UInt8]
        let ends: [Int]

        init(_ columns: [String]) {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(columns.reduce(0) { $0 + $1.utf8.count + 3 })
            var ends: [Int] = []
            ends.reserveCapacity(columns.count)
            for column in columns {
                JSONValue.writeString(column, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                ends.append(bytes.count)
            }
            (self.columns, self.bytes, self.ends) = (columns, bytes, ends)
        }

        /// Whether these are `columns`' names, byte for byte and in order.
        func isWritten(for columns: [String]) -> Bool {
            columns.count == self.columns.count
                && (OverlayCachedAnswer.isSameStorage(columns, self.columns)
                    || zip(columns, self.columns).allSatisfy { $0.hasSameUTF8Bytes(as: $1) })
        }
    }

    /// Whether the kinds a parse learns of the rows' values (``serverKinds``: each column's first
    /// value that tells one) stay the same when `column`'s value `held` becomes `value`: it is
    /// of the kind learned, or it tells none where `held` told none either.
    private func keepsKinds(_ column: String, _ held: JSONValue?, _ value: JSONValue) -> Bool {
        Self.keepsKind(serverKinds[column], held, value)
    }

    /// ``keepsKinds(_:_:_:)`` for a column whose kind learned is `learned`.
    private static func keepsKind(_ learned: ServerKind?, _ held: JSONValue?, _ value: JSONValue) -> Bool {
        guard let kind = ServerKind(value) else { return held.flatMap(ServerKind.init) == nil }
        return kind == learned
    }

    /// What ``answerInPlace(writes:pageRows:)`` asks of one column shown, learned once for an
    /// answer and kept with the parses its rewrites make (``columnFacts``).
    struct ColumnFacts {
        /// Whether a string in it surely stays a string (no ``mayReadAsAnotherKind(_:in:)``).
        var stringStaysText: Bool
        /// Whether a change of it can be written in place: neither the key nor an order column.
        var mayChange: Bool
        /// The kind the parse learned of it.
        var kind: ServerKind?
    }

    /// The facts of each of `columns`, the columns shown (each a held row's, in its order); `nil`
    /// when two are one name to `String`'s `==` (a lookup by place would not find what a lookup
    /// by name finds).
    private func learnColumnFacts(of columns: [String]) -> [ColumnFacts]? {
        for place in columns.indices where columns[..<place].contains(columns[place]) { return nil }
        return columns.map { column in
            ColumnFacts(
                stringStaysText: serverKinds[column] == .string || table.nonTextColumns.contains(column),
                mayChange: column != table.primaryKey && !orderColumns.contains(column),
                kind: serverKinds[column])
        }
    }

    /// Whether `changed`, with `held`'s columns in their order (`facts` for each place), rewrites
    /// it: `true` when a value changes, `false` when every value is the server's own already,
    /// `nil` where the evaluation must answer; as the loop by name in
    /// ``answerInPlace(writes:pageRows:)`` decides, member by member.
    private static func rewrites(
        _ held: JSONObject, with changed: JSONObject, _ facts: [ColumnFacts], answer: OverlayCachedAnswer
    ) -> Bool? {
        var isRewritten = false
        for place in facts.indices {
            let value = changed.value(at: place)
            if case .string = value, !facts[place].stringStaysText,
                answer.mayReadAsAnotherKind(value, in: changed.keys[place])
            {
                return nil
            }
            let old = held.value(at: place)
            if old.isIdentical(to: value) { continue }
            // Every column is shown (the held row's are the answer's): its kind must stay.
            guard facts[place].mayChange, keepsKind(facts[place].kind, old, value) else {
                return nil
            }
            isRewritten = true
        }
        return isRewritten
    }

    /// Whether the server may store `value`, a change's value of `column`, as another kind:
    /// a string in a column of numbers or booleans, or one that reads as either in a column no
    /// row shows (what `OverlayRows.typed(_:)` reads as that kind, or leaves unsure).
    private func mayReadAsAnotherKind(_ value: JSONValue, in column: String) -> Bool {
        guard case .string(let text) = value, !table.nonTextColumns.contains(column) else { return false }
        switch serverKinds[column] {
        case .string?: return false
        case nil: return PostgRESTComparison.decimal(text) != nil || PostgRESTComparison.boolean(text) != nil
        case .number?, .boolean?: return true
        }
    }

    /// The body with the `rewritten` rows (by index) written from their values (or as their
    /// text, where writing them gives it) and every other row copied from `cachedBody`, and its
    /// rows as written (each a parse's row: its values, where its text lies); written as
    /// ``OverlayReadEvaluation/project(_:)`` writes them, each column's name as `names` holds
    /// it. `nil` where a rewritten row lacks a column shown (that evaluation notes it), or a
    /// cached row's columns are not the ones shown.
    private func bodyInPlace(
        _ cachedBody: String, rewritten: [Rewritten?], columns: [String], names shown: ShownNames
    ) -> (body: String, rows: [OverlayRows.Row])? {
        let (names, nameEnds) = (shown.bytes, shown.ends)
        // Everything written is the closure's own: a variable it captured and changed would be
        // checked for exclusive access at every byte appended.
        let made = cachedBody.withUTF8Bytes { cached -> (body: [UInt8], rows: [OverlayRows.Row])? in
            var out: [UInt8] = []
            out.reserveCapacity(cached.count + 128)
            var written: [OverlayRows.Row] = []
            written.reserveCapacity(rows.count)
            out.append(UInt8(ascii: "["))
            for index in rows.indices {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                let start = out.count
                guard let values = rewritten[index]?.values else {
                    guard let range = rows[index].cachedRange, Self.areNamed(rows[index].values, columns) else {
                        return nil
                    }
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: cached[range]))
                    written.append(Self.row(rows[index].values, at: index, range: start..<out.count))
                    continue
                }
                if let text = rewritten[index]?.text, Self.areNamed(values, columns) {
                    // Its members are the columns, in their order, and its text is theirs written.
                    text.withUTF8Bytes { out.append(contentsOf: $0) }
                    written.append(Self.row(values, at: index, range: start..<out.count))
                    continue
                }
                out.append(UInt8(ascii: "{"))
                if Self.areNamed(values, columns) {
                    // Its members are the columns, in their order: each written as it comes.
                    for (number, (_, value)) in values.members.enumerated() {
                        Self.write(value, named: number, from: names, ending: nameEnds, to: &out)
                    }
                    out.append(UInt8(ascii: "}"))
                    written.append(Self.row(values, at: index, range: start..<out.count))
                    continue
                }
                var shown = JSONObject(reservingCapacity: columns.count)
                for (number, column) in columns.enumerated() {
                    guard let value = values[column] else { return nil }
                    Self.write(value, named: number, from: names, ending: nameEnds, to: &out)
                    shown[column] = value
                }
                out.append(UInt8(ascii: "}"))
                written.append(Self.row(shown, at: index, range: start..<out.count))
            }
            out.append(UInt8(ascii: "]"))
            return (body: out, rows: written)
        }
        guard let made else { return nil }
        return (String(decoding: made.body, as: UTF8.self), made.rows)
    }

    /// Appends column `number`'s name (its bytes in `names`, which end at `ends`) and `value`,
    /// after a comma but for the first.
    private static func write(
        _ value: JSONValue, named number: Int, from names: [UInt8], ending ends: [Int], to out: inout [UInt8]
    ) {
        if number > 0 { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: names[(number > 0 ? ends[number - 1] : 0)..<ends[number]])
        value.write(to: &out)
    }

    /// Whether `values`'s keys are `columns`, byte for byte and in order (`project(_:)`'s
    /// test): at once when the two are one array, as the rows of one parse share theirs.
    private static func areNamed(_ values: JSONObject, _ columns: [String]) -> Bool {
        let keys = values.keys
        guard keys.count == columns.count else { return false }
        return isSameStorage(keys, columns) || zip(keys, columns).allSatisfy { $0.hasSameUTF8Bytes(as: $1) }
    }

    /// Whether `a` and `b` are one array's storage (the same names, both being alive): `false`
    /// says nothing.
    fileprivate static func isSameStorage(_ a: [String], _ b: [String]) -> Bool {
        a.count == b.count
            && a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { $0.baseAddress == a.baseAddress } }
    }

    /// A parse's row at `index`, whose text lies at `range` in its body.
    private static func row(_ values: JSONObject, at index: Int, range: Range<Int>) -> OverlayRows.Row {
        var row = OverlayRows.Row(values: values, cachedIndex: index, ordinal: index)
        row.cachedRange = range
        return row
    }
}

extension OverlayCachedAnswer {
    /// Whether two answers, and the parses kept of them, are the same: bodies byte for byte, and
    /// each parse the same parse of one body (``isSameParse(as:)``), with the same places by key
    /// (``positionsID``).
    static func same(
        _ one: (answer: OverlayAnswer, parse: OverlayCachedAnswer?),
        _ other: (answer: OverlayAnswer, parse: OverlayCachedAnswer?)
    ) -> Bool {
        guard one.answer == other.answer,
            one.answer.body.map({ Array($0.utf8) }) == other.answer.body.map({ Array($0.utf8) })
        else { return false }
        switch (one.parse, other.parse) {
        case (nil, nil): return true
        case (let a?, let b?): return a.isSameParse(as: b) && a.positionsID == b.positionsID
        default: return false
        }
    }

    /// Whether this and `other` are the same parse of one body, field by field (names and values
    /// byte for byte).
    func isSameParse(as other: OverlayCachedAnswer) -> Bool {
        func bytes(_ names: [String]?) -> [[UInt8]]? { names?.map { Array($0.utf8) } }
        guard rows.count == other.rows.count, positions == other.positions,
            bytes(cachedColumns) == bytes(other.cachedColumns), cachedRowsFollowOrder == other.cachedRowsFollowOrder,
            orderKinds == other.orderKinds, serverKinds == other.serverKinds, holdsEveryRow == other.holdsEveryRow,
            holdsEveryMatchingRow == other.holdsEveryMatchingRow, cachedCount == other.cachedCount,
            hasCache == other.hasCache, (settled == nil) == (other.settled == nil), reasons == other.reasons,
            cachedBody.map({ Array($0.utf8) }) == other.cachedBody.map({ Array($0.utf8) })
        else { return false }
        return zip(rows, other.rows).allSatisfy { x, y in
            JSONValue.object(x.values).isIdentical(to: .object(y.values)) && x.cachedRange == y.cachedRange
                && x.cachedIndex == y.cachedIndex && x.ordinal == y.ordinal && x.changed == y.changed
                && x.isOutside == y.isOutside
        }
    }
}
