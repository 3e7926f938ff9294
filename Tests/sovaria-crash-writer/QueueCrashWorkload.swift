import Foundation
import Sovaria
import SovariaQueue

/// The crash writer's queue mode (`queue-<engine>`): enqueues numbered requests, removes the head
/// after every third and drains the whole queue after every 50th, so a kill lands in enqueues,
/// in removals and in the removal of the newest write (which records the last sequence).
///
/// Prints `enqueuing N` before and `queued N SEQUENCE` after each enqueue returns, and
/// `removing N` / `removed N` around each removal: the test knows what was acknowledged and
/// which one call was in flight at the kill.
enum QueueCrashWorkload {
    static let enginePrefix = "queue-"

    /// Request `index`: its number in the path, and a body of 100 B to 16 KiB whose every part
    /// depends on the number, so a torn value shows.
    static func request(_ index: Int) -> DataRequest {
        DataRequest(
            method: "POST", path: "/rest/v1/crash?n=\(index)", headers: ["Prefer": "return=minimal"],
            body: CrashWorkload.value(index))
    }

    /// The number request `write` carries, or -1.
    static func index(of write: QueuedWrite) -> Int {
        Int(write.request.path.split(separator: "=").last ?? "") ?? -1
    }

    static func run(_ store: any OfflineStore, first: Int) async throws -> Never {
        let queue = try await WriteQueue(store: store, maxQueued: .max)
        CrashWriter.acknowledge("ready")
        var index = first
        while true {
            CrashWriter.acknowledge("enqueuing \(index)")
            let write = try await queue.enqueue(request(index))
            CrashWriter.acknowledge("queued \(index) \(write.sequence)")
            if index % 50 == 49 {
                while let head = try await queue.head() { try await remove(head, from: queue) }
            } else if index % 3 == 2, let head = try await queue.head() {
                try await remove(head, from: queue)
            }
            index += 1
        }
    }

    private static func remove(_ write: QueuedWrite, from queue: WriteQueue) async throws {
        CrashWriter.acknowledge("removing \(index(of: write))")
        try await queue.remove(write.id)
        CrashWriter.acknowledge("removed \(index(of: write))")
    }
}
