import Sovaria
import Synchronization

/// What the memory layer gave back for one memory-pressure event (``QueryCache/memorySheds``).
public struct MemoryShed: Sendable, Equatable {
    /// The event.
    public let level: MemoryPressure
    /// How many responses left the memory layer.
    public let removedResponses: Int
    /// Their summed body bytes (UTF-8).
    public let removedBytes: Int
    /// What the layer kept: responses, and their body bytes.
    public let keptResponses: Int
    /// The kept responses' summed body bytes.
    public let keptBytes: Int
}

extension QueryCache {
    /// The share of its limits (count and bytes) the memory layer sheds down to on a warning.
    ///
    /// A quarter keeps the most recently used answers (those a screen is most likely to show
    /// again, and the cheapest to keep hot) and gives back three quarters at once, as much as an
    /// `NSCache` typically gives back; the limits stay, so the layer fills again with the reads
    /// that follow.
    public static let warningShedFraction = 0.25
    /// On a warning, a response that a live reader shows stays in memory when its body is at
    /// most this many bytes (64 KiB): the screen in front of the user reads it next, and it
    /// costs little. A critical event removes it too.
    public static let keptLiveResponseBytes = 64 * 1_024

    /// How many responses the memory layer holds now.
    public var memoryResponseCount: Int { memory.count }
    /// The summed body bytes (UTF-8) the memory layer holds now.
    public var memoryBytes: Int { memory.totalCost }
    /// The memory layer's most recent sheds (up to 100), oldest first.
    public var memorySheds: [MemoryShed] { state.withLock { $0.sheds } }

    /// Why the configured ``Configuration/memoryPressure`` source delivers no events here, or
    /// `nil` when it does (or none is configured): the memory layer then keeps its limits
    /// whatever the system needs, unless you call ``shedMemory(for:)``.
    public var memoryPressureUnavailable: MemoryPressureUnavailable? {
        state.withLock { $0.memoryPressureUnavailable }
    }

    /// Gives memory back as the system asks: on `MemoryPressure.warning`, the least recently
    /// used responses go until the layer holds at most a quarter of its count and byte limits,
    /// except those a live reader shows that are 64 KiB or smaller; on
    /// `MemoryPressure.critical`, the layer empties. Nothing in the store changes and no read
    /// fails: a response that went is read from the store next time (and copied up again).
    ///
    /// The configured ``Configuration/memoryPressure`` source calls this; call it yourself to
    /// pass on a warning that reaches your app another way.
    @discardableResult
    public func shedMemory(for level: MemoryPressure) -> MemoryShed {
        let shown = level == .warning ? readers.protectedIDs(limit: Self.maxProtectedResponses) : []
        let count = Int(Double(memory.countLimit) * Self.warningShedFraction)
        let cost = Int(Double(memory.costLimit) * Self.warningShedFraction)
        // Under `state`, as every change of the memory layer.
        return state.withLock { state in
            let removed: (count: Int, cost: Int)
            switch level {
            case .warning:
                removed = memory.trim(toCount: count, cost: cost) { id, response in
                    shown.contains(id) && response.sizeBytes <= Self.keptLiveResponseBytes
                }
            case .critical:
                removed = (count: memory.count, cost: memory.totalCost)
                memory.removeAll()
            }
            let shed = MemoryShed(
                level: level, removedResponses: removed.count, removedBytes: removed.cost,
                keptResponses: memory.count, keptBytes: memory.totalCost)
            state.sheds.append(shed)
            if state.sheds.count > 100 { state.sheds.removeFirst(state.sheds.count - 100) }
            return shed
        }
    }

    /// Starts observing `source` (weakly: the cache's deinit releases the observation, which
    /// ends it), or records why it cannot.
    func observeMemoryPressure(_ source: (any MemoryPressureSource)?) {
        guard let source else { return }
        do throws(MemoryPressureUnavailable) {
            let observation = try source.observe { [weak self] level in self?.shedMemory(for: level) }
            state.withLock { $0.memoryPressureObservation = observation }
        } catch {
            state.withLock { $0.memoryPressureUnavailable = error }
        }
    }
}
