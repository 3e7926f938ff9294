import Foundation

extension OfflineStore {
    /// Applies `batch` and, when the store cannot say whether it did
    /// (``OfflineStoreError/Code/outcomeUnknown``: the answer to a commit was lost, a database
    /// failed over), finds out: reads the batch's keys back once the store answers again, and sends
    /// the batch again when it was not applied. It returns once the batch is applied (once), or
    /// throws an error that leaves no doubt.
    ///
    /// Only for batches whose keys no one else writes meanwhile (the queue's keys are unique, and
    /// written under its gate): the keys' state tells whether the batch was applied. A batch that
    /// finds every key as it would leave it counts as applied (sending it again would change
    /// nothing).
    ///
    /// - Parameters:
    ///   - attempts: how many times the batch is sent at most.
    ///   - patience: how long the read-back waits for the store to answer, in all.
    ///   - pause: waits between read-backs (`Task.sleep`; tests pass one that returns at once).
    /// - Throws: the batch's own error when it is not about the outcome; when the store does not
    ///   answer within `patience`, ``OfflineStoreError/Code/outcomeUnknown`` again, saying so.
    package func writeLearningOutcome(
        _ batch: [StoreWrite], attempts: Int = 5, patience: Duration = .seconds(60),
        pause: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) async throws {
        var attempt = 1
        while true {
            do {
                try await write(batch)
                return
            } catch let error as OfflineStoreError where error.code == .outcomeUnknown {
                if try await isApplied(batch, patience: patience, pause: pause, after: error) { return }
                guard attempt < attempts else {
                    throw OfflineStoreError(
                        .io,
                        "A batch of \(batch.count) writes was sent \(attempts) times, each time without an answer, "
                            + "and reading its keys back showed it was not applied: it was not applied. "
                            + "Check the store's server, then try again. Last error: \(error.message)",
                        engine: error.engine, key: error.key, underlying: error)
                }
                attempt += 1
            }
        }
    }

    /// Whether the store holds what `batch` leaves (the last write of each key): reads the keys,
    /// waiting out errors (a store that is failing over) for up to `patience`.
    private func isApplied(
        _ batch: [StoreWrite], patience: Duration, pause: @Sendable (Duration) async throws -> Void,
        after error: OfflineStoreError
    ) async throws -> Bool {
        // Keyed and compared by bytes: `String`'s `==` merges canonically equivalent forms.
        var last: [StoreKey.Bytes: Data?] = [:]
        for write in batch {
            last[StoreKey.Bytes(write.key)] = .some(write.withValueBytes { Data($0) })
        }
        var waited = Duration.zero
        var delay = Duration.milliseconds(50)
        while true {
            do {
                for (key, expected) in last where try await data(key.string) != expected { return false }
                return true
            } catch let readError as OfflineStoreError where readError.code == .io || readError.code == .locked {
                guard waited < patience else {
                    var unknown = error
                    unknown.message +=
                        " Reading its keys back failed for \(patience) as well (\(readError.message)): "
                        + "whether it was applied is still not known."
                    throw unknown
                }
                try await pause(delay)
                waited += delay
                delay = min(delay * 2, .seconds(1))
            }
        }
    }
}
