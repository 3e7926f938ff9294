import Sovaria
import SovariaQueue

/// The only thing ``SovariaOffline`` knows of the network: sends one request, returns the
/// server's answer.
///
/// Return every answer the server gave, whatever its status (the controller decides what a 409
/// or a 503 means); throw ``SyncTransportError`` with ``SyncTransportError/Code/offline`` when
/// the request did not reach the server for lack of network, and another code (or any other
/// error) for everything else.
///
/// A transport that adds credentials (a bearer token) sends a request a controller makes for an
/// account (``SovariaOffline/sendingAccount``) only with that account's, and throws
/// ``SyncTransportError/Code/wrongAccount`` without sending it when it holds no credentials of
/// that account: `URLSessionTransport` does.
///
/// - Important: Called from any task, one request at a time per controller for queued writes.
public protocol SyncTransport: Sendable {
    /// Sends `request` and returns the server's answer.
    func send(_ request: DataRequest) async throws -> DataResponse
}

extension SovariaOffline {
    /// The account of the controller whose request is being sent: a controller with a
    /// ``Configuration/account`` sets it around every request it sends (its reads, its queue's
    /// writes, its change feed's reads), so a transport sees it however many transports wrap
    /// it, as long as each calls the next on the same task: a task-local value does not reach a
    /// `Task.detached`, nor work handed to another task (a worker fed by a stream, a fetch joined
    /// from another caller), where a transport would see `nil`. `nil` for a controller without
    /// an account, and for a request sent outside a controller.
    ///
    /// A transport that adds credentials reads it to send the request only as its account:
    ///
    /// ```swift
    /// struct KeyedTransport: SyncTransport {
    ///     let keys: [AccountID: String]
    ///     let base: any SyncTransport
    ///     func send(_ request: DataRequest) async throws -> DataResponse {
    ///         guard let account = SovariaOffline.sendingAccount else { return try await base.send(request) }
    ///         guard let key = keys[account] else {
    ///             throw SyncTransportError(.wrongAccount, "No key of \(account): nothing was sent.")
    ///         }
    ///         var keyed = request
    ///         keyed.setHeader("X-User-Key", key)
    ///         return try await base.send(keyed)
    ///     }
    /// }
    /// ```
    @TaskLocal public static var sendingAccount: AccountID?

    /// Sends `request` through the transport as this controller's account
    /// (``sendingAccount``).
    func send(_ request: DataRequest) async throws -> DataResponse {
        try await Self.$sendingAccount.withValue(configuration.account) { try await transport.send(request) }
    }

    /// Runs `body` (a change feed's read) as this controller's account (``sendingAccount``).
    func asAccount<Value: Sendable>(_ body: () async throws -> Value) async throws -> Value {
        try await Self.$sendingAccount.withValue(configuration.account) { try await body() }
    }
}
