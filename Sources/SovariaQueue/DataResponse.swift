/// What the server answered to a ``DataRequest``: the status, the headers and the body.
public struct DataResponse: Sendable, Hashable {
    /// The HTTP status code.
    public var status: Int
    /// The response headers; look names up with ``header(_:)``, which ignores case.
    public var headers: [String: String]
    /// The body as text.
    public var body: String

    /// A response.
    public init(status: Int, headers: [String: String] = [:], body: String = "") {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the header `name`, compared without case (`"etag"` finds `"ETag"`).
    public func header(_ name: String) -> String? {
        if let exact = headers[name] { return exact }
        return headers.first { DataRequest.sameHeaderName($0.key, name) }?.value
    }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }

    /// Whether the status says the same request may succeed later: 408, 429 or a 5xx.
    public var asksToTryLater: Bool { status == 408 || status == 429 || (500..<600).contains(status) }
}
