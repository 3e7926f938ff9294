/// One eviction pass, as reported by ``QueryCache/evictionPasses``.
public struct EvictionPass: Sendable, Hashable {
    /// Responses deleted.
    public let evictedResponses: Int
    /// Body bytes deleted.
    public let evictedBytes: Int
    /// Wall time of the pass.
    public let duration: Duration
    /// The cache's total after the pass.
    public let totalBytesAfter: Int
    /// Store batches the pass wrote itself.
    public let ownBatches: Int
    /// Batches puts made during the pass deleted in their own store writes.
    public let batchesCarriedByPuts: Int
}
