import Sovaria

/// Why a `sovaria` command stopped, and the process exit status that says so.
///
/// The exit statuses are part of the command's interface (the Sovaria catalog's article "The sovaria command"):
/// scripts branch on them, so a status never changes meaning.
struct CommandFailure: Error {
    /// The documented exit statuses.
    enum ExitStatus: Int32 {
        case done = 0
        case other = 1
        case usage = 2
        case cannotOpen = 3
        case verifyFoundDifference = 4
        case targetFull = 5
        case interrupted = 6
        case wrongKey = 7
    }

    var status: ExitStatus
    /// What went wrong and what to do next, for a person.
    var message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    static func usage(_ message: String) -> CommandFailure {
        CommandFailure(.usage, message + "\nRun `sovaria help` for the commands and their options.")
    }

    /// Maps a store's error to the exit status a script can act on.
    static func from(_ error: any Error, while doing: String) -> CommandFailure {
        if let failure = error as? CommandFailure { return failure }
        guard let storeError = error as? OfflineStoreError else {
            return CommandFailure(.other, "\(doing) failed: \(error)")
        }
        switch storeError.code {
        case .full:
            return CommandFailure(
                .targetFull,
                "\(doing) failed: the disk is full (\(storeError.message)). Free space or choose another target, then "
                    + "run the same command again (migrate: add --resume).")
        case .decryptionFailed:
            return CommandFailure(
                .wrongKey,
                "\(doing) failed: a value does not decrypt (\(storeError.message)). Check --key-file or "
                    + "SOVARIA_PASSPHRASE; if the key is right, run `sovaria verify` to list damaged values.")
        default:
            return CommandFailure(.other, "\(doing) failed: \(storeError)")
        }
    }
}
