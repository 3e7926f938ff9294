@_spi(Benchmarks) import Sovaria
import Testing

@testable import SovariaWorkloads

@Suite struct WorkloadStreamTests {
    private func spec(_ base: WorkloadSpec, records: Int = 500, operations: Int = 5_000) -> WorkloadSpec {
        var spec = base
        spec.recordCount = records
        spec.operationCount = operations
        return spec
    }

    @Test func sameSeedGivesTheSameStream() throws {
        for base in WorkloadSpec.core {
            let first = Array(try WorkloadStream(spec: spec(base), seed: 42))
            let second = Array(try WorkloadStream(spec: spec(base), seed: 42))
            #expect(first == second, "\(base.name)")
            // And iterating one stream value twice.
            let stream = try WorkloadStream(spec: spec(base), seed: 42)
            #expect(Array(stream) == Array(stream))
        }
    }

    @Test func differentSeedsGiveDifferentStreams() throws {
        for base in WorkloadSpec.core {
            let first = Array(try WorkloadStream(spec: spec(base), seed: 1))
            let second = Array(try WorkloadStream(spec: spec(base), seed: 2))
            #expect(first != second, "\(base.name)")
        }
    }

    @Test func streamIsLazyForTenMillionOperations() throws {
        // The stream's count is known without making it; taking a few records costs a few.
        let stream = try WorkloadStream(spec: spec(.a, records: 1_000, operations: 10_000_000), seed: 3)
        #expect(stream.recordCount == 1 + 1_000 + 1 + 10_000_000)
        var iterator = stream.makeIterator()
        for _ in 0..<1_010 { _ = iterator.next() }
        #expect(iterator.insertedCount == 1_000)
    }

    @Test func unboundedRunHasNoCount() throws {
        var unbounded = spec(.b)
        unbounded.operationCount = nil
        let stream = try WorkloadStream(spec: unbounded, seed: 4, phases: [.run])
        #expect(stream.recordCount == nil)
        var taken = 0
        for _ in stream.prefix(100_000) { taken += 1 }
        #expect(taken == 100_000)
    }

    @Test func runOnlyStreamAssumesLoadedRecords() throws {
        let records = Array(try WorkloadStream(spec: spec(.c, records: 100, operations: 50), seed: 5, phases: [.run]))
        #expect(records.first?.operation == .phase(.run))
        #expect(records.count == 51)
        let loaded = Set((0..<100).map { WorkloadKeys().key(keyNumber: UInt64($0)) })
        for case .read(let key) in records.map(\.operation) { #expect(loaded.contains(key)) }
    }

    @Test func closedLoopRecordsAreAllDueAtZero() throws {
        for record in try WorkloadStream(spec: spec(.a, records: 10, operations: 10), seed: 6) {
            #expect(record.nanoseconds == 0)
        }
    }

    @Test func openLoopSpacesOperationsAtTheTargetRate() throws {
        let records = Array(
            try WorkloadStream(
                spec: spec(.a, records: 3, operations: 4), seed: 6, timing: .openLoop(operationsPerSecond: 1_000)))
        // Operations every millisecond across both phases; a phase mark has its next operation's time.
        #expect(records.map(\.nanoseconds) == [0, 0, 1, 2, 3, 3, 4, 5, 6].map { UInt64($0) * 1_000_000 })
        #expect(throws: WorkloadSpecError.self) {
            try WorkloadStream(spec: .a, seed: 1, timing: .openLoop(operationsPerSecond: 0))
        }
    }

    @Test func keysAreValidStoreKeysUnderThePrefix() throws {
        var custom = spec(.e)
        custom.keys = WorkloadKeys(prefix: "app:bench:", insertOrder: .ordered, zeroPadding: 12)
        for record in try WorkloadStream(spec: custom, seed: 8) {
            switch record.operation {
            case .insert(let key, _), .read(let key), .update(let key, _):
                try StoreKey.validate(key)
                #expect(key.hasPrefix("app:bench:"))
                #expect(key.utf8.count == "app:bench:".utf8.count + 12)
            case .scan(let prefix, let after, _):
                #expect(prefix == "app:bench:")
                try StoreKey.validate(after ?? "")
            default:
                break
            }
        }
        var long = spec(.a)
        long.keys.prefix = String(repeating: "k", count: 500)
        #expect(throws: WorkloadSpecError.keyPrefixTooLong(prefix: long.keys.prefix, maxUTF8Count: 511)) {
            try WorkloadStream(spec: long, seed: 1)
        }
    }

    @Test func orderedInsertsNameKeysByNumber() {
        let keys = WorkloadKeys(prefix: "user", insertOrder: .ordered, zeroPadding: 5)
        #expect(keys.key(keyNumber: 42) == "user00042")
        #expect(keys.key(keyNumber: 1_234_567) == "user1234567")
        #expect(WorkloadKeys().key(keyNumber: 42) == "user" + String(YCSBHash.fnv64(42)))
    }

    @Test func scanStartsAtItsStartKey() async throws {
        // `after` sorts just below the start key: the start key is the scan's first entry.
        for keys in [
            WorkloadKeys(), WorkloadKeys(insertOrder: .ordered), WorkloadKeys(insertOrder: .ordered, zeroPadding: 4),
        ] {
            let store = MemoryOfflineStore()
            let numbers: [UInt64] = Array(0..<200)
            for number in numbers { try await store.set(keys.key(keyNumber: number), "v") }
            let sorted = numbers.map { keys.key(keyNumber: $0) }.sorted {
                Array($0.utf8).lexicographicallyPrecedes($1.utf8)
            }
            for number in [0, 9, 10, 19, 100, 199] as [UInt64] {
                let start = keys.key(keyNumber: number)
                let page = try await store.entries(keys.prefix, after: keys.scanAfter(keyNumber: number), limit: 3)
                let position = sorted.firstIndex(of: start)!
                #expect(page.map(\.key) == Array(sorted[position..<min(position + 3, sorted.count)]), "\(start)")
            }
        }
    }
}
