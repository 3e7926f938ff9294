import Sovaria
import SovariaPlumbing

/// A reader showing a cached response, from ``QueryCache/startReading(_:)``: while it lives (up to
/// 500 of them), eviction keeps its response.
///
/// A lifetime object, like GRDB's `DatabaseCancellable`: when the last reference to it goes,
/// the reading stops, so a screen that never calls ``QueryCache/stopReading(_:)`` cannot keep
/// its response from eviction forever. Hold it for as long as the response is shown.
///
/// ```swift
/// final class NotesModel {
///     private var reader: LiveReader?
///     func appear(_ cache: QueryCache) { reader = cache.startReading(notesQuery) }
///     func disappear() { reader = nil }  // or cache.stopReading(reader)
/// }
/// ```
///
/// - Important: Safe from any number of tasks. Stopping twice (``QueryCache/stopReading(_:)``,
///   then the release) is harmless. Two readers are equal only when they are the same object.
public final class LiveReader: Sendable, Hashable {
    /// The hash id of the query whose response the reader shows.
    private let id: HexID
    private let token: UInt64
    /// The registry of the cache that started the reader; it outlives the cache if need be.
    private let registry: LiveReaders

    init(id: HexID, token: UInt64, registry: LiveReaders) {
        self.id = id
        self.token = token
        self.registry = registry
    }

    deinit { stop() }

    /// Ends the reading; later calls do nothing.
    func stop() { registry.stop(id: id, token: token) }

    /// Whether both are the same reader.
    public static func == (lhs: LiveReader, rhs: LiveReader) -> Bool { lhs === rhs }

    /// Hashes the reader's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
