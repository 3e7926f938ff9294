import Synchronization

/// Where ``URLSessionTransport`` gets the bearer token, and how it gets a new one after a `401`.
///
/// ```swift
/// final class Session: AccessTokenProvider {
///     func accessToken() async throws -> String? { keychain.token }
///     func refreshAccessToken() async throws { keychain.token = try await auth.refresh() }
/// }
/// ```
public protocol AccessTokenProvider: Sendable {
    /// The token to send as `Authorization: Bearer <token>`, or `nil` to send none.
    func accessToken() async throws -> String?
    /// Gets a new token after the server answered `401`; ``accessToken()`` returns it afterwards.
    func refreshAccessToken() async throws
}

/// One refresh at a time: requests that got a 401 with the same token share one refresh.
final class TokenRefresh: Sendable {
    private struct Running {
        var token: String?
        var task: Task<Void, any Error>
    }

    private let running = Mutex<Running?>(nil)

    /// Runs `refresh` unless one started for the same stale `token` is running, and waits for it.
    func run(after token: String?, _ refresh: @escaping @Sendable () async throws -> Void) async throws {
        let task = running.withLock { running -> Task<Void, any Error> in
            if let current = running, current.token == token { return current.task }
            let task = Task { try await refresh() }
            running = Running(token: token, task: task)
            return task
        }
        defer { running.withLock { if $0?.token == token { $0 = nil } } }
        try await task.value
    }
}
