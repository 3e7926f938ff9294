import Observation

/// A collection's first objects in key order as an `@Observable` model a SwiftUI view reads
/// directly: it follows ``ObjectStore/changes()`` on the main actor and reads the window again
/// after each change.
///
/// ```swift
/// struct NoteList: View {
///     let notes: ObjectCollection<Note>
///     var body: some View { List(notes.objects) { Text($0.title) } }
/// }
/// ```
///
/// - Important: Shows up to ``limit`` objects, read with
///   ``ObjectStore/page(after:limit:skippingUndecodable:)`` skipping what cannot be decoded
///   (reported in ``failures``): one page read per change event, and a burst of writes is one
///   event. Sees what ``ObjectStore/changes()`` sees: writes through object stores over the same
///   store instance in this process. Follows the changes until the model is released.
@MainActor @Observable
public final class ObjectCollection<Object: Codable & Sendable> {
    /// The first ``limit`` objects of the collection, in key order.
    public private(set) var objects: [Object] = []
    /// The id of each object in ``objects``, in the same order.
    public private(set) var ids: [String] = []
    /// The objects of the window that could not be decoded, each an ``ObjectStoreError`` with code
    /// ``ObjectStoreError/Code/decodingFailed``.
    public private(set) var failures: [ObjectStoreError] = []
    /// The error of the last read, when it failed (the objects shown are then those read before).
    public private(set) var readError: (any Error)?
    /// How many reads have finished: 0 until the first one has, then one more after each.
    public private(set) var revision = 0
    /// The most objects the model holds. Default: 1,000.
    @ObservationIgnored public let limit: Int
    /// The object store the model reads.
    @ObservationIgnored public let source: ObjectStore<Object>
    /// How many reads began, and the latest one whose result the model shows.
    @ObservationIgnored private var readsStarted = 0
    @ObservationIgnored private var readsApplied = 0
    /// The task that follows the changes, in a Sendable box the nonisolated `deinit` can reach.
    @ObservationIgnored private let following = FollowingTask()

    /// A model of the first `limit` objects of `source` that reads them now and after each change.
    ///
    /// - Parameters:
    ///   - source: The object store to read.
    ///   - limit: The most objects to hold: more than 0. Default: 1,000.
    public init(_ source: ObjectStore<Object>, limit: Int = 1_000) {
        precondition(limit > 0, "An ObjectCollection holds at least one object: limit \(limit)")
        self.source = source
        self.limit = limit
        // Registered before the first read, so that no write lands between the two unseen.
        let changes = source.changes()
        following.start { [weak self] in
            await self?.refresh()
            for await _ in changes {
                guard let self else { return }
                await self.refresh()
            }
        }
    }

    deinit { following.cancel() }

    /// Reads the window again now, as a change does: for pull to refresh, and for writes the
    /// model cannot see (another process, direct writes to the store).
    public func refresh() async {
        readsStarted += 1
        let read = readsStarted
        do {
            let page = try await source.page(limit: limit, skippingUndecodable: true)
            // A read that started before another and ends after it would put older objects back.
            guard read > readsApplied else { return }
            readsApplied = read
            objects = page.objects
            ids = page.ids
            failures = page.failures
            readError = nil
        } catch {
            guard read > readsApplied else { return }
            readsApplied = read
            readError = error
        }
        revision += 1
    }
}
