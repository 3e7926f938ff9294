import Sovaria
import SovariaPlumbing
import Synchronization

/// The tag of the gate that lets one migration of a collection run at a time.
enum CollectionMigrations {}

/// The observers of every collection in the process, by store identity and key prefix: how a
/// write through one ``ObjectStore`` reaches the ``ObjectStore/changes()`` of another over the
/// same store instance.
final class ChangeRegistry: Sendable {
    /// The one registry of the process: every ``ObjectStore`` over one store instance meets here.
    static let shared = ChangeRegistry()

    /// A collection of one store instance.
    struct Collection: Hashable, Sendable {
        let store: ObjectIdentifier
        /// By bytes: two collection names `String` calls equal are two collections.
        let prefix: StoreKey.Bytes
    }

    private struct Observer {
        let continuation: AsyncStream<ObjectChange>.Continuation
        /// Keeps the store alive while someone observes it, so that its `ObjectIdentifier` cannot
        /// come back as the identity of another store.
        let store: any OfflineStore
    }

    private struct State {
        var nextToken: UInt64 = 0
        var observers: [Collection: [UInt64: Observer]] = [:]
        /// One per collection that was ever migrated in this process (a few bytes each).
        var migrationGates: [Collection: AsyncGate<CollectionMigrations>] = [:]
    }

    private let state = Mutex(State())

    /// A stream of the changes of `collection` from now on; its registration ends with it.
    func observe(_ collection: Collection, store: any OfflineStore) -> AsyncStream<ObjectChange> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ObjectChange.self, bufferingPolicy: .bufferingNewest(1))
        let token = state.withLock { state in
            state.nextToken += 1
            state.observers[collection, default: [:]][state.nextToken] = Observer(
                continuation: continuation, store: store)
            return state.nextToken
        }
        continuation.onTermination = { [weak self] _ in self?.remove(collection, token) }
        return stream
    }

    /// The gate every migration of `collection` runs through, so that two object stores opened
    /// at once (two screens) do not both transform its objects.
    func migrationGate(_ collection: Collection) -> AsyncGate<CollectionMigrations> {
        state.withLock { state in
            if let gate = state.migrationGates[collection] { return gate }
            let gate = AsyncGate<CollectionMigrations>()
            state.migrationGates[collection] = gate
            return gate
        }
    }

    /// Whether anyone observes `collection` now: writers read an object's earlier state only then.
    func hasObservers(_ collection: Collection) -> Bool {
        state.withLock { $0.observers[collection] != nil }
    }

    /// How many streams observe `collection`.
    func count(_ collection: Collection) -> Int {
        state.withLock { $0.observers[collection]?.count ?? 0 }
    }

    /// Hands `change` to every observer of `collection`, merged into the event it has not read
    /// yet; `change` is made only when there is an observer.
    func notify(_ collection: Collection, _ change: () -> ObjectChange) {
        state.withLock { state in
            guard let observers = state.observers[collection] else { return }
            let change = change()
            guard !change.isEmpty else { return }
            for observer in observers.values {
                // The buffer holds one event: an unread one comes back as dropped, and the two go
                // in again as one. A reader that took the first in between reads some ids twice.
                if case .dropped(let unread) = observer.continuation.yield(change) {
                    var merged = unread
                    merged.merge(change)
                    observer.continuation.yield(merged)
                }
            }
        }
    }

    private func remove(_ collection: Collection, _ token: UInt64) {
        // The observer (and the store it keeps alive) is released outside the lock.
        let removed: Observer? = state.withLock { state in
            let observer = state.observers[collection]?.removeValue(forKey: token)
            if state.observers[collection]?.isEmpty == true { state.observers[collection] = nil }
            return observer
        }
        _ = removed
    }
}
