import Foundation
import Sovaria
import SovariaQueue

extension SovariaOffline {
    // MARK: - Triggers

    func timerFired() async {
        let idle = state.withLock { $0.closed || $0.pausedForAuthorization }
        guard !idle, queue.count > 0 else { return }
        _ = try? await sharedFlush()
    }

    /// A request reached the server: after a time offline, that is a reconnect, which flushes.
    func reachedServer(startingFlush: Bool = true) {
        let reconnected = state.withLock { state in
            defer { (state.online, state.triedNetwork, state.offlineRetryAt) = (true, true, nil) }
            if state.lastError?.kind == .offline { state.lastError = nil }
            return !state.online || !state.triedNetwork
        }
        if reconnected { signals.statusChanged() }
        if reconnected, startingFlush, queue.count > 0 { _ = startFlush() }
    }

    /// A request failed for lack of network; `head`, when given, is the queued write it left
    /// waiting, which the status names as the reason (``SyncError/Kind/offline``).
    func wentOffline(_ error: SyncTransportError, leaving head: QueuedWrite? = nil) {
        let retryAt = configuration.clock().addingTimeInterval(configuration.flushInterval.timeInterval)
        let changed = state.withLock { state in
            defer { (state.online, state.triedNetwork, state.offlineRetryAt) = (false, true, retryAt) }
            if let head { state.lastError = SyncError(kind: .offline, write: head, message: "\(error)") }
            return state.online || !state.triedNetwork || head != nil
        }
        if changed { signals.statusChanged() }
    }

    func report(_ error: SyncError) {
        state.withLock { $0.lastError = error }
        signals.statusChanged()
        errors.yield(error)
        state.withLock { $0.onSyncError }?(error)
    }
}
