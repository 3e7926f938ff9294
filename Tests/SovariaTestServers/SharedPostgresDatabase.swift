import Testing

/// A test trait that starts the shared PostgreSQL cluster before the tests it marks run, and
/// hands them the conninfo of the shared database (``PostgresCluster/sharedDatabase()``) through
/// ``conninfo()``: for tests that open stores in synchronous code, where awaiting the cluster is
/// impossible.
///
/// ```swift
/// @Suite(.sharedPostgresDatabase) struct QueueTests { … }
/// ```
public struct SharedPostgresDatabase: SuiteTrait, TestTrait, TestScoping {
    @TaskLocal private static var current: String?

    /// Once for a suite, not once for each of its tests.
    public var isRecursive: Bool { false }

    /// Runs `function` with the shared database's conninfo set for ``conninfo()``.
    ///
    /// `@concurrent`, like the requirement's closure: this package's upcoming-feature setting
    /// would otherwise make both `nonisolated(nonsending)`, which does not match the protocol.
    @concurrent public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @concurrent @Sendable () async throws -> Void
    ) async throws {
        if Self.current != nil { return try await function() }
        let conninfo = try await PostgresCluster.sharedDatabase()
        try await Self.$current.withValue(conninfo) { try await function() }
    }

    /// The shared database's conninfo; throws outside a test marked with the trait.
    public static func conninfo() throws -> String {
        guard let current else {
            throw PostgresCluster.Failure(
                description: "No PostgreSQL database here: mark the suite or test with .sharedPostgresDatabase")
        }
        return current
    }
}

extension Trait where Self == SharedPostgresDatabase {
    /// Starts the shared PostgreSQL cluster first and lets the tests read its database's conninfo
    /// synchronously (``SharedPostgresDatabase/conninfo()``).
    public static var sharedPostgresDatabase: Self { SharedPostgresDatabase() }
}
