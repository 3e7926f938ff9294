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
