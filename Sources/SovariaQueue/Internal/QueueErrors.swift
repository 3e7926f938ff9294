import Sovaria

/// The errors the write queue throws, with messages that say what to do: its own conditions as
/// ``WriteQueueError``, damaged entries in the store as `OfflineStoreError.Code.corrupt`.
enum QueueErrors {
    static func full(_ maxQueued: Int) -> WriteQueueError {
        WriteQueueError(
            .queueFull,
            "OFFLINE_QUEUE_FULL: \(maxQueued) writes are already waiting to be sent (maxQueued), so this one was not "
                + "queued. Send the queue once online (flush), or remove or reject queued writes, then try again; "
                + "to allow more, open the queue with a larger maxQueued.")
    }

    static func badClientID(_ id: String, _ reason: String) -> WriteQueueError {
        WriteQueueError(
            .invalidClientID,
            "The client id \"\(id)\" cannot be used (\(reason)); nothing was queued. Leave the id out and "
                + "the queue makes one (WriteQueue.makeClientID()).",
            writeID: id)
    }

    static func notRejected(_ id: String) -> WriteQueueError {
        WriteQueueError(
            .notFound,
            "No rejected write has the id \(id): it was requeued, discarded or cleared. Read rejected() again.",
            writeID: id)
    }

    static func malformedKey(_ key: String) -> OfflineStoreError {
        OfflineStoreError(
            .corrupt,
            "The key \(key) is under the write queue's prefixes but is not one of its keys (\"<20 digits>:<id>\"): "
                + "something other than WriteQueue wrote it. Delete that key from the store to open the queue.",
            key: key)
    }

    static func undecodable(_ key: String, _ reason: String, _ underlying: (any Error)? = nil) -> OfflineStoreError {
        OfflineStoreError(
            .corrupt,
            "The value under \(key) cannot be read as a write-queue entry (\(reason)). Remove that entry "
                + "(WriteQueue.remove or discard with the id at the end of the key) or clear the queue.",
            key: key, underlying: underlying)
    }
}
