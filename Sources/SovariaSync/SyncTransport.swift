import SovariaQueue

/// The only thing ``SovariaOffline`` knows of the network: sends one request, returns the
/// server's answer.
///
/// Return every answer the server gave, whatever its status (the controller decides what a 409
/// or a 503 means); throw ``SyncTransportError`` with ``SyncTransportError/Code/offline`` when
/// the request did not reach the server for lack of network, and another code (or any other
/// error) for everything else.
///
/// - Important: Called from any task, one request at a time per controller for queued writes.
public protocol SyncTransport: Sendable {
    /// Sends `request` and returns the server's answer.
    func send(_ request: DataRequest) async throws -> DataResponse
}
