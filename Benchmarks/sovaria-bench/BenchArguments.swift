import Foundation
import Sovaria
import SovariaWorkloads

/// The arguments of a `sovaria-bench` command, read one at a time, with typed values.
struct BenchArguments {
    private var iterator: IndexingIterator<[String]>
    let usage: String

    init(_ arguments: [String], usage: String) {
        iterator = arguments.makeIterator()
        self.usage = usage
    }

    mutating func next() -> String? { iterator.next() }

    /// The value after `flag`.
    mutating func value(_ flag: String) throws -> String {
        guard let next = iterator.next() else { throw BenchError.usage("\(flag) needs a value\n\(usage)") }
        return next
    }

    /// A positive whole number after `flag`.
    mutating func count(_ flag: String) throws -> Int {
        let text = try value(flag)
        guard let number = Int(text), number > 0 else {
            throw BenchError.usage("\(flag) needs a positive number, not \(text)\n\(usage)")
        }
        return number
    }

    /// `bytes` or `strings` after `flag`: the calls a replay reads values with.
    mutating func readAPI(_ flag: String) throws -> WorkloadDriver.ReadAPI {
        let text = try value(flag)
        guard let api = WorkloadDriver.ReadAPI(rawValue: text) else {
            throw BenchError.usage("\(flag) takes bytes or strings, not \(text)\n\(usage)")
        }
        return api
    }

    /// `synced` or `flushed` after `flag`.
    mutating func durability(_ flag: String) throws -> Durability {
        switch try value(flag) {
        case "synced": return .synced
        case "flushed": return .flushed
        case let other: throw BenchError.usage("\(flag) takes synced or flushed, not \(other)\n\(usage)")
        }
    }
}

/// Where a command writes its results besides the terminal: `--json`, `--markdown`, `--svg`.
struct BenchOutput {
    var jsonPath: String?
    var markdownPath: String?
    var svgPath: String?

    /// Reads `argument` if it is one of the output flags; `false` if it is not.
    mutating func parse(_ argument: String, _ arguments: inout BenchArguments) throws -> Bool {
        switch argument {
        case "--json": jsonPath = try arguments.value(argument)
        case "--markdown": markdownPath = try arguments.value(argument)
        case "--svg": svgPath = try arguments.value(argument)
        case "--help", "-h": throw BenchError.help(arguments.usage)
        default: return false
        }
        return true
    }

    /// Writes `report` where asked: JSON, Markdown (with `extraMarkdown` after the tables) and
    /// the SVG chart (or `svg`, when the command draws its own).
    func write(_ report: Report, extraMarkdown: [String] = [], svg: String? = nil) throws {
        if let jsonPath {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: jsonPath))
        }
        if let markdownPath {
            try (report.markdown() + "\n" + extraMarkdown.joined(separator: "\n"))
                .write(toFile: markdownPath, atomically: true, encoding: .utf8)
        }
        if let svgPath {
            try (svg ?? SVGChart.render(report)).write(toFile: svgPath, atomically: true, encoding: .utf8)
        }
    }
}
