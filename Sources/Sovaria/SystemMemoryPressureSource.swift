import Dispatch
import Synchronization

/// The platform's memory-pressure events, shared by every observer in the process: one system
/// registration, started by the first observer and stopped when the last one cancels.
///
/// - Apple platforms: `DispatchSource.makeMemoryPressureSource(eventMask: [.warning, .critical])`.
///   Compiled there, **not run on this project's Linux machines**.
/// - Linux: ``PressureStallMemorySource`` with its default triggers (the kernel's pressure stall
///   information); it throws ``MemoryPressureUnavailable`` where the kernel offers none.
/// - Elsewhere: unavailable.
///
/// Every memory layer of Sovaria observes it by default (`QueryCache`'s
/// `Configuration.memoryPressure`).
public final class SystemMemoryPressureSource: MemoryPressureSource {
    /// The one instance (``MemoryPressureSources/system``).
    public static let shared = SystemMemoryPressureSource()

    private struct State {
        var next = 0
        var handlers: [Int: @Sendable (MemoryPressure) -> Void] = [:]
        var registration: MemoryPressureObservation?
    }

    private let state = Mutex(State())

    private init() {}

    /// Starts an observation, registering with the system if it is the first.
    ///
    /// - Throws: ``MemoryPressureUnavailable`` when the platform has no events to offer.
    public func observe(
        _ handler: @escaping @Sendable (MemoryPressure) -> Void
    ) throws(MemoryPressureUnavailable)
        -> MemoryPressureObservation
    {
        let id = try state.withLock { state throws(MemoryPressureUnavailable) in
            if state.registration == nil {
                state.registration = try Self.register { [weak self] level in self?.broadcast(level) }
            }
            defer { state.next += 1 }
            state.handlers[state.next] = handler
            return state.next
        }
        return MemoryPressureObservation { [weak self] in self?.stopObserving(id) }
    }

    /// Whether the process is registered with the system (some observation is running).
    public var isRegistered: Bool { state.withLock { $0.registration != nil } }

    private func broadcast(_ level: MemoryPressure) {
        let handlers = state.withLock { $0.handlers.sorted { $0.key < $1.key }.map(\.value) }
        for handler in handlers { handler(level) }
    }

    private func stopObserving(_ id: Int) {
        // Cancelled outside the lock: a registration's cancel waits for a running broadcast,
        // which takes the lock.
        let last = state.withLock { state -> MemoryPressureObservation? in
            state.handlers[id] = nil
            guard state.handlers.isEmpty else { return nil }
            defer { state.registration = nil }
            return state.registration
        }
        last?.cancel()
    }

    private static func register(
        _ handler: @escaping @Sendable (MemoryPressure) -> Void
    ) throws(MemoryPressureUnavailable) -> MemoryPressureObservation {
        #if canImport(Darwin)
            let source = DispatchSource.makeMemoryPressureSource(
                eventMask: [.warning, .critical], queue: DispatchQueue.global(qos: .utility))
            source.setEventHandler {
                handler(source.data.contains(.critical) ? .critical : .warning)
            }
            source.resume()
            return MemoryPressureObservation { source.cancel() }
        #elseif os(Linux)
            return try PressureStallMemorySource().observe(handler)
        #else
            throw MemoryPressureUnavailable(reason: "no memory-pressure events on this platform")
        #endif
    }
}
