/// Why a workload (a file, flags or a ``WorkloadSpec`` built in code) cannot run. Each case
/// names the line or key at fault; ``description`` says what is accepted.
package enum WorkloadSpecError: Error, Equatable, CustomStringConvertible {
    /// Line `line` (counting from 1) is neither a comment, blank, nor `key=value`.
    case malformedLine(line: Int, text: String)
    /// `key` is not a workload property; `accepted` lists those that are.
    case unknownKey(key: String, line: Int?, accepted: [String])
    /// `value` is not a valid value of `key`; `expected` says what is.
    case invalidValue(key: String, value: String, line: Int?, expected: String)
    /// `key` needs `requiredKey` beside it (a minimum value size without a maximum).
    case missingKey(key: String, requiredKey: String)
    /// `keys` set the value size two ways (fields and minimum/maximum bytes).
    case conflictingKeys([String])
    /// Every operation share is 0 while the run has operations.
    case noOperations
    /// The run reads existing keys but no record is loaded or inserted before them.
    case noRecordsToRead
    /// The shortest scan is longer than the longest, or shorter than 1.
    case invalidScanLengths(min: Int, max: Int)
    /// The smallest value is larger than the largest, or negative.
    case invalidValueSizes(min: Int, max: Int)
    /// Keys made with this prefix would pass the stores' limit of 511 UTF-8 bytes.
    case keyPrefixTooLong(prefix: String, maxUTF8Count: Int)

    /// What went wrong and what to do.
    package var description: String {
        switch self {
        case .malformedLine(let line, let text):
            return "Line \(line) of the workload file is not `key=value` or a `#` comment: \(text)"
        case .unknownKey(let key, let line, let accepted):
            return
                "\(Self.place(line))Unknown workload property `\(key)`; accepted: \(accepted.joined(separator: ", "))."
        case .invalidValue(let key, let value, let line, let expected):
            return "\(Self.place(line))`\(key)=\(value)` is not valid: \(key) takes \(expected)."
        case .missingKey(let key, let requiredKey):
            return "`\(key)` needs `\(requiredKey)` as well."
        case .conflictingKeys(let keys):
            return "Set the value size one way: \(keys.joined(separator: " and ")) cannot be used together "
                + "(fieldcount × fieldlength for a fixed size, minvaluebytes/maxvaluebytes for a uniform one)."
        case .noOperations:
            return "Every operation proportion is 0: give readproportion, updateproportion, insertproportion, "
                + "scanproportion or readmodifywriteproportion a positive share."
        case .noRecordsToRead:
            return "recordcount is 0 but the run reads, updates or scans existing keys: load at least one record."
        case .invalidScanLengths(let min, let max):
            return "Scan lengths \(min)…\(max) are empty: minscanlength must be at least 1 and at most maxscanlength."
        case .invalidValueSizes(let min, let max):
            return "Value sizes \(min)…\(max) are empty: minvaluebytes must be at least 0 and at most maxvaluebytes."
        case .keyPrefixTooLong(let prefix, let maxUTF8Count):
            return "Key prefix `\(prefix)` makes keys longer than \(maxUTF8Count) UTF-8 bytes: shorten it."
        }
    }

    private static func place(_ line: Int?) -> String {
        line.map { "Line \($0): " } ?? ""
    }
}
