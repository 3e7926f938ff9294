import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process started with `posix_spawn` and reaped with `waitpid`: test equipment.
///
/// Not Foundation's `Process`: its `waitUntilExit()` waits for a SIGCHLD handler that runs on a
/// Dispatch queue, and in the test process that handler never ran, so the first `pgcluster start`
/// was never reaped and every test waiting for the cluster hung. `Process` also lets the child
/// inherit the test runner's open descriptors, and the PostgreSQL server `pgcluster` starts keeps
/// them open for its whole life (a runner waiting for end-of-file on one of its pipes then waits
/// for the server). Here the child gets standard input from /dev/null, standard output as a pipe
/// or /dev/null, standard error as a file or /dev/null, no other descriptor, no blocked signal
/// and default signal handlers (a spawning Foundation or Dispatch thread blocks most signals,
/// and a child inherits that mask: a server started so never sees SIGTERM).
public final class ChildProcess: @unchecked Sendable {
    /// Why a child could not be run, or how it failed.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// The child's process id.
    public let pid: pid_t
    /// The read end of the child's standard output, when it was captured.
    public let output: FileHandle?
    /// Held while a child is spawned (see ``init(_:_:environment:captureOutput:errorFile:)``).
    private static let spawning = NSLock()
    private let lock = NSLock()
    // @unchecked Sendable: under `lock`.
    private var status: Int32?

    /// Starts `path` with `arguments`, this process's environment plus `environment`; standard
    /// output is a pipe (`captureOutput`) or /dev/null, standard error the file `errorFile` or
    /// /dev/null.
    public init(
        _ path: String, _ arguments: [String], environment: [String: String] = [:], captureOutput: Bool,
        errorFile: String? = nil
    ) throws {
        // One spawn at a time, from the pipe to the spawn: a child another thread spawned between
        // this `pipe` and its close-on-exec marking inherited the pipe (a PostgreSQL server did,
        // kept the write end open for its whole life, and the reader of this child's output never
        // saw end-of-file).
        Self.spawning.lock()
        defer { Self.spawning.unlock() }
        var pipeEnds: [Int32] = [-1, -1]
        if captureOutput, pipe(&pipeEnds) != 0 { throw Failure(description: "pipe failed: errno \(errno)") }
        markEveryDescriptorCloseOnExec()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if captureOutput {
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, errorFile ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
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
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { _, new in new }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for variable in envp { free(variable) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        if captureOutput { close(pipeEnds[1]) }
        guard result == 0 else {
            if captureOutput { close(pipeEnds[0]) }
            throw Failure(description: "could not start \(path): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        output = captureOutput ? FileHandle(fileDescriptor: pipeEnds[0], closeOnDealloc: true) : nil
    }

    /// Runs `path` to its end, blocking the calling thread; returns its standard output, or
    /// throws with its standard error when it does not exit with status 0.
    public static func run(
        _ path: String, _ arguments: [String], environment: [String: String] = [:]
    ) throws
        -> String
    {
        let errorFile = NSTemporaryDirectory() + "sovaria-child-\(UUID().uuidString).err"
        defer { try? FileManager.default.removeItem(atPath: errorFile) }
        let child = try ChildProcess(
            path, arguments, environment: environment, captureOutput: true, errorFile: errorFile)
        let output = child.output?.readDataToEndOfFile() ?? Data()
        let status = child.waitBlocking()
        guard succeeded(status) else {
            let errors = (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? ""
            throw Failure(
                description: "\(path) \(arguments.joined(separator: " ")) failed (status \(status)): \(errors)")
        }
        return String(decoding: output, as: UTF8.self)
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
}

/// Sets `FD_CLOEXEC` on every open descriptor above standard error, so no child started from
/// this process inherits one (posix_spawn's `closefrom` action is not visible from Swift).
/// Descriptors `dup2`'d onto 0–2 by a spawn lose the flag there, as they should.
private func markEveryDescriptorCloseOnExec() {
    let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    for name in open {
        guard let descriptor = Int32(name), descriptor > 2 else { continue }
        let flags = fcntl(descriptor, F_GETFD)
        if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
    }
}
