import Foundation
import Synchronization
import Testing

@testable import Sovaria

/// The memory-pressure sources: the test double, the shared system source, and (on Linux) the
/// kernel's pressure stall triggers, registered and cancelled for real.
@Suite struct MemoryPressureSourceTests {
    @Test func theManualSourceCallsEveryObserverInOrderUntilCancelled() throws {
        let pressure = ManualMemoryPressureSource()
        let heard = Mutex<[String]>([])
        let first = try pressure.observe { level in heard.withLock { $0.append("first \(level)") } }
        let second = try pressure.observe { level in heard.withLock { $0.append("second \(level)") } }
        pressure.send(.warning)
        first.cancel()
        #expect(first.isCancelled && !second.isCancelled)
        pressure.send(.critical)
        #expect(heard.withLock { $0 } == ["first warning", "second warning", "second critical"])
        first.cancel()  // a second cancel does nothing
        #expect(pressure.observerCount == 1)
        withExtendedLifetime(second) {}
    }

    @Test func anObservationReleasedIsCancelled() throws {
        let pressure = ManualMemoryPressureSource()
        var observation: MemoryPressureObservation? = try pressure.observe { _ in }
        #expect(pressure.observerCount == 1 && observation?.isCancelled == false)
        observation = nil
        #expect(pressure.observerCount == 0)
    }

    #if os(Linux)
        /// On this machine the kernel offers pressure stall information (Linux 4.20 and later,
        /// `/proc/pressure/memory`): both triggers are accepted, the thread starts, and a cancel
        /// ends it with every descriptor closed. Where the file is missing, the source must say
        /// so, naming it.
        @Test func theKernelTakesBothTriggersAndACancelClosesThem() throws {
            let source = PressureStallMemorySource()
            guard FileManager.default.fileExists(atPath: source.path) else {
                #expect(throws: MemoryPressureUnavailable.self) { _ = try source.observe { _ in } }
                #expect(
                    (try? source.observe { _ in }) == nil,
                    "\(source.path) is missing, yet the source said it observes")
                return
            }
            let poller = try source.startPolling { _ in }
            #expect(!poller.closedEveryDescriptor)
            poller.stop()
            #expect(poller.closedEveryDescriptor)
        }

        @Test func aTriggerTheKernelRefusesIsReportedWithTheReason() throws {
            // A window of 1 µs: the kernel takes 500 ms to 10 s.
            let bad = PressureStallMemorySource.Trigger(kind: .some, stallMicroseconds: 1, windowMicroseconds: 1)
            let source = PressureStallMemorySource(warning: bad)
            guard FileManager.default.fileExists(atPath: source.path) else { return }
            let error = #expect(throws: MemoryPressureUnavailable.self) { _ = try source.observe { _ in } }
            #expect(error?.reason.contains("some 1 1") == true && error?.reason.contains(source.path) == true)
        }

        @Test func aMissingFileIsUnavailableNamingIt() throws {
            let source = PressureStallMemorySource(path: "/proc/pressure/no-such-resource")
            let error = #expect(throws: MemoryPressureUnavailable.self) { _ = try source.observe { _ in } }
            #expect(error?.reason.hasPrefix("/proc/pressure/no-such-resource: No such file") == true)
        }

        @Test func theSystemSourceRegistersOnceForAllObservers() throws {
            let system = MemoryPressureSources.system
            guard FileManager.default.fileExists(atPath: PressureStallMemorySource().path) else { return }
            let first = try system.observe { _ in }
            let second = try system.observe { _ in }
            #expect(system.isRegistered)
            first.cancel()
            second.cancel()
            // Other tests' caches may observe it too: registered exactly while someone observes.
            #expect(first.isCancelled && second.isCancelled)
        }
    #endif
}
