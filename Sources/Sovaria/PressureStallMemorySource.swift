#if os(Linux)
    import Foundation
    import Glibc
    import Synchronization

    /// Memory-pressure events from the Linux kernel's pressure stall information (PSI): a
    /// trigger written to a `memory.pressure` file, and a thread that `poll`s it for `POLLPRI`.
    ///
    /// A trigger fires when tasks were stalled waiting for memory (reclaim, swap-in, refaults)
    /// for at least a given time within a window. Two triggers, each its own file descriptor:
    /// - **warning**: `some` task stalled for ``Trigger/warning`` (150 ms in a 2 s window, 7.5%
    ///   of the time), the point where the kernel is working to find memory;
    /// - **critical**: *all* non-idle tasks stalled (`full`) for ``Trigger/critical`` (200 ms in
    ///   2 s), the point where the machine does little else.
    ///
    /// The windows are 2 s because the kernel lets a process without privileges set a trigger
    /// only with a window that is a multiple of 2 s; each trigger fires at most once a window.
    /// The file is the process's cgroup v2 `memory.pressure` when there is one (a container's
    /// limit is the one that matters), else `/proc/pressure/memory` (the whole machine).
    /// ``observe(_:)`` throws ``MemoryPressureUnavailable`` when neither can take a trigger
    /// (a kernel built without PSI, or booted with `psi=0`).
    public struct PressureStallMemorySource: MemoryPressureSource {
        /// One trigger: the stall that fires it, within a window.
        public struct Trigger: Sendable, Equatable {
            /// `some` (at least one task stalled) or `full` (every non-idle task stalled).
            public var kind: Kind
            /// The stall, in microseconds, within ``windowMicroseconds`` that fires it.
            public var stallMicroseconds: Int
            /// The window, in microseconds (the kernel takes 500,000 to 10,000,000).
            public var windowMicroseconds: Int

            /// Whether some or all tasks must stall.
            public enum Kind: String, Sendable {
                /// At least one task stalled.
                case some
                /// Every non-idle task stalled at once.
                case full
            }

            /// A trigger firing on `stallMicroseconds` of `kind` stall within `windowMicroseconds`.
            public init(kind: Kind, stallMicroseconds: Int, windowMicroseconds: Int) {
                self.kind = kind
                self.stallMicroseconds = stallMicroseconds
                self.windowMicroseconds = windowMicroseconds
            }

            /// `some 150000 2000000`.
            public static let warning = Trigger(kind: .some, stallMicroseconds: 150_000, windowMicroseconds: 2_000_000)
            /// `full 200000 2000000`.
            public static let critical = Trigger(kind: .full, stallMicroseconds: 200_000, windowMicroseconds: 2_000_000)

            /// The text the kernel reads: `<kind> <stall µs> <window µs>`.
            var text: String { "\(kind.rawValue) \(stallMicroseconds) \(windowMicroseconds)" }
        }

        /// The `memory.pressure` file the triggers are written to.
        public let path: String
        /// Fires ``MemoryPressure/warning``.
        public let warning: Trigger
        /// Fires ``MemoryPressure/critical``.
        public let critical: Trigger

        /// A source on `path` (default: this process's cgroup's file, or the machine's) with
        /// the given triggers.
        public init(path: String? = nil, warning: Trigger = .warning, critical: Trigger = .critical) {
            self.path = path ?? Self.defaultPath()
            self.warning = warning
            self.critical = critical
        }

        /// The process's cgroup v2 `memory.pressure` when the unified hierarchy is mounted at
        /// `/sys/fs/cgroup` and the process is below its root, else `/proc/pressure/memory`.
        public static func defaultPath() -> String {
            let machine = "/proc/pressure/memory"
            guard let cgroups = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
                let line = cgroups.split(separator: "\n").first(where: { $0.hasPrefix("0::") })
            else { return machine }
            let group = line.dropFirst(3)
            guard group != "/" else { return machine }
            let file = "/sys/fs/cgroup\(group)/memory.pressure"
            return access(file, W_OK) == 0 ? file : machine
        }

        /// Writes both triggers and starts the thread that polls them.
        ///
        /// - Throws: ``MemoryPressureUnavailable`` with the file and the system's error when a
        ///   trigger cannot be opened or written.
        public func observe(
            _ handler: @escaping @Sendable (MemoryPressure) -> Void
        ) throws(MemoryPressureUnavailable)
            -> MemoryPressureObservation
        {
            let poller = try startPolling(handler)
            return MemoryPressureObservation { poller.stop() }
        }

        /// ``observe(_:)``'s work: the triggers written and the polling thread started.
        func startPolling(
            _ handler: @escaping @Sendable (MemoryPressure) -> Void
        ) throws(MemoryPressureUnavailable) -> PressureStallPoller {
            let warningFile = try Self.openTrigger(warning, at: path)
            let criticalFile: Int32
            do {
                criticalFile = try Self.openTrigger(critical, at: path)
            } catch {
                close(warningFile)
                throw error
            }
            var wake: [Int32] = [-1, -1]
            guard pipe(&wake) == 0 else {
                let reason = String(cString: strerror(errno))
                close(warningFile)
                close(criticalFile)
                throw MemoryPressureUnavailable(reason: "no pipe to stop the poll: \(reason)")
            }
            for end in wake { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            let poller = PressureStallPoller(
                warning: warningFile, critical: criticalFile, wakeRead: wake[0], wakeWrite: wake[1], handler: handler)
            poller.start()
            return poller
        }

        /// Opens `path` and writes `trigger` to it; the descriptor, which `poll` reports with
        /// `POLLPRI` each time the trigger fires.
        static func openTrigger(_ trigger: Trigger, at path: String) throws(MemoryPressureUnavailable) -> Int32 {
            let file = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            guard file >= 0 else {
                let code = errno
                let hint = code == ENOENT ? " (a kernel without pressure stall information)" : ""
                throw MemoryPressureUnavailable(reason: "\(path): \(String(cString: strerror(code)))\(hint)")
            }
            // The kernel reads the trigger up to its terminating zero.
            let written = trigger.text.withCString { write(file, $0, strlen($0) + 1) }
            guard written >= 0 else {
                let code = errno
                close(file)
                let hint = code == EOPNOTSUPP ? " (pressure stall information turned off: psi=0?)" : ""
                throw MemoryPressureUnavailable(
                    reason:
                        "\(path): the trigger \"\(trigger.text)\" was refused: \(String(cString: strerror(code)))\(hint)"
                )
            }
            return file
        }
    }

    /// The thread of one ``PressureStallMemorySource`` observation: polls both triggers and the
    /// read end of a pipe, which ``stop()`` writes to; closes every descriptor as it ends.
    final class PressureStallPoller: Sendable {
        private let warning: Int32
        private let critical: Int32
        private let wakeRead: Int32
        private let wakeWrite: Int32
        private let handler: @Sendable (MemoryPressure) -> Void
        /// Signalled by the thread as it ends.
        private let ended = DispatchSemaphore(value: 0)
        /// The polling thread's id, so a stop from the handler does not wait for itself.
        private let threadID = Atomic<UInt>(0)
        /// Set by a stop from the handler: the thread then closes the pipe's write end too.
        private let stoppedFromHandler = Atomic<Bool>(false)
        /// Whether the thread has ended and every descriptor was closed without an error.
        private let closedEverything = Atomic<Bool>(false)
        var closedEveryDescriptor: Bool { closedEverything.load(ordering: .acquiring) }
        /// Whether a close failed (a descriptor closed twice, or never open).
        private let closeFailed = Atomic<Bool>(false)

        init(
            warning: Int32, critical: Int32, wakeRead: Int32, wakeWrite: Int32,
            handler: @escaping @Sendable (MemoryPressure) -> Void
        ) {
            self.warning = warning
            self.critical = critical
            self.wakeRead = wakeRead
            self.wakeWrite = wakeWrite
            self.handler = handler
        }

        func start() {
            let thread = Thread { [self] in
                threadID.store(UInt(pthread_self()), ordering: .releasing)
                run()
            }
            thread.name = "sovaria.memory-pressure"
            thread.start()
        }

        /// Wakes the thread and waits for it to end (unless called from the handler, on it).
        func stop() {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
            guard threadID.load(ordering: .acquiring) != UInt(pthread_self()) else {
                stoppedFromHandler.store(true, ordering: .releasing)
                return
            }
            ended.wait()
            closeChecked(wakeWrite)
            closedEverything.store(!closeFailed.load(ordering: .acquiring), ordering: .releasing)
        }

        private func closeChecked(_ file: Int32) {
            if close(file) != 0 { closeFailed.store(true, ordering: .releasing) }
        }

        private func run() {
            defer {
                for file in [warning, critical, wakeRead] { closeChecked(file) }
                if stoppedFromHandler.load(ordering: .acquiring) {
                    closeChecked(wakeWrite)
                    closedEverything.store(!closeFailed.load(ordering: .acquiring), ordering: .releasing)
                }
                ended.signal()
            }
            var files = [
                pollfd(fd: warning, events: Int16(POLLPRI), revents: 0),
                pollfd(fd: critical, events: Int16(POLLPRI), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            while true {
                let ready = poll(&files, nfds_t(files.count), -1)
                if ready < 0 {
                    if errno == EINTR { continue }
                    return
                }
                if files[2].revents != 0 { return }
                // POLLERR: the file went away (its cgroup was removed); no event will come.
                if files[0].revents & Int16(POLLERR) != 0 || files[1].revents & Int16(POLLERR) != 0 { return }
                if files[1].revents & Int16(POLLPRI) != 0 {
                    handler(.critical)
                } else if files[0].revents & Int16(POLLPRI) != 0 {
                    handler(.warning)
                }
            }
        }
    }
#endif
