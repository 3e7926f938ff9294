import Foundation
import Sovaria
import SovariaTestKit
import Testing

@testable import SovariaLMDB

#if canImport(Glibc)
    import Glibc
#endif

/// The environment's lock order (writer, then the handles' readers-writer lock, then the read
/// transaction pool), checked in debug builds: an inversion stops the process.
@Suite struct LMDBEnvironmentLockOrderTests {
    #if DEBUG
        // Each folder is made here, not in the child: a child that stops never releases one.
        @Test func takingTheWriterInsideATransactionStopsTheProcess() async throws {
            let folder = try TemporaryFolder()
            await #expect(processExitsWith: .failure) { [path = folder.url.path as String] in
                // Only the lock-order check may end this process with a failure.
                do {
                    let environment = try LMDBOfflineStore(directory: URL(fileURLWithPath: path)).environment
                    try environment.handles.withShared { _ in
                        _ = try environment.writeIfIdle([.set(key: "k", value: "v")], forceSync: false)
                    }
                } catch {}
                _exit(0)
            }
        }

        @Test func takingTheHandlesLockTwiceStopsTheProcess() async throws {
            let folder = try TemporaryFolder()
            await #expect(processExitsWith: .failure) { [path = folder.url.path as String] in
                do {
                    let environment = try LMDBOfflineStore(directory: URL(fileURLWithPath: path)).environment
                    _ = try environment.read { _, _ in environment.mapSizeBytes }
                } catch {}
                _exit(0)
            }
        }

        @Test func takingTheLocksInTheirOrderDoesNotStopTheProcess() async throws {
            let folder = try TemporaryFolder()
            await #expect(processExitsWith: .success) { [path = folder.url.path as String] in
                do {
                    let environment = try LMDBOfflineStore(directory: URL(fileURLWithPath: path)).environment
                    let wrote = try environment.writeIfIdle([.set(key: "k", value: "v")], forceSync: false)
                    let value = try environment.value(for: "k")
                    _exit(wrote && value == "v" ? 0 : 1)
                } catch {}
                _exit(1)
            }
        }
    #endif
}
