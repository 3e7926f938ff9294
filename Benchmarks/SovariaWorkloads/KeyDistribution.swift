/// How a workload picks the key of a read, update, scan or read-modify-write: YCSB's
/// `requestdistribution`.
package enum KeyDistribution: Sendable, Equatable {
    /// Every record loaded before the run equally likely (YCSB's `uniform`: keys inserted during
    /// the run are not picked).
    case uniform
    /// YCSB's `zipfian`: a ``ScrambledZipfianGenerator`` over the loaded records plus twice the
    /// expected inserts, a pick beyond the last inserted key drawn again. The popular keys are
    /// spread over the key space and stay the same as inserts grow it.
    case zipfian
    /// Gray's zipfian (``ZipfianGenerator``) on key numbers directly: key number 0 is the most
    /// popular, then 1, and so on, over every key inserted so far. With ordered inserts the hot
    /// keys sit together at the start of the key range. Not one of YCSB's request distributions.
    case unscrambledZipfian
    /// YCSB's `latest` (`SkewedLatestGenerator`): a zipfian over how recently a key was
    /// inserted, the newest the most popular.
    case latest
    /// YCSB's `hotspot`: `hotOperationFraction` of the picks go uniformly to the first
    /// `hotDataFraction` of the loaded records, the rest uniformly to the others.
    case hotspot(hotDataFraction: Double, hotOperationFraction: Double)

    /// YCSB's default hot set: 20% of the data gets 80% of the operations.
    package static let defaultHotspot = KeyDistribution.hotspot(hotDataFraction: 0.2, hotOperationFraction: 0.8)

    /// The `requestdistribution` value that names this distribution in a workload file.
    package var propertyValue: String {
        switch self {
        case .uniform: "uniform"
        case .zipfian: "zipfian"
        case .unscrambledZipfian: "unscrambledzipfian"
        case .latest: "latest"
        case .hotspot: "hotspot"
        }
    }

    /// Every `requestdistribution` value a workload file may use (`scrambledzipfian` is another
    /// name of `zipfian`, which YCSB already scrambles).
    package static let propertyValues = [
        "zipfian", "scrambledzipfian", "unscrambledzipfian", "uniform", "latest", "hotspot",
    ]
}

/// Picks key numbers by a ``KeyDistribution``, as YCSB's `CoreWorkload.nextKeynum` does.
///
/// - Important: A value type, not thread safe; each stream owns one.
package struct KeyChooser: Sendable {
    private enum Generator {
        case uniform(count: UInt64)
        case scrambled(ScrambledZipfianGenerator)
        case zipfian(ZipfianGenerator)
        case latest(ZipfianGenerator)
        case hotspot(hotCount: UInt64, coldCount: UInt64, hotOperationFraction: Double)
    }

    private var generator: Generator

    /// A chooser for a store loaded with `recordCount` records (key numbers `0..<recordCount`)
    /// that expects about `expectedInserts` more during the run.
    ///
    /// A `recordCount` of 0 counts as 1: such a stream inserts only and never asks for a key
    /// (``WorkloadSpec/validate()`` refuses reads without records), and an insert-only stream
    /// still makes its chooser.
    package init(distribution: KeyDistribution, recordCount: UInt64, expectedInserts: UInt64) {
        switch distribution {
        case .uniform:
            generator = .uniform(count: max(1, recordCount))
        case .zipfian:
            // YCSB sizes the key space for the inserts it expects (×2, its "fudge factor") so the
            // popular keys do not move as the store grows; picks of keys not yet inserted are
            // drawn again.
            let extra = min(expectedInserts, UInt64.max / 4) * 2
            generator = .scrambled(
                ScrambledZipfianGenerator(itemCount: max(1, min(recordCount, UInt64.max / 2) + extra)))
        case .unscrambledZipfian:
            generator = .zipfian(ZipfianGenerator(itemCount: max(1, recordCount)))
        case .latest:
            generator = .latest(ZipfianGenerator(itemCount: max(1, recordCount)))
        case .hotspot(let hotDataFraction, let hotOperationFraction):
            let records = max(1, recordCount)
            let hotCount = UInt64(Double(records) * min(max(hotDataFraction, 0), 1))
            generator = .hotspot(
                hotCount: hotCount, coldCount: records - hotCount, hotOperationFraction: hotOperationFraction)
        }
    }

    /// The next key number, among the `insertedCount` keys `0..<insertedCount` inserted so far.
    ///
    /// - Important: `insertedCount` must be at least 1.
    @inline(__always)
    package mutating func nextKeyNumber(insertedCount: UInt64, using random: inout WorkloadRandom) -> UInt64 {
        switch generator {
        case .uniform(let count):
            return random.next(below: count)
        case .scrambled(var scrambled):
            // The generator is a value inside the enum: take it out, draw, put it back.
            defer { generator = .scrambled(scrambled) }
            while true {
                let keyNumber = scrambled.next(using: &random)
                if keyNumber < insertedCount { return keyNumber }
            }
        case .zipfian(var zipfian):
            defer { generator = .zipfian(zipfian) }
            return zipfian.next(itemCount: insertedCount, using: &random)
        case .latest(var zipfian):
            // SkewedLatestGenerator: the newest key minus a zipfian rank over every key so far.
            // YCSB's starts at the count minus one, so its key 0 is never picked; here every
            // inserted key can be.
            defer { generator = .latest(zipfian) }
            return insertedCount - 1 - zipfian.next(itemCount: insertedCount, using: &random)
        case .hotspot(let hotCount, let coldCount, let hotOperationFraction):
            let hot = coldCount == 0 || (hotCount > 0 && random.nextUnitDouble() < hotOperationFraction)
            return hot ? random.next(below: hotCount) : hotCount + random.next(below: coldCount)
        }
    }
}
