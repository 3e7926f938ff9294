import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers

/// The stores every cache test runs on (the package's one engine list), PostgreSQL included.
typealias CacheEngine = TestEngine

extension TestEngine {
    static let all = standard(sqliteFile: "cache.sqlite", including: .postgres)
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let now = NSLock()
    nonisolated(unsafe) private var current = Date(timeIntervalSince1970: 1_800_000_000)

    var date: Date { now.withLock { current } }
    func advance(by seconds: TimeInterval) { now.withLock { current += seconds } }
    var function: @Sendable () -> Date { { self.date } }
}

/// Server times one second apart, from a fixed start.
func serverTime(_ second: Int) -> Date { Date(timeIntervalSince1970: 1_700_000_000 + Double(second)) }

/// A body of exactly `bytes` UTF-8 bytes, with multi-byte characters in it.
func body(_ bytes: Int, _ tag: String = "") -> String {
    let unit = "é"  // 2 bytes
    let prefix = String(tag.prefix(8))
    let remaining = bytes - prefix.utf8.count
    return prefix + String(repeating: unit, count: remaining / 2) + String(repeating: "x", count: remaining % 2)
}
