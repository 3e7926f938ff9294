import Foundation
import Sovaria
import SovariaTestKit
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Wraps the file cache's metadata store and kills the process with SIGKILL inside a chosen
/// metadata batch: the `countdown`-th batch of deletions only (an eviction pass's, whose files
/// are already gone) or of any kind, before or after the batch reaches the store. A kill from
/// outside rarely lands inside a pass, which is short beside a download; this one always does.
final class SelfKillingStore: ForwardingStore {
    let inner: any OfflineStore
    private let countdown: Mutex<Int>
    private let deletionsOnly: Bool
    private let afterWrite: Bool

    init(_ inner: any OfflineStore, countdown: Int, deletionsOnly: Bool, afterWrite: Bool) {
        self.inner = inner
        self.countdown = Mutex(countdown)
        self.deletionsOnly = deletionsOnly
        self.afterWrite = afterWrite
    }

    func write(_ batch: [StoreWrite]) async throws {
        let isDeletions = batch.allSatisfy { if case .delete = $0 { true } else { false } }
        let kill = countdown.withLock { remaining in
            guard !deletionsOnly || isDeletions else { return false }
            remaining -= 1
            return remaining == 0
        }
        if kill, !afterWrite { die(batch) }
        try await inner.write(batch)
        if kill { die(batch) }
    }

    private func die(_ batch: [StoreWrite]) -> Never {
        CrashWriter.acknowledge("killing \(batch.count) \(afterWrite ? 1 : 0)")
        kill(getpid(), SIGKILL)
        while true { pause() }
    }
}
