import Foundation

/// The command line of `sovaria-bench`.
struct BenchOptions {
    /// How big a run is: every section's sample sizes follow it.
    enum Scale: String {
        /// Seconds: the smoke test's run (`--quick`).
        case quick
        /// About two minutes on a 2-core machine: `make bench`, the default.
        case standard
        /// The sizes the tables in docs/bench come from (`--full`, `make bench-full`): tens of minutes.
        case full
    }

    var scale = Scale.standard
    var keyCount = 5_000
    var valueBytes = 1_024
    var repeats = 2
    var quick: Bool { scale == .quick }
    var jsonPath: String?
    var markdownPath: String?
    var svgPath: String?
    var sections: Set<String> = []  // empty: all
    var engines: Set<String> = []  // empty: all
    /// The PostgreSQL server to measure; `nil`: a throwaway cluster on this machine.
    var postgresConninfo: String?
    var folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-bench-\(getpid())")
    /// The C baseline program (Benchmarks/c-baseline, built by `make bench`): `--c-baseline PATH`,
    /// else the `SOVARIA_C_BASELINE` environment variable; `nil`: none given.
    var cBaselinePath: String? = ProcessInfo.processInfo.environment["SOVARIA_C_BASELINE"].flatMap {
        $0.isEmpty ? nil : $0
    }

    static let usage = """
        usage: sovaria-bench [--quick | --full] [--count N] [--value-size BYTES] [--repeats N]
                             [--section NAME]... [--engine NAME]... [--dir FOLDER]
                             [--json FILE] [--markdown FILE] [--svg FILE] [--postgres CONNINFO]
                             [--c-baseline PROGRAM]
          (default: a run of about two minutes: 5,000 keys (the file store 300), 2 repeats, smaller
           section workloads)
          --quick        a small run (2,000 keys, 2 repeats) that finishes in seconds
          --full         the full run the tables in docs/bench come from (100,000 keys, 5 repeats)
          --count N      keys per store (default 5000; 100000 with --full)
          --value-size   bytes per value (default 1024)
          --section      run only these sections: \(BenchSection.allNames.joined(separator: ", "))
          --engine       run only these engines (memory, file, sqlite, lmdb, leveldb, postgres,
                         encrypted(sqlite), checksummed(sqlite), … for each persistent engine)
          --postgres     the libpq conninfo of the server to measure (default: a throwaway
                         cluster on this machine with fsync on, over its Unix socket; with a
                         server of yours, tables named bench_* are left in its database)
          --dir FOLDER   where the stores are made (default: a temporary folder, removed after)
          --c-baseline   the C baseline program (Benchmarks/c-baseline; `make bench` builds it and
                         passes it; default: $SOVARIA_C_BASELINE): the store section runs it on
                         the same workload and prints each engine's ratio against C as well
        """

    static func parse(_ arguments: [String]) throws -> BenchOptions {
        var options = BenchOptions()
        var iterator = arguments.makeIterator()
        func value(_ flag: String) throws -> String {
            guard let next = iterator.next() else { throw BenchError.usage("\(flag) needs a value") }
            return next
        }
        func number(_ flag: String) throws -> Int {
            guard let parsed = Int(try value(flag)), parsed > 0 else {
                throw BenchError.usage("\(flag) needs a number")
            }
            return parsed
        }
        while let argument = iterator.next() {
            switch argument {
            case "--quick":
                options.scale = .quick
                options.keyCount = 2_000
                options.repeats = 2
            case "--full":
                options.scale = .full
                options.keyCount = 100_000
                options.repeats = 5
            case "--count": options.keyCount = try number(argument)
            case "--value-size": options.valueBytes = try number(argument)
            case "--repeats": options.repeats = try number(argument)
            case "--json": options.jsonPath = try value(argument)
            case "--markdown": options.markdownPath = try value(argument)
            case "--svg": options.svgPath = try value(argument)
            case "--section": options.sections.insert(try value(argument))
            case "--engine": options.engines.insert(try value(argument))
            case "--postgres": options.postgresConninfo = try value(argument)
            case "--c-baseline": options.cBaselinePath = try value(argument)
            case "--dir": options.folder = URL(fileURLWithPath: try value(argument), isDirectory: true)
            case "--help", "-h": throw BenchError.help(usage)
            default: throw BenchError.usage("unknown option \(argument)")
            }
        }
        return options
    }

    /// The value for this run's scale.
    func pick<Value>(quick: Value, standard: Value, full: Value) -> Value {
        switch scale {
        case .quick: quick
        case .standard: standard
        case .full: full
        }
    }

    /// An engine's key limit at this run's scale (never more than the key count asked for).
    func limit(_ maxKeys: (full: Int, standard: Int, quick: Int)) -> Int {
        min(keyCount, pick(quick: maxKeys.quick, standard: maxKeys.standard, full: maxKeys.full))
    }

    func runs(_ section: BenchSection) -> Bool { sections.isEmpty || sections.contains(section.rawValue) }
    func runs(engine: String) -> Bool { engines.isEmpty || engines.contains(engine) }
}

enum BenchError: Error, CustomStringConvertible {
    case usage(String)
    /// `--help`: the command's usage, printed to standard output.
    case help(String)
    case failed(String)
    /// `eviction-curve`: the stores had different hits at these bounds (percent of the working
    /// set). The curve depends on the cache's policy and the stream only, so one engine answered
    /// wrongly: a defect.
    case hitsDiffer(boundPercents: [Double])

    var description: String {
        switch self {
        case .usage(let message): "\(message)\n\(BenchOptions.usage)"
        case .help(let usage): usage
        case .failed(let message): message
        case .hitsDiffer(let percents):
            "eviction-curve: the stores' hits differ at "
                + percents.map { String(format: "%g%%", $0) }.joined(separator: ", ")
                + " of the working set. The curve is the query cache's policy on one stream and must be the same on "
                + "every engine: one of them answered a read differently (a defect in it or in the cache)."
        }
    }
}
