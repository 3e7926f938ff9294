/// One contract of `OfflineStore`, checked against stores from a ``StoreFactory``.
///
/// Run every check as its own test case:
///
/// ```swift
/// @Test(arguments: OfflineStoreConformance.checks)
/// func myStoreConforms(_ check: ConformanceCheck) async throws {
///     try await check.run(on: StoreFactory("mine") { folder in MyStore(folder: folder) })
/// }
/// ```
public struct ConformanceCheck: Sendable, CustomStringConvertible {
    /// A short name, e.g. `"keysAreBytes"`.
    public let name: String
    /// The contract checked, in a sentence.
    public let contract: String
    let body: @Sendable (ConformanceContext) async throws -> Void

    init(_ name: String, _ contract: String, _ body: @escaping @Sendable (ConformanceContext) async throws -> Void) {
        self.name = name
        self.contract = contract
        self.body = body
    }

    /// Runs the check on fresh stores from `factory`; throws a ``ConformanceFailure`` naming
    /// the broken contract, or the store's own error when a call that must succeed fails.
    public func run(on factory: StoreFactory) async throws {
        let context = try ConformanceContext(factory: factory, checkName: name)
        do {
            try await body(context)
        } catch let failure as ConformanceFailure {
            throw failure
        } catch {
            throw context.failure("unexpected error: \(error)")
        }
    }

    /// The check's name.
    public var description: String { name }
}
