import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a program to its end with `posix_spawn` and `waitpid`, blocking the calling thread.
///
/// Not Foundation's `Process`: its `waitUntilExit()` waits for a SIGCHLD handler that runs on a
/// Dispatch queue, and in the test process that handler never ran, so the first `pgcluster start`
/// was never reaped and every test waiting for the cluster hung. `Process` also lets the child
/// inherit the test runner's open descriptors, and the PostgreSQL server `pgcluster` starts keeps
/// them open for its whole life (a runner waiting for end-of-file on one of its pipes then waits
/// for the server). Here the child gets standard input from /dev/null, two fresh pipes, and no
/// other descriptor.
enum ChildProcess {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `path` with `arguments` and this process's environment plus `environment`; returns
    /// its standard output, or throws with its standard error when it exits with a status other
    /// than 0.
    static func run(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        var outputPipe: [Int32] = [-1, -1]
        var errorPipe: [Int32] = [-1, -1]
        guard pipe(&outputPipe) == 0, pipe(&errorPipe) == 0 else {
            throw Failure(description: "pipe failed: errno \(errno)")
        }
        markEveryDescriptorCloseOnExec()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var variables = ProcessInfo.processInfo.environment
        variables.merge(environment) { _, new in new }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for variable in envp { free(variable) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        close(outputPipe[1])
        close(errorPipe[1])
        defer {
            close(outputPipe[0])
            close(errorPipe[0])
        }
        guard spawned == 0 else { throw Failure(description: "\(path) could not start: errno \(spawned)") }
        // Standard error on a second thread, so that neither pipe fills while the other is read.
        let errors = ReadToEnd(errorPipe[0])
        let output = readToEnd(outputPipe[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let errorText = String(decoding: errors.wait(), as: UTF8.self)
        let exitCode = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        guard exitCode == 0 else {
            throw Failure(
                description: "\(path) \(arguments.joined(separator: " ")) exited with \(exitCode): \(errorText)")
        }
        return String(decoding: output, as: UTF8.self)
    }
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

/// Every byte until end of file.
private func readToEnd(_ descriptor: Int32) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4_096)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            bytes += chunk[0..<count]
        } else if count == 0 || errno != EINTR {
            return bytes
        }
    }
}

/// Reads a descriptor to its end on a thread of its own.
private final class ReadToEnd: @unchecked Sendable {
    // @unchecked Sendable: `bytes` is written once under `condition` and read after it is set.
    private let condition = NSCondition()
    private var bytes: [UInt8]?

    init(_ descriptor: Int32) {
        let thread = Thread { [self] in
            let read = readToEnd(descriptor)
            condition.lock()
            bytes = read
            condition.signal()
            condition.unlock()
        }
        thread.start()
    }

    func wait() -> [UInt8] {
        condition.lock()
        defer { condition.unlock() }
        while bytes == nil { condition.wait() }
        return bytes ?? []
    }
}
