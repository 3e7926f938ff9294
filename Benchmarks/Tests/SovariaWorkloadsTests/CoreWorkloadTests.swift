@_spi(Benchmarks) import Sovaria
import Testing

@testable import SovariaWorkloads

/// YCSB's core workloads A–F as their `workloads/workload[a-f]` files define them.
@Suite struct CoreWorkloadTests {
    /// The run phase's operations of `spec` with `operations` operations.
    private func runOperations(
        _ spec: WorkloadSpec, operations: Int = 20_000, seed: UInt64 = 7
    ) throws
        -> [TraceOperation]
    {
        var spec = spec
        spec.operationCount = operations
        let stream = try WorkloadStream(spec: spec, seed: seed, phases: [.run])
        return Array(stream.dropFirst().map(\.operation))
    }

    private func shares(_ operations: [TraceOperation]) -> [OperationKind: Double] {
        var counts: [OperationKind: Int] = [:]
        for operation in operations { counts[OperationKind(operation)!, default: 0] += 1 }
        return counts.mapValues { Double($0) / Double(operations.count) }
    }

    private func expectShares(_ spec: WorkloadSpec, _ expected: [OperationKind: Double]) throws {
        let observed = try shares(runOperations(spec))
        #expect(Set(observed.keys) == Set(expected.keys), "\(spec.name): \(observed)")
        for (kind, share) in expected {
            // 20,000 draws: a share's standard deviation is at most 0.0036.
            #expect(abs((observed[kind] ?? 0) - share) < 0.015, "\(spec.name) \(kind): \(observed[kind] ?? 0)")
        }
    }

    @Test func workloadAIsHalfReadsHalfUpdatesZipfian() throws {
        #expect(WorkloadSpec.a.requestDistribution == .zipfian)
        try expectShares(.a, [.read: 0.5, .update: 0.5])
    }

    @Test func workloadBIsReadMostlyZipfian() throws {
        #expect(WorkloadSpec.b.requestDistribution == .zipfian)
        try expectShares(.b, [.read: 0.95, .update: 0.05])
    }

    @Test func workloadCIsReadOnlyZipfian() throws {
        #expect(WorkloadSpec.c.requestDistribution == .zipfian)
        try expectShares(.c, [.read: 1])
    }

    @Test func workloadDReadsLatestWithInserts() throws {
        #expect(WorkloadSpec.d.requestDistribution == .latest)
        try expectShares(.d, [.read: 0.95, .insert: 0.05])
    }

    @Test func workloadEScansOneToAHundredWithInserts() throws {
        #expect(WorkloadSpec.e.requestDistribution == .zipfian)
        try expectShares(.e, [.scan: 0.95, .insert: 0.05])
        var lengths = Set<Int>()
        for case .scan(let prefix, let after, let limit) in try runOperations(.e) {
            #expect(prefix == "user")
            #expect(after != nil)
            #expect((1...100).contains(limit))
            lengths.insert(limit)
        }
        // Uniform over 1…100: every length shows up in 19,000 scans.
        #expect(lengths == Set(1...100))
    }

    @Test func workloadFIsHalfReadsHalfReadModifyWrites() throws {
        #expect(WorkloadSpec.f.requestDistribution == .zipfian)
        try expectShares(.f, [.read: 0.5, .readModifyWrite: 0.5])
    }

    @Test func coreWorkloadsUseYCSBsRecordShape() {
        for spec in WorkloadSpec.core {
            #expect(spec.recordCount == 1_000)
            #expect(spec.operationCount == 1_000)
            #expect(spec.valueSize == .fixed(bytes: 1_000))
            #expect(spec.keys == WorkloadKeys(prefix: "user", insertOrder: .hashed, zeroPadding: 1))
        }
        #expect(WorkloadSpec.core.map(\.name) == ["A", "B", "C", "D", "E", "F"])
        #expect(WorkloadSpec.core(named: "e")?.scanLengths == 1...100)
    }

    @Test func insertsGetNewKeysNeverReadBeforeTheirInsert() throws {
        // Workload D over a small store: every run insert is a key the stream never named
        // before, and every read names a key loaded or inserted earlier in the stream.
        var spec = WorkloadSpec.d
        spec.recordCount = 200
        spec.operationCount = 20_000
        var written = Set<String>()
        var inserts = 0
        var readsOfRecentInserts = 0
        var recent: [String] = []
        for record in try WorkloadStream(spec: spec, seed: 31) {
            switch record.operation {
            case .insert(let key, _):
                #expect(!written.contains(key), "insert of an existing key \(key)")
                written.insert(key)
                recent.append(key)
                inserts += 1
            case .read(let key):
                #expect(written.contains(key), "read of \(key) before its insert")
                if recent.suffix(50).contains(key) { readsOfRecentInserts += 1 }
            case .phase:
                break
            default:
                Issue.record("D has no \(record.operation)")
            }
        }
        #expect(inserts > 200 + 800)
        // Latest: most reads go to the 50 newest keys (about 60% by the closed form).
        #expect(readsOfRecentInserts > 19_000 / 2)
    }

    @Test func loadPhaseInsertsEveryRecordOnce() throws {
        var spec = WorkloadSpec.a
        spec.recordCount = 5_000
        spec.operationCount = 10
        let records = Array(try WorkloadStream(spec: spec, seed: 1))
        #expect(records.first?.operation == .phase(.load))
        #expect(records[5_001].operation == .phase(.run))
        #expect(records.count == 5_000 + 10 + 2)
        var keys = Set<String>()
        for record in records[1...5_000] {
            guard case .insert(let key, let bytes) = record.operation else {
                Issue.record("load holds \(record.operation)")
                continue
            }
            #expect(bytes == 1_000)
            keys.insert(key)
        }
        #expect(keys.count == 5_000)
        #expect(keys.contains("user" + String(YCSBHash.fnv64(0))))
    }
}
