import Foundation
import SovariaSync
import Synchronization

/// A timer the test fires by hand.
public final class ManualTimer: SyncTimer {
    /// A timer with no tick registered yet.
    public init() {}

    private let ticks = Mutex<[@Sendable () async -> Void]>([])

    /// Registers `fire`; the interval is ignored (the test decides when time passes).
    public func repeating(every interval: Duration, _ fire: @escaping @Sendable () async -> Void) -> SyncTimerTicket {
        ticks.withLock { $0.append(fire) }
        return SyncTimerTicket {}
    }

    /// Runs every registered tick once, as if the interval passed.
    public func fire() async {
        for tick in ticks.withLock({ $0 }) { await tick() }
    }
}

/// A clock the test moves by hand.
public final class TestClock: Sendable {
    /// A clock at 2027-01-15 08:00:00 UTC.
    public init() {}

    private let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    /// The clock as the controller's configuration takes it.
    public var read: @Sendable () -> Date { { self.now.withLock { $0 } } }
    /// Moves the clock forward.
    public func advance(seconds: TimeInterval) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// JSON Web Tokens the test server (`Tests/Server/restserver.py`) takes: `sub` names the user,
/// and the signature `test-signature` stands in for a real one (any other is refused as forged).
public enum TestJWT {
    /// A token of `subject`, as a sign-in would issue it.
    public static func token(of subject: String, signature: String = "test-signature") -> String {
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return part(#"{"alg":"HS256","typ":"JWT"}"#) + "." + part(#"{"sub":"\#(subject)","role":"authenticated"}"#)
            + "." + signature
    }
}
