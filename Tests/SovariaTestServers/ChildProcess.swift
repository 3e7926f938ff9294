import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process started with `posix_spawn` and reaped with `waitpid`: test equipment.
///
/// Foundation's `Process` on Linux learns of a child's exit through a SIGCHLD handler and a run
/// loop, and was seen never to notice the exit of a script that started a daemon (the test hung
/// in `waitUntilExit` with the script a zombie). Spawning and waiting by hand has no such parts.
public final class ChildProcess: @unchecked Sendable {
    /// The child's process id.
    public let pid: pid_t
    /// The read end of the child's standard output, when it was captured.
    public let output: FileHandle?
    private let lock = NSLock()
    // @unchecked Sendable: under `lock`.
    private var status: Int32?

    /// Starts `path` with `arguments`; standard input is `/dev/null`, standard output a pipe
    /// (`captureOutput`) or `/dev/null`, standard error `/dev/null` or the file `errorFile`.
    public init(_ path: String, _ arguments: [String], captureOutput: Bool, errorFile: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var pipeEnds: [Int32] = [-1, -1]
        if captureOutput {
            // Close-on-exec, so a child another thread spawns meanwhile does not inherit it.
            guard pipe2(&pipeEnds, O_CLOEXEC) == 0 else { throw Failure("pipe failed: errno \(errno)") }
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
            posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
            posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, errorFile ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // Nothing else of the test process: a daemon the child starts (PostgreSQL) would keep
        // those descriptors open for ever, and whoever reads their other ends (`swift test`
        // reading this process's output) would wait for an end of file that never comes.
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        // The spawning thread (a Foundation or Dispatch thread) blocks most signals, and a child
        // inherits that mask: unblock everything and restore default handlers, or the child
        // never sees SIGTERM.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        if captureOutput { close(pipeEnds[1]) }
        guard result == 0 else {
            if captureOutput { close(pipeEnds[0]) }
            throw Failure("could not start \(path): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        output = captureOutput ? FileHandle(fileDescriptor: pipeEnds[0], closeOnDealloc: true) : nil
    }

    /// Waits for the child to exit, blocking the calling thread; returns the `waitpid` status.
    @discardableResult
    public func waitBlocking() -> Int32 {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
        status = raw
        return raw
    }

    /// Waits for the child to exit on a thread of its own; returns the `waitpid` status.
    @discardableResult
    public func wait() async throws -> Int32 {
        try await PostgresCluster.onThread { self.waitBlocking() }
    }

    /// Sends `signal` to the child.
    public func send(_ signal: Int32) { kill(pid, signal) }

    /// Whether a `waitpid` status says the child exited with status 0.
    public static func succeeded(_ status: Int32) -> Bool { status & 0x7F == 0 && (status >> 8) & 0xFF == 0 }

    /// Whether a `waitpid` status says the child was killed by `signal`.
    public static func killed(_ status: Int32, by signal: Int32) -> Bool { status & 0x7F == signal }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
