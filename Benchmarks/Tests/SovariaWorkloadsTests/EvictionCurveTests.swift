import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaWorkloads

/// The miss-ratio curve of `sovaria-bench eviction-curve` (issue 36): one request stream and one
/// bound give the same hits on every engine, since they depend on the query cache's policy and
/// the stream only; the engines differ in what eviction costs them.
@Suite struct EvictionCurveTests {
    /// A zipfian stream of reads over 400 keys, sizes 200–2,000 bytes fixed per key.
    static func requests() throws -> CacheRequestStream<[TraceRecord]> {
        let spec = try WorkloadSpec.c.applying(["recordcount": "400", "operationcount": "3000"])
        let reads = try WorkloadStream(spec: spec, seed: 7, phases: [.run]).filter {
            if case .read = $0.operation { true } else { false }
        }
        return CacheRequestStream(reads, sizeOf: CacheRequestStream<[TraceRecord]>.hashedSize(in: 200...2_000))
    }

    static func workingSet() throws -> (keys: Int, bytes: Int, requests: Int) {
        var sizes: [String: Int] = [:]
        var count = 0
        for request in try requests() {
            sizes[request.key] = request.bytes
            count += 1
        }
        return (sizes.count, sizes.values.reduce(0, +), count)
    }

    static let engines = ["memory", "file", "sqlite", "lmdb", "leveldb", "postgres"]

    static func store(_ engine: String, in folder: TemporaryFolder) async throws -> any OfflineStore {
        let place = folder.child(engine)
        switch engine {
        case "memory": return MemoryOfflineStore()
        case "file": return FileOfflineStore(directory: place, durability: .flushed)
        case "sqlite": return try SQLiteOfflineStore(fileURL: place, durability: .flushed)
        case "lmdb": return try LMDBOfflineStore(directory: place, durability: .flushed)
        case "leveldb": return try LevelDBOfflineStore(directory: place, durability: .flushed)
        default:
            return try PostgresOfflineStore(
                connection: try await PostgresCluster.sharedDatabase(), table: PostgresCluster.tableName(for: place),
                durability: .flushed)
        }
    }

    @Test func theCurveIsTheSameOnEveryEngine() async throws {
        let (_, workingSet, requests) = try Self.workingSet()
        var hitsByBound: [Int: [String: [Int]]] = [:]
        for engine in Self.engines {
            for bound in [workingSet / 5, workingSet / 2] {
                let folder = try TemporaryFolder()
                let curve = EvictionCurve { try await Self.store(engine, in: folder) }
                let point = try await curve.point(try Self.requests(), boundBytes: bound)
                #expect(point.requests == requests)
                #expect(point.passes > 0, "\(engine) at \(bound) B: the bound is below the working set")
                hitsByBound[bound, default: [:]][engine] = [point.hits, point.hitBytes, point.evictedResponses]
            }
        }
        for (bound, byEngine) in hitsByBound {
            let memory = try #require(byEngine["memory"])
            for (engine, figures) in byEngine {
                #expect(figures == memory, "bound \(bound) B: \(engine) \(figures) vs memory \(memory)")
            }
        }
        let small = try #require(hitsByBound[workingSet / 5]?["memory"]?.first)
        let large = try #require(hitsByBound[workingSet / 2]?["memory"]?.first)
        #expect(small < large, "a larger bound keeps more of a zipfian stream: \(small) vs \(large)")
    }

    @Test func withoutABoundOnlyEachKeysFirstRequestMisses() async throws {
        let (keys, _, requests) = try Self.workingSet()
        let point = try await EvictionCurve { MemoryOfflineStore() }.point(try Self.requests(), boundBytes: nil)
        #expect(point.hits == requests - keys)
        #expect(point.passes == 0)
        #expect(point.missLatency.count == UInt64(keys))
    }

    @Test func aKeyKeepsOneSizeAcrossTheStream() {
        let records = [
            TraceRecord(nanoseconds: 0, operation: .insert(key: "k1", valueBytes: 500)),
            TraceRecord(nanoseconds: 1, operation: .read(key: "k1")),
            TraceRecord(nanoseconds: 2, operation: .read(key: "k2")),
            TraceRecord(nanoseconds: 3, operation: .phase(.run)),
            TraceRecord(nanoseconds: 4, operation: .fetch(key: "k2", valueBytes: 70)),
            TraceRecord(nanoseconds: 5, operation: .read(key: "k2")),
        ]
        let requests = Array(CacheRequestStream(records) { _ in 9 })
        #expect(
            requests == [
                CacheRequest(key: "k1", bytes: 500), CacheRequest(key: "k1", bytes: 500),
                CacheRequest(key: "k2", bytes: 9), CacheRequest(key: "k2", bytes: 70),
                CacheRequest(key: "k2", bytes: 70),
            ])
    }
}
