import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaCache
import Synchronization

/// One request to a cache: the answer's key and its size.
package struct CacheRequest: Sendable, Equatable {
    /// The query the answer is cached under.
    package var key: String
    /// The answer's body size in bytes (what a miss fetches and the bound counts).
    package var bytes: Int

    package init(key: String, bytes: Int) {
        self.key = key
        self.bytes = bytes
    }
}

/// The requests of a trace: each operation on a key asks for it once. Sizes come from the
/// operation (`.fetch`, `.insert`, `.update`, `.readModifyWrite`), else from the last size the
/// stream gave that key, else `sizeOf(key)`, so one key keeps one size as a cache would see.
package struct CacheRequestStream<Records: Sequence<TraceRecord>>: Sequence {
    let records: Records
    let sizeOf: (String) -> Int

    package init(_ records: Records, sizeOf: @escaping (String) -> Int) {
        self.records = records
        self.sizeOf = sizeOf
    }

    /// A size for each key, from its FNV-1a hash: uniform in `range`, the same on every run.
    package static func hashedSize(in range: ClosedRange<Int>) -> (String) -> Int {
        { key in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return range.lowerBound + Int(hash % UInt64(range.count))
        }
    }

    package struct Iterator: IteratorProtocol {
        var records: Records.Iterator
        let sizeOf: (String) -> Int
        var sizes: [String: Int] = [:]

        package mutating func next() -> CacheRequest? {
            while let record = records.next() {
                switch record.operation {
                case .read(let key), .delete(let key):
                    return CacheRequest(key: key, bytes: sizes[key] ?? sizeOf(key))
                case .update(let key, let bytes), .insert(let key, let bytes), .readModifyWrite(let key, let bytes),
                    .fetch(let key, let bytes):
                    sizes[key] = bytes
                    return CacheRequest(key: key, bytes: bytes)
                case .scan(_, let after?, _):
                    return CacheRequest(key: after, bytes: sizes[after] ?? sizeOf(after))
                case .scan, .keys, .batch, .compact, .phase:
                    continue
                }
            }
            return nil
        }
    }

    package func makeIterator() -> Iterator { Iterator(records: records.makeIterator(), sizeOf: sizeOf) }
}

/// What a query cache with one bound did with one request stream: a point of a miss-ratio curve
/// and what eviction cost the engine.
package struct EvictionCurvePoint: Sendable {
    /// The cache's bound; `nil`: unbounded (eviction off).
    package var boundBytes: Int?
    package var requests = 0
    package var hits = 0
    package var requestedBytes = 0
    package var hitBytes = 0
    /// Eviction passes run, and the lists and bytes they deleted.
    package var passes = 0
    package var evictedResponses = 0
    package var evictedBytes = 0
    /// The time of a read that missed: the stub's fetch and the store's put, with the eviction
    /// work a put carries (a pass itself runs behind the answer).
    package var missLatency = LatencyHistogram()
    /// The time of a read the store answered.
    package var hitLatency = LatencyHistogram()

    package var hitRatio: Double { requests == 0 ? 0 : Double(hits) / Double(requests) }
    package var byteHitRatio: Double { requestedBytes == 0 ? 0 : Double(hitBytes) / Double(requestedBytes) }
    package var missRatio: Double { 1 - hitRatio }
}

/// Feeds a ``QueryCache`` on one store a request stream at one bound; misses fetch a body of the
/// request's size from a stub that answers at once.
///
/// The curve depends on the cache's policy and the stream, never on the engine: the memory layer
/// is off (the bound is the store's), every answer gets the next second of a virtual server clock
/// (eviction order is by server time), and each pass finishes before the next request, so the
/// same stream and bound give the same hits on every engine. Only the costs differ.
package struct EvictionCurve: Sendable {
    /// Opens a fresh, empty store for one point.
    package let makeStore: @Sendable () async throws -> any OfflineStore

    package init(makeStore: @escaping @Sendable () async throws -> any OfflineStore) {
        self.makeStore = makeStore
    }

    /// Runs `requests` through a cache bounded to `boundBytes` (`nil`: unbounded).
    package func point(
        _ requests: some Sequence<CacheRequest>, boundBytes: Int?, clock: any WorkloadClock = MonotonicWorkloadClock()
    ) async throws -> EvictionCurvePoint {
        // Every pass, through the callback: the cache keeps only the last thousand.
        let passes = Mutex<[EvictionPass]>([])
        var configuration = QueryCache.Configuration(
            size: boundBytes.map { .bytes($0) } ?? .unlimited, memoryCountLimit: 0)
        configuration.onEviction = { pass in passes.withLock { $0.append(pass) } }
        configuration.memoryPressure = nil
        let cache = try await QueryCache(store: try await makeStore(), configuration: configuration)
        var point = EvictionCurvePoint(boundBytes: boundBytes)
        let filler = Self.filler
        var second = 0.0
        for request in requests {
            second += 1
            let serverTime = Date(timeIntervalSince1970: 1_700_000_000 + second)
            let bytes = Self.storedBytes(request.bytes)
            let start = clock.now()
            let read = try await cache.read(request.key) { _ in
                .response(body: String(filler.utf8.prefix(bytes))!, serverTime: serverTime, etag: nil)
            }
            let elapsed = clock.now() - start
            point.requests += 1
            point.requestedBytes += bytes
            if read.source == .network {
                point.missLatency.record(elapsed)
                await cache.waitForBackgroundRefreshes()
            } else {
                point.hits += 1
                point.hitBytes += bytes
                point.hitLatency.record(elapsed)
            }
        }
        await cache.waitForBackgroundRefreshes()
        let done = passes.withLock { $0 }
        point.passes = done.count
        point.evictedResponses = done.reduce(0) { $0 + $1.evictedResponses }
        point.evictedBytes = done.reduce(0) { $0 + $1.evictedBytes }
        return point
    }

    /// The largest body a point fetches: 4 MiB of text that does not compress to nothing (LevelDB
    /// compresses its blocks).
    package static let maxBodyBytes = 4 << 20

    /// The bytes a point stores (and its bound counts) for a request of `requestBytes`: at most
    /// ``maxBodyBytes``. A working set meant to size bounds must add these, not the trace's sizes.
    package static func storedBytes(_ requestBytes: Int) -> Int { min(requestBytes, maxBodyBytes) }

    static let filler: String = {
        var random = WorkloadRandom(seed: 0xC0FFEE)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let bytes = (0..<maxBodyBytes).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
        return String(decoding: bytes, as: UTF8.self)
    }()
}
