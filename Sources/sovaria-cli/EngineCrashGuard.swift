import Foundation

/// Turns a crash inside an engine's C code during `sovaria verify` into a report and exit status 4.
///
/// LMDB reads its pages in place, with no checksum: a page damaged so that an offset points
/// outside the map ends the process with SIGSEGV (or SIGBUS past the end of the file). For
/// `verify` that crash is itself the finding. The handler may only call async-signal-safe
/// functions, so its message is made before any engine opens.
enum EngineCrashGuard {
    /// Installs the handler for SIGSEGV and SIGBUS, with a message naming `location`.
    static func install(for location: StoreLocation) {
        let message =
            "\nverify: the engine crashed reading \(location.place): its files are damaged in a way the engine does "
            + "not check.\nverify: what to do: \(EngineCheck.advice(for: location))\nsovaria: \(location) is damaged.\n"
        crashMessage = strdup(message)
        signal(SIGSEGV, reportCrash)
        signal(SIGBUS, reportCrash)
    }
}

/// The message ``reportCrash(_:)`` writes; set once, before the handler can run.
nonisolated(unsafe) private var crashMessage: UnsafeMutablePointer<CChar>?

/// Writes the prepared message and exits with status 4 (`write` and `_exit` are async-signal-safe).
private func reportCrash(_ signal: Int32) {
    if let crashMessage { _ = write(STDERR_FILENO, crashMessage, strlen(crashMessage)) }
    _exit(CommandFailure.ExitStatus.verifyFoundDifference.rawValue)
}
