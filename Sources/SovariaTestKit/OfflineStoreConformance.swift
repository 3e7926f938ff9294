import Sovaria

/// The conformance suite: every contract of `OfflineStore`, as checks to run on a store.
///
/// Every store in Sovaria runs all of it, and so does `EncryptedOfflineStore` around each of
/// them. Run it on your own store with ``run(_:)`` or, one test case per check, with
/// ``checks`` (see ``ConformanceCheck``).
public enum OfflineStoreConformance {
    /// Every check, in a stable order.
    public static let checks: [ConformanceCheck] =
        keyChecks + valueChecks + byteChecks + scanChecks + borrowedScanChecks + batchChecks + lifeChecks
        + generatedInputChecks

    /// Runs every check on `factory` and returns the failures (empty when the store conforms).
    public static func run(_ factory: StoreFactory) async -> [ConformanceFailure] {
        var failures: [ConformanceFailure] = []
        for check in checks {
            do {
                try await check.run(on: factory)
            } catch let failure as ConformanceFailure {
                failures.append(failure)
            } catch {
                failures.append(ConformanceFailure(check: check.name, store: factory.name, message: "\(error)"))
            }
        }
        return failures
    }

    /// The UTF-8 byte order of `keys`, the order every store must list them in.
    static func byteSorted(_ keys: [String]) -> [String] {
        keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
