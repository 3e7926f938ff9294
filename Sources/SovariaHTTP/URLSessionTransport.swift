import Foundation
import Sovaria
import SovariaCache
import SovariaPlumbing
import SovariaQueue
import SovariaSync
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The HTTP transport apps use: sends `SovariaQueue.DataRequest`s to a PostgREST-style API
/// with `URLSession`.
///
/// - Every request goes to ``baseURL`` plus the request's path (with its query), with the
///   default headers: `apikey` when set, `Authorization: Bearer <token>` from the token
///   provider, `Content-Type: application/json` for a body, the configuration's own headers,
///   then the request's headers (which win).
/// - Writes (any method but `GET` and `HEAD`) carry an `Idempotency-Key`: the controller's
///   client id, or a new one when the request has none.
/// - Reads carry what the controller asks for; a cached ETag arrives as `If-None-Match`, and a
///   `304` goes back to the controller, which keeps the cached body.
/// - A request a controller makes for an account (`SovariaSync.SovariaOffline.sendingAccount`) is
///   sent only with a token of that account: the provider's ``AccessTokenProvider/accessToken(for:)``,
///   whose owner ``AccessTokenProvider/account(ofToken:)`` (a JSON Web Token's `sub`, by default)
///   must be the account, and no `Authorization` header of the configuration or the request
///   replaces it. Otherwise the request is not sent with that token, and
///   `SovariaSync.SyncTransportError` with code `wrongAccount` is thrown: a queued write waits for
///   its author's token. Without a token provider nothing is checked: give one with accounts.
/// - A `401` asks the token provider to refresh (once per request; concurrent 401s share one
///   refresh) and sends the request again with the new token; the second answer is returned
///   whatever it is, so the controller still sees a `401` that a refresh did not cure.
/// - Every failure throws `SovariaSync.SyncTransportError`: no network (not connected, cannot
///   connect or find the host, DNS, connection lost, timed out, no data allowed) with code
///   `offline`, which the controller recognises; a path that makes no http(s) URL with
///   `invalidRequest`; an answer that is not HTTP with `invalidResponse`; anything else with
///   `failed`. Every answer the server gave is returned, whatever its status.
///
/// ```swift
/// let transport = URLSessionTransport(
///     baseURL: URL(string: "https://project.example.com")!, apiKey: "anon-key", tokens: session)
/// let offline = try await SovariaOffline(store: store, transport: transport)
/// ```
public final class URLSessionTransport: SyncTransport {
    /// Where the API is: requests go to this URL plus their path.
    public let baseURL: URL
    private let configuration: Configuration
    private let session: URLSession
    private let tokens: (any AccessTokenProvider)?
    /// One refresh per stale token: the requests that got a 401 with the same token share it.
    private let refreshes = SingleFlight<String?, Void>()

    /// A transport to `baseURL`, with `apiKey` sent as the `apikey` header (when not `nil`), the
    /// bearer token from `tokens` (when not `nil`), and `configuration`'s headers and timeout.
    public init(
        baseURL: URL, apiKey: String? = nil, tokens: (any AccessTokenProvider)? = nil,
        configuration: Configuration = Configuration()
    ) {
        self.baseURL = baseURL
        var configuration = configuration
        if let apiKey {
            for name in configuration.headers.keys where DataRequest.sameHeaderName(name, "apikey") {
                configuration.headers[name] = nil
            }
            configuration.headers["apikey"] = apiKey
        }
        self.configuration = configuration
        self.tokens = tokens
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = configuration.timeout.timeInterval
        sessionConfiguration.timeoutIntervalForResource = configuration.timeout.timeInterval
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration.urlCache = nil
        session = URLSession(configuration: sessionConfiguration)
    }

    deinit { session.finishTasksAndInvalidate() }

    /// Sends `request` and returns the server's answer, whatever its status.
    ///
    /// - Throws: `SovariaSync.SyncTransportError`: code `offline` when the request did not reach
    ///   the server for lack of network; `invalidRequest` for a path that makes no http(s) URL,
    ///   `invalidResponse` for an answer that is not HTTP, `wrongAccount` for a request of an
    ///   account the token provider has no token of (not sent with it), `failed` for another
    ///   failure. The token provider's errors pass through as they are.
    public func send(_ request: DataRequest) async throws -> DataResponse {
        var request = request
        if !Self.isRead(request.method), request.header(SovariaOffline.idempotencyHeader) == nil {
            request.setHeader(SovariaOffline.idempotencyHeader, WriteQueue.makeClientID())
        }
        let account = SovariaOffline.sendingAccount
        let token = try await tokens?.accessToken(for: account)
        try check(token, isOf: account, request)
        // Taken before the request goes: a refresh of the same token that finishes while it is
        // on the way (another request's 401) already cured its 401, and no second one starts.
        let ticket = refreshes.ticket()
        // A checked token wins over every other `Authorization` (the configuration's, the
        // request's own): the request goes as the account or not at all.
        let checked = account != nil && tokens != nil
        let first = try await send(request, token: token, winning: checked)
        guard first.status == 401, let tokens else { return first }
        try await refreshes.run(token, sharing: .finishedAfter(ticket)) {
            try await tokens.refreshAccessToken(for: account)
        }
        let renewed = try await tokens.accessToken(for: account)
        try check(renewed, isOf: account, request)
        return try await send(request, token: renewed, winning: checked)
    }

    /// Throws `wrongAccount` unless `token` is `account`'s: a request a controller makes for an
    /// account goes with that account's token or not at all. Requests for no account, and a
    /// transport without a token provider, are not checked.
    private func check(_ token: String?, isOf account: AccountID?, _ request: DataRequest) throws {
        guard let account, let tokens else { return }
        let what = "\(request.method) \(request.path) was not sent with this token"
        guard let token else {
            throw SyncTransportError(
                .wrongAccount, "\(what): the token provider has no token for the account \(account); sign it in again.")
        }
        guard let owner = tokens.account(ofToken: token) else {
            throw SyncTransportError(
                .wrongAccount,
                "\(what): the account \(account)'s token does not say whose it is (not a JSON Web Token with a `sub` "
                    + "claim); implement AccessTokenProvider.account(ofToken:).")
        }
        guard owner == account else {
            throw SyncTransportError(
                .wrongAccount, "\(what): the token provider gave the token of \(owner) for the account \(account).")
        }
    }

    private func send(_ request: DataRequest, token: String?, winning: Bool) async throws -> DataResponse {
        let urlRequest = try makeURLRequest(request, token: token, winning: winning)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch let error as URLError where Self.offlineCodes.contains(error.code) {
            throw SyncTransportError.offline("\(request.method) \(request.path): \(error.localizedDescription)")
        } catch {
            throw SyncTransportError(.failed, "\(request.method) \(request.path) failed: \(error)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw SyncTransportError(
                .invalidResponse,
                "\(request.method) \(request.path): the answer was not HTTP: check that the base URL points at the API."
            )
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String { headers[name] = value as? String ?? "\(value)" }
        }
        return DataResponse(status: http.statusCode, headers: headers, body: String(decoding: data, as: UTF8.self))
    }

    /// The request as URLSession sends it; `winning`: the token's `Authorization` is set last,
    /// over the request's own.
    private func makeURLRequest(_ request: DataRequest, token: String?, winning: Bool) throws -> URLRequest {
        guard let url = URL(string: request.path, relativeTo: baseURL)?.absoluteURL,
            url.scheme == "http" || url.scheme == "https"
        else {
            throw SyncTransportError(
                .invalidRequest, "The path \(request.path) does not make an http(s) URL with the base URL: check both.")
        }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method
        urlRequest.timeoutInterval = configuration.timeout.timeInterval
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        if let body = request.body { urlRequest.httpBody = Data(body.utf8) }
        // Each layer wins over the ones before it, whatever the spelling; within a layer, the
        // spelling `DataRequest.header(_:)` reads (the first by its bytes) is set last and wins.
        let bearer = token.map { ["Authorization": "Bearer " + $0] } ?? [:]
        let layers: [[String: String]] = [
            configuration.headers, winning ? [:] : bearer,
            request.body == nil ? [:] : ["Content-Type": "application/json"], request.headers, winning ? bearer : [:],
        ]
        var headers = DataRequest(method: request.method, path: request.path)
        for layer in layers {
            for (name, value) in layer.sorted(by: { $1.key.utf8.lexicographicallyPrecedes($0.key.utf8) }) {
                headers.setHeader(name, value)
            }
        }
        for (name, value) in headers.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        return urlRequest
    }

    /// URLSession's failures that mean the request did not reach the server (or its answer did
    /// not come back) for lack of network.
    static let offlineCodes: Set<URLError.Code> = [
        .notConnectedToInternet, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed,
        .networkConnectionLost, .timedOut, .dataNotAllowed, .internationalRoamingOff, .callIsActive,
        .secureConnectionFailed, .resourceUnavailable,
    ]

    private static func isRead(_ method: String) -> Bool {
        let method = method.uppercased()
        return method == "GET" || method == "HEAD"
    }
}

extension URLSessionTransport {
    /// Headers and timeout of a transport.
    public struct Configuration: Sendable {
        /// Headers sent with every request (the request's own headers win). Default: none.
        public var headers: [String: String] = [:]
        /// How long a request may take before it counts as offline (`timedOut`). Default: 30 s.
        public var timeout: Duration = .seconds(30)

        /// The defaults.
        public init() {}
    }
}
