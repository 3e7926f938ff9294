/// What a store guarantees beyond the base contract of ``OfflineStore``.
public struct StoreCapabilities: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: UInt32

    /// Creates a set from raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// ``OfflineStore/write(_:)`` applies a batch all or nothing, even across a crash, and no
    /// reader sees part of it.
    public static let atomicBatch = StoreCapabilities(rawValue: 1 << 0)
    /// Entries survive the end of the process.
    public static let persistent = StoreCapabilities(rawValue: 1 << 1)
    /// ``OfflineStore/keys(_:)`` and ``OfflineStore/entries(_:after:limit:)`` walk the engine's
    /// own ordered index instead of sorting in memory.
    public static let orderedScan = StoreCapabilities(rawValue: 1 << 2)
    /// ``OfflineStore/compact()`` gives freed space back to the operating system.
    public static let compaction = StoreCapabilities(rawValue: 1 << 3)
    /// ``OfflineStore/set(_:data:)`` stores any bytes, UTF-8 or not, as they are. A store without
    /// it keeps text only: its ``OfflineStore/set(_:data:)`` takes bytes that are valid UTF-8 and
    /// refuses the rest with ``OfflineStoreError/Code/invalidValue``.
    public static let byteValues = StoreCapabilities(rawValue: 1 << 4)
}
