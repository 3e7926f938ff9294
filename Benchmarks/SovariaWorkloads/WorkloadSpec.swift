import Sovaria

/// A workload in YCSB's terms: how many records the load phase inserts, and the run phase's
/// operation mix, key choice, value sizes and scan lengths. ``WorkloadStream`` turns it, with a
/// seed, into the operations.
///
/// The core workloads ``a`` … ``f`` are YCSB's `workloads/workload[a-f]` files; a custom mix
/// comes from code, flags or a workload file (``parse(workloadFile:base:)``). Fields left unset
/// keep YCSB's `CoreWorkload` defaults.
///
/// ```swift
/// let spec = try WorkloadSpec.a.applying(["recordcount": "100000", "operationcount": "1000000"])
/// let stream = try WorkloadStream(spec: spec, seed: 42)
/// ```
package struct WorkloadSpec: Sendable, Equatable {
    /// A short name for reports (`"A"`, a file's name). Default: `"custom"`.
    package var name: String
    /// Records the load phase inserts: key numbers `0..<recordCount`. Default: 1,000, as YCSB's
    /// files.
    package var recordCount: Int
    /// Operations in the run phase; `nil` for no bound (the driver's maximum duration stops the
    /// run). Default: 1,000, as YCSB's files.
    package var operationCount: Int?
    /// How long the run may last (YCSB's `maxexecutiontime`); the bench passes it to
    /// ``WorkloadDriver``. Default: `nil`, no limit.
    package var maxExecutionTime: Duration?
    /// The share of each operation. Default: YCSB's, read 0.95 / update 0.05.
    package var mix: OperationMix
    /// How the key of a read, update, scan or read-modify-write is picked. Default: `.uniform`,
    /// YCSB's `CoreWorkload` default (every core workload sets its own).
    package var requestDistribution: KeyDistribution
    /// How keys are named. Default: `"user"` + FNV-64 of the key number, as YCSB.
    package var keys: WorkloadKeys
    /// The size of every inserted or written value. Default: 1,000 bytes (10 fields × 100).
    package var valueSize: ValueSize
    /// The number of entries a scan asks for, drawn uniformly. Default: 1…1,000, YCSB's.
    package var scanLengths: ClosedRange<Int>

    /// A workload with YCSB's `CoreWorkload` defaults for every field not given.
    package init(
        name: String = "custom",
        recordCount: Int = 1_000,
        operationCount: Int? = 1_000,
        maxExecutionTime: Duration? = nil,
        mix: OperationMix = OperationMix(),
        requestDistribution: KeyDistribution = .uniform,
        keys: WorkloadKeys = WorkloadKeys(),
        valueSize: ValueSize = .ycsbDefault,
        scanLengths: ClosedRange<Int> = 1...1_000
    ) {
        self.name = name
        self.recordCount = recordCount
        self.operationCount = operationCount
        self.maxExecutionTime = maxExecutionTime
        self.mix = mix
        self.requestDistribution = requestDistribution
        self.keys = keys
        self.valueSize = valueSize
        self.scanLengths = scanLengths
    }

    /// YCSB workload A, update heavy: read 0.5 / update 0.5, zipfian.
    package static let a = WorkloadSpec(
        name: "A", mix: OperationMix(read: 0.5, update: 0.5), requestDistribution: .zipfian)
    /// YCSB workload B, read mostly: read 0.95 / update 0.05, zipfian.
    package static let b = WorkloadSpec(
        name: "B", mix: OperationMix(read: 0.95, update: 0.05), requestDistribution: .zipfian)
    /// YCSB workload C, read only: read 1, zipfian.
    package static let c = WorkloadSpec(
        name: "C", mix: OperationMix(read: 1, update: 0), requestDistribution: .zipfian)
    /// YCSB workload D, read latest: read 0.95 / insert 0.05, latest.
    package static let d = WorkloadSpec(
        name: "D", mix: OperationMix(read: 0.95, update: 0, insert: 0.05), requestDistribution: .latest)
    /// YCSB workload E, short ranges: scan 0.95 / insert 0.05, zipfian, scan lengths uniform 1…100.
    package static let e = WorkloadSpec(
        name: "E", mix: OperationMix(read: 0, update: 0, insert: 0.05, scan: 0.95), requestDistribution: .zipfian,
        scanLengths: 1...100)
    /// YCSB workload F, read-modify-write: read 0.5 / read-modify-write 0.5, zipfian.
    package static let f = WorkloadSpec(
        name: "F", mix: OperationMix(read: 0.5, update: 0, readModifyWrite: 0.5), requestDistribution: .zipfian)

    /// The core workloads A–F, in order.
    package static let core: [WorkloadSpec] = [a, b, c, d, e, f]

    /// The core workload named `letter` (`"a"`…`"f"`, any case), or `nil`.
    package static func core(named letter: String) -> WorkloadSpec? {
        core.first { $0.name.lowercased() == letter.lowercased() }
    }

    /// Inserts the run phase is expected to make: YCSB's estimate `operationcount ×
    /// insertproportion` (a run with no operation bound counts as 10 × the records), used to size
    /// the zipfian key space.
    package var expectedInserts: UInt64 {
        let operations = Double(operationCount ?? max(10 * recordCount, 1_000_000))
        let share = mix.total > 0 ? mix.insert / mix.total : 0
        return UInt64(min(operations * share, Double(UInt64.max / 4)))
    }

    /// Throws the first reason this workload cannot run.
    package func validate() throws(WorkloadSpecError) {
        if recordCount < 0 {
            throw .invalidValue(
                key: "recordcount", value: String(recordCount), line: nil, expected: "a whole number ≥ 0")
        }
        if let operationCount, operationCount < 0 {
            throw .invalidValue(
                key: "operationcount", value: String(operationCount), line: nil, expected: "a whole number ≥ 0")
        }
        for (key, share) in zip(WorkloadSpec.proportionKeys, mix.sharesInYCSBOrder)
        where !(share >= 0 && share.isFinite) {
            throw .invalidValue(key: key, value: String(share), line: nil, expected: "a number ≥ 0")
        }
        let runs = operationCount.map { $0 > 0 } ?? true
        if runs && mix.total <= 0 { throw .noOperations }
        if runs && recordCount == 0 && mix.readsExistingKeys { throw .noRecordsToRead }
        if scanLengths.lowerBound < 1 {
            throw .invalidScanLengths(min: scanLengths.lowerBound, max: scanLengths.upperBound)
        }
        if case .uniform(let min, let max) = valueSize, min < 0 || min > max {
            throw .invalidValueSizes(min: min, max: max)
        }
        if case .fixed(let bytes) = valueSize, bytes < 0 {
            throw .invalidValueSizes(min: bytes, max: bytes)
        }
        if case .hotspot(let data, let operations) = requestDistribution {
            for (key, fraction) in [("hotspotdatafraction", data), ("hotspotopnfraction", operations)]
            where !(fraction >= 0 && fraction <= 1) {
                throw .invalidValue(key: key, value: String(fraction), line: nil, expected: "a number from 0 to 1")
            }
        }
        if keys.zeroPadding < 1 || keys.zeroPadding > StoreKey.maxUTF8Count {
            throw .invalidValue(
                key: "zeropadding", value: String(keys.zeroPadding), line: nil,
                expected: "a whole number from 1 to \(StoreKey.maxUTF8Count)")
        }
        if keys.maxKeyUTF8Count > StoreKey.maxUTF8Count {
            throw .keyPrefixTooLong(prefix: keys.prefix, maxUTF8Count: StoreKey.maxUTF8Count)
        }
    }

    /// The workload-file keys of ``mix``'s shares, in YCSB's order.
    static let proportionKeys = [
        "readproportion", "updateproportion", "insertproportion", "scanproportion", "readmodifywriteproportion",
    ]
}
