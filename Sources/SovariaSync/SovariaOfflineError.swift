import SovariaQueue

/// An error of the offline controller itself: a stable ``Code`` to match on and a message that
/// says what to do; a read the server answered with an error status carries the ``response``.
/// The queue's errors pass through as `WriteQueueError` (a full queue) and the store's as
/// `OfflineStoreError`.
///
/// ```swift
/// do { try await offline.flush() } catch let error as SovariaOfflineError where error.code == .closed {
///     // open a new controller
/// }
/// ```
public struct SovariaOfflineError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, stable across releases; new codes may be added.
    public var code: Code
    /// What happened and what to do next.
    public var message: String
    /// The server's answer, for ``Code/unexpectedStatus``; `nil` otherwise.
    public var response: DataResponse?

    /// Creates an error.
    public init(_ code: Code, _ message: String, response: DataResponse? = nil) {
        self.code = code
        self.message = message
        self.response = response
    }

    /// `"code: message"`.
    public var description: String { "\(code): \(message)" }

    /// A stable, extensible error code: match it with `==` or in a `switch`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) { self.name = name }

        /// The controller was closed (``SovariaOffline/close()``): make a new one to go on.
        public static let closed = Code("closed")
        /// No conflict waiting for the app has the id given to ``SovariaOffline/resolve(_:with:)``:
        /// it was resolved or dropped already.
        public static let noSuchConflict = Code("noSuchConflict")
        /// The server answered a read with neither 2xx nor 304 (``SovariaOfflineError/response``
        /// holds its answer): nothing was cached; check the request, or try again later for a 5xx.
        public static let unexpectedStatus = Code("unexpectedStatus")
        /// Another open controller of this process acts for the account on the same store
        /// (``SovariaOffline/Configuration/account``): close it, or sign it out, first.
        public static let accountInUse = Code("accountInUse")

        /// The code's name, e.g. `"closed"`.
        public var description: String { name }
    }
}
