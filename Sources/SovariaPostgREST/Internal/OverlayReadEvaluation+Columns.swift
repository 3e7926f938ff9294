import SovariaPlumbing
import SovariaSync

// MARK: - Columns

extension OverlayReadEvaluation {
    /// The rows at `shown` (indices in `rows`) as the read's `select` shows them, as JSON text. A
    /// cached row no write touched, whose columns are the ones shown in the same order, is its
    /// text in the cached body. Each row is kept in ``writtenRows`` as written, with its range.
    mutating func project(_ shown: [Int]) -> String {
        if let items = query.selectItems { return project(shown, items: items) }
        var named: [String]
        if let selected = query.columns {
            named = selected
        } else if let cachedColumns = cached.cachedColumns {
            named = cachedColumns
        } else if let all = cached.table.columns {
            named = all
        } else {
            note(.columnsUnknown)
            var seen: [String] = []
            for index in shown { for key in rows[index].values.keys where !seen.contains(key) { seen.append(key) } }
            named = seen
        }
        // A column named twice is shown once (a row's few columns: compared as the row's own
        // keys are, not hashed).
        var unique: [String] = []
        unique.reserveCapacity(named.count)
        for column in named where !unique.contains(column) { unique.append(column) }
        let columns = unique
        let keepsRows = keepsWrittenRows
        let cachedText = cached.cachedBody ?? ""
        let rows = rows
        // Everything written is the closure's own: a variable it captured and changed would be
        // checked for exclusive access at every byte appended.
        let (out, written, missing) = cachedText.withUTF8Bytes { cached in
            var missing: [String] = []
            var out: [UInt8] = []
            out.reserveCapacity(cached.count + 128)
            var written: [OverlayCachedAnswer.WrittenRow] = []
            if keepsRows { written.reserveCapacity(shown.count) }
            out.append(UInt8(ascii: "["))
            for (position, index) in shown.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                let start = out.count
                // Fields read in place: copying the row would retain each of its parts.
                if let range = rows[index].cachedRange, rows[index].changed.isEmpty,
                    rows[index].values.keys == columns
                {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: cached[range]))
                    if keepsRows {
                        written.append(.init(values: rows[index].values, range: start..<out.count, source: index))
                    }
                    continue
                }
                let row = rows[index]
                // The row's values as written: its own when its names are the columns' bytes.
                let named =
                    row.values.keys.count == columns.count
                    && zip(row.values.keys, columns).allSatisfy { $0.hasSameUTF8Bytes(as: $1) }
                let projects = keepsRows && !named
                var values = keepsRows && named ? row.values : JSONObject(reservingCapacity: columns.count)
                out.append(UInt8(ascii: "{"))
                var first = true
                for column in columns {
                    guard let value = row.values[column] else {
                        if !missing.contains(column) { missing.append(column) }
                        continue
                    }
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    JSONValue.writeString(column, to: &out)
                    out.append(UInt8(ascii: ":"))
                    value.write(to: &out)
                    if projects { values[column] = value }
                }
                out.append(UInt8(ascii: "}"))
                if keepsRows { written.append(.init(values: values, range: start..<out.count, source: index)) }
            }
            out.append(UInt8(ascii: "]"))
            return (out, written, missing)
        }
        if !missing.isEmpty {
            note(.columnsNotSet(missing))
        }
        writtenRows = keepsRows && missing.isEmpty ? written : nil
        return String(decoding: out, as: UTF8.self)
    }

    /// The rows at `shown` under a `select` with aliases, casts or JSON paths. A cached row
    /// holds the server's projection already: untouched, it is its text; one a write changed
    /// cannot be projected again (its columns are the answer's names, not the table's).
    private mutating func project(_ shown: [Int], items: [PostgRESTQuery.SelectItem]) -> String {
        var out: [UInt8] = [UInt8(ascii: "[")]
        let cachedText = Array((cached.cachedBody ?? "").utf8)
        var missing: [String] = []
        for (position, index) in shown.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            let row = rows[index]
            if row.cachedIndex != nil {
                if let range = row.cachedRange, row.changed.isEmpty {
                    out.append(contentsOf: cachedText[range])
                } else {
                    note(
                        .unsupportedReadFeature("a select with aliases, casts or JSON paths over a row a write changed")
                    )
                    JSONValue.object(row.values).write(to: &out)
                }
                continue
            }
            out.append(UInt8(ascii: "{"))
            for (number, item) in items.enumerated() {
                if number > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(item.name, to: &out)
                out.append(UInt8(ascii: ":"))
                guard let value = row.values[item.column] else {
                    if !missing.contains(item.column) { missing.append(item.column) }
                    out.append(contentsOf: "null".utf8)
                    continue
                }
                selected(item, from: value).write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        if !missing.isEmpty { note(.columnsNotSet(missing)) }
        return String(decoding: out, as: UTF8.self)
    }

    /// A select item's value from its column's: the JSON path followed (`->` keeps JSON, `->>`
    /// gives text), then the cast. Casts written exactly: `::text` of a text, number or boolean
    /// value (PostgreSQL's text of a number is the text its JSON has), and whole-number casts of
    /// integers; any other notes ``InexactReason/castNotEvaluated(_:)``.
    private mutating func selected(_ item: PostgRESTQuery.SelectItem, from columnValue: JSONValue) -> JSONValue {
        var value = columnValue
        for step in item.path {
            // A path on a text column is PostgreSQL's error; on a JSON string, null.
            if case .string = value, !cached.comparison.nonTextColumns.contains(item.column) {
                note(.castNotEvaluated(item.column + "->" + step.key))
                return .null
            }
            switch value {
            case .object(let object): value = object[step.key] ?? .null
            case .array(let elements):
                guard let position = Int(step.key) else {
                    value = .null
                    break
                }
                let index = position < 0 ? elements.count + position : position
                value = elements.indices.contains(index) ? elements[index] : .null
            default: value = .null
            }
            if step.asText {
                switch value {
                case .null, .string: break
                case .number(let text): value = .string(text)
                case .bool(let flag): value = .string(flag ? "true" : "false")
                case .array, .object:
                    // jsonb's text of a container has its own spacing.
                    note(.castNotEvaluated(item.column + "->>" + step.key))
                }
            }
        }
        guard let cast = item.cast?.lowercased() else { return value }
        let isText = item.path.isEmpty ? !cached.comparison.nonTextColumns.contains(item.column) : true
        switch (cast, value) {
        case (_, .null): return .null
        case ("text", .string) where isText: return value
        case ("text", .number(let text)) where isText: return .string(text)
        case ("text", .bool(let flag)): return .string(flag ? "true" : "false")
        case ("int", .number(let text)), ("integer", .number(let text)), ("int4", .number(let text)),
            ("int8", .number(let text)), ("bigint", .number(let text)):
            if PostgRESTComparison.plainInteger(text) != nil { return value }
        default: break
        }
        note(.castNotEvaluated(item.column + "::" + cast))
        return value
    }
}
