import Synchronization

/// How hard the system asks apps to give memory back.
///
/// On Apple platforms these are the dispatch memory-pressure levels; on Linux, the kernel's
/// pressure stall information (see ``PressureStallMemorySource``).
public enum MemoryPressure: Sendable, Equatable, CustomStringConvertible {
    /// Memory runs short: release what is cheap to get back.
    case warning
    /// Memory is about to run out (the system may end the app): release everything you can.
    case critical

    /// `warning` or `critical`.
    public var description: String {
        switch self {
        case .warning: "warning"
        case .critical: "critical"
        }
    }
}

/// Something that tells its observers when the system runs short of memory.
///
/// ``SystemMemoryPressureSource/shared`` is the platform's own (the default of every memory
/// layer); ``ManualMemoryPressureSource`` sends events when you say so, for tests and for apps
/// that get their warnings another way.
///
/// ```swift
/// let observation = try MemoryPressureSources.system.observe { level in
///     if level == .critical { images.removeAll() }
/// }
/// // … later, or when `observation` is released:
/// observation.cancel()
/// ```
public protocol MemoryPressureSource: Sendable {
    /// Calls `handler` with each event from now until the returned observation is cancelled or
    /// released. The handler runs on a thread of the source's, one event at a time, and must
    /// not block.
    ///
    /// - Throws: ``MemoryPressureUnavailable`` when this source cannot deliver events here (the
    ///   reason says why); nothing is observed then.
    func observe(
        _ handler: @escaping @Sendable (MemoryPressure) -> Void
    ) throws(MemoryPressureUnavailable)
        -> MemoryPressureObservation
}

/// The sources Sovaria offers, by name.
public enum MemoryPressureSources {
    /// The platform's source, shared by every observer in the process: dispatch's memory
    /// pressure source on Apple platforms, the kernel's pressure stall information on Linux.
    public static var system: SystemMemoryPressureSource { .shared }
}

/// Why a ``MemoryPressureSource`` cannot deliver events on this machine.
public struct MemoryPressureUnavailable: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is missing, in a sentence (for example "/proc/pressure/memory: No such file or
    /// directory (a kernel without pressure stall information)").
    public let reason: String

    /// An error with `reason`.
    public init(reason: String) { self.reason = reason }

    /// "memory-pressure events unavailable: " and the reason.
    public var description: String { "memory-pressure events unavailable: \(reason)" }
}

/// An observation started by ``MemoryPressureSource/observe(_:)``: events reach its handler
/// until ``cancel()`` is called or the observation is released.
public final class MemoryPressureObservation: Sendable {
    private let stop: Mutex<(@Sendable () -> Void)?>

    /// An observation that runs `cancel` once, at the first ``cancel()`` or when released (for
    /// sources of your own).
    public init(cancel: @escaping @Sendable () -> Void) {
        stop = Mutex(cancel)
    }

    /// Stops the events; when it returns, the handler is not running and is never called again
    /// (unless called from the handler itself, which then returns first). Calling it again does
    /// nothing.
    public func cancel() {
        let cancel = stop.withLock { stop in
            defer { stop = nil }
            return stop
        }
        cancel?()
    }

    /// Whether ``cancel()`` has run (or the observation was released).
    public var isCancelled: Bool { stop.withLock { $0 == nil } }

    deinit { cancel() }
}

/// A source that sends an event when ``send(_:)`` is called: the test double of every memory
/// layer, and a way to pass on warnings an app receives itself (a `UIApplication` memory warning,
/// a server's own monitor).
///
/// ```swift
/// let pressure = ManualMemoryPressureSource()
/// var configuration = QueryCache.Configuration()
/// configuration.memoryPressure = pressure
/// let cache = try await QueryCache(store: store, configuration: configuration)
/// pressure.send(.warning)  // the cache's memory layer has shed when this returns
/// ```
public final class ManualMemoryPressureSource: MemoryPressureSource {
    private let handlers = Mutex<(next: Int, byID: [Int: @Sendable (MemoryPressure) -> Void])>((0, [:]))

    /// A source with no observers.
    public init() {}

    /// Starts an observation; never throws.
    public func observe(
        _ handler: @escaping @Sendable (MemoryPressure) -> Void
    ) throws(MemoryPressureUnavailable)
        -> MemoryPressureObservation
    {
        let id = handlers.withLock { handlers in
            defer { handlers.next += 1 }
            handlers.byID[handlers.next] = handler
            return handlers.next
        }
        return MemoryPressureObservation { [weak self] in
            _ = self?.handlers.withLock { $0.byID.removeValue(forKey: id) }
        }
    }

    /// Calls every observer's handler with `level`, in the order they started observing, on the
    /// caller's thread; returns when all have run.
    public func send(_ level: MemoryPressure) {
        let current = handlers.withLock { $0.byID.sorted { $0.key < $1.key }.map(\.value) }
        for handler in current { handler(level) }
    }

    /// How many observations are running.
    public var observerCount: Int { handlers.withLock { $0.byID.count } }
}
