import Foundation
import SovariaSync

extension OverlayEvaluation {
    // MARK: - Column types

    /// The kind of JSON value the server answers a column with, where a row it sent (or a
    /// default) shows one.
    enum ServerKind { case number, boolean, string }

    /// Learns the kinds of the columns in `values`, a row the server sent or a declared value.
    mutating func learnKinds(from values: JSONObject) {
        // Rows of one answer share their list of columns: once each has a kind, skip the rest.
        guard values.keys != columnsWithKinds else { return }
        defer { if values.keys.allSatisfy({ serverKinds[$0] != nil }) { columnsWithKinds = values.keys } }
        for column in values.keys where serverKinds[column] == nil {
            switch values[column] {
            case .number?: serverKinds[column] = .number
            case .bool?: serverKinds[column] = .boolean
            case .string?: serverKinds[column] = .string
            default: break
            }
        }
    }

    /// A write's values, read as the server will store them, and the columns whose stored value
    /// is not sure.
    struct TypedChanges {
        var values: JSONObject
        var unsure: [String] = []
    }

    /// `object`'s strings in columns the server answers with numbers or booleans, read as
    /// PostgreSQL reads them (`"10"` is 10, `" 007"` is 7, `"true"` and `"t"` are true); a string
    /// it might read otherwise or refuse (`"1.5"` in a column that may be an integer one, `"ten"`),
    /// or one that reads as a number or a boolean in a column no row shows, leaves the column
    /// unsure, and the answer inexact.
    mutating func typed(_ object: JSONObject) -> TypedChanges {
        var typed = TypedChanges(values: object)
        for column in object.keys where !table.nonTextColumns.contains(column) {
            guard case .string(let text)? = object[column] else { continue }
            switch serverKinds[column] {
            case .string?: continue
            case nil:
                // No row says what the column holds: a string that reads as a number or a boolean
                // is that in a column of that type, and text in a text column.
                guard PostgRESTComparison.decimal(text) != nil || PostgRESTComparison.boolean(text) != nil else {
                    continue
                }
            case .number?:
                if PostgRESTComparison.isWholeNumber(text), let number = PostgRESTComparison.decimal(text) {
                    typed.values[column] = .number(number.description)
                    continue
                }
            case .boolean?:
                if let flag = PostgRESTComparison.boolean(text) {
                    typed.values[column] = .bool(flag)
                    continue
                }
            }
            typed.unsure.append(column)
            note(.stringInTypedColumn(column))
        }
        return typed
    }
}
