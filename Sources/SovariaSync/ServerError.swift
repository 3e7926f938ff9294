import Foundation

/// A read answered with neither 2xx nor 304.
public struct ServerError: Error, Sendable, Hashable {
    /// The answer.
    public let response: DataResponse
}
