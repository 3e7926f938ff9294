import Foundation
import Sovaria
import Testing

@testable import SovariaCache

/// The cache's lock order (its state, then the memory layer) is checked in debug builds.
#if DEBUG
    @Suite struct QueryCacheLockOrderTests {
        @Test func theMemoryLayerInsideTheStateIsTheOrder() async throws {
            let cache = try await QueryCache(store: MemoryOfflineStore(), size: .unlimited)
            try await cache.put("q", body: "[]", serverTime: Date())
            let count = cache.state.withLock { _ in cache.memory.count }
            #expect(count == 1)
        }

        @Test func theStateInsideTheMemoryLayerStopsTheProcess() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let cache = try await QueryCache(store: MemoryOfflineStore(), size: .unlimited)
                try await cache.put("q", body: "[]", serverTime: Date())
                // `trim` asks `keeping` about each entry while it holds the memory layer's lock.
                cache.memory.trim(toCount: 0, cost: 0) { _, _ in
                    cache.state.withLock { $0.index.entries.isEmpty }
                }
            }
            let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(
                stderr.contains(
                    "Lock order: QueryCache.state (rank 200) taken while holding QueryCache.memory (rank 210)"))
        }
    }
#endif
