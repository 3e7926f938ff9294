import Foundation
import Sovaria

/// Where ``URLSessionTransport`` gets the bearer token, how it gets a new one after a `401`, and
/// whose a token is.
///
/// ```swift
/// final class Session: AccessTokenProvider {
///     func accessToken() async throws -> String? { keychain.token }
///     func refreshAccessToken() async throws { keychain.token = try await auth.refresh() }
/// }
/// ```
///
/// A request a controller makes for an account (`SovariaOffline.sendingAccount`) goes only with
/// a token of that account: the transport asks ``accessToken(for:)`` and checks the answer with
/// ``account(ofToken:)``. A provider that keeps one token per signed-in user gives each account
/// its own; one that keeps only the current user's lets a request of a user signed out since
/// wait, unsent, instead of going as the next one.
public protocol AccessTokenProvider: Sendable {
    /// The token to send as `Authorization: Bearer <token>`, or `nil` to send none.
    func accessToken() async throws -> String?
    /// Gets a new token after the server answered `401`; ``accessToken()`` returns it afterwards.
    func refreshAccessToken() async throws
    /// The token of `account`'s requests, or `nil` when the provider has none. Default:
    /// ``accessToken()``, whoever `account` is (the transport then checks whose it is).
    func accessToken(for account: AccountID?) async throws -> String?
    /// Gets a new token of `account` after the server answered `401`. Default:
    /// ``refreshAccessToken()``.
    func refreshAccessToken(for account: AccountID?) async throws
    /// The account `token` was issued to, or `nil` when it cannot tell. Default: the `sub` claim
    /// of a JSON Web Token (what Supabase, Auth0, Firebase and Cognito name their user by; see
    /// ``JSONWebToken/subject(of:)``). Give your own when the app's account ids are not the
    /// tokens' subjects or its tokens are opaque.
    func account(ofToken token: String) -> AccountID?
}

extension AccessTokenProvider {
    /// ``accessToken()``: the provider keeps one token, the current user's.
    public func accessToken(for account: AccountID?) async throws -> String? { try await accessToken() }

    /// ``refreshAccessToken()``.
    public func refreshAccessToken(for account: AccountID?) async throws { try await refreshAccessToken() }

    /// The token's `sub` claim, when it is a JSON Web Token whose subject is a valid `AccountID`.
    public func account(ofToken token: String) -> AccountID? {
        JSONWebToken.subject(of: token).flatMap { try? AccountID($0) }
    }
}

/// Reads the claims of a JSON Web Token (RFC 7519) without checking its signature: enough to tell
/// whose a token is on the device, which the server checks properly.
public enum JSONWebToken {
    /// The `sub` claim of `token` (`header.payload.signature`, each base64url), or `nil` when
    /// `token` is not a JSON Web Token or has no string subject.
    public static func subject(of token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = decodeBase64URL(parts[1]),
            let claims = try? JSONSerialization.jsonObject(with: payload) as? [String: Any]
        else { return nil }
        return claims["sub"] as? String
    }

    private static func decodeBase64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
