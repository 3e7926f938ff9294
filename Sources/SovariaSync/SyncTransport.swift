import SovariaQueue

/// The only thing ``SovariaOffline`` knows of the network: sends one request, returns the
/// server's answer.
///
/// Return every answer the server gave, whatever its status (the controller decides what a 409
/// or a 503 means); throw ``SyncTransportError/offline(_:)`` when the request did not reach the
/// server for lack of network, and any other error for everything else.
///
/// - Important: Called from any task, one request at a time per controller for queued writes.
public protocol SyncTransport: Sendable {
    /// Sends `request` and returns the server's answer.
    func send(_ request: DataRequest) async throws -> DataResponse
}

/// The errors a ``SyncTransport`` throws that the controller recognises.
public enum SyncTransportError: Error, Sendable, Hashable {
    /// The request did not reach the server: no network, the host could not be reached, the
    /// connection was lost or timed out. Writes wait in the queue; reads fall back to the cache.
    case offline(String)
}
