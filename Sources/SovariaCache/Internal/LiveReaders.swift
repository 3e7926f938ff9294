import Sovaria
import SovariaPlumbing
import Synchronization

/// The responses live readers show, and when each reader started: one per cache, shared with the
/// ``LiveReader`` objects it hands out so each can stop itself when released.
final class LiveReaders: Sendable {
    private struct State {
        var readers: [UInt64: HexID] = [:]
        var newestStart: [HexID: UInt64] = [:]
        var readerCount: [HexID: Int] = [:]
        var next: UInt64 = 0
    }

    private let state = Mutex(State())

    func start(_ id: HexID) -> LiveReader {
        let token = state.withLock { state in
            state.next += 1
            state.readers[state.next] = id
            state.newestStart[id] = state.next
            state.readerCount[id, default: 0] += 1
            return state.next
        }
        return LiveReader(id: id, token: token, registry: self)
    }

    func stop(id: HexID, token: UInt64) {
        state.withLock { state in
            guard state.readers.removeValue(forKey: token) != nil else { return }
            state.readerCount[id, default: 1] -= 1
            if state.readerCount[id] == 0 {
                state.readerCount[id] = nil
                state.newestStart[id] = nil
            }
        }
    }

    /// Whether a reader shows `id`'s response.
    func isReading(_ id: HexID) -> Bool {
        state.withLock { $0.readerCount[id] != nil }
    }

    /// The responses protected from eviction: all live ones, or past `limit`, the `limit` whose
    /// readers started most recently.
    func protectedIDs(limit: Int) -> Set<HexID> {
        state.withLock { state in
            guard state.newestStart.count > limit else { return Set(state.newestStart.keys) }
            return Set(state.newestStart.sorted { $0.value > $1.value }.prefix(limit).map(\.key))
        }
    }
}
