import Sovaria
import SovariaTestKit
import Testing

@Suite struct MemoryOfflineStoreTests {
    static let factory = StoreFactory("memory", persistent: false) { _ in MemoryOfflineStore() }

    @Test(arguments: OfflineStoreConformance.checks)
    func conforms(_ check: ConformanceCheck) async throws {
        try await check.run(on: Self.factory)
    }

    @Test func isNotPersistentAndHasAtomicBatches() {
        let store = MemoryOfflineStore()
        #expect(!store.isPersistent)
        #expect(store.capabilities == [.atomicBatch, .byteValues])
    }
}
