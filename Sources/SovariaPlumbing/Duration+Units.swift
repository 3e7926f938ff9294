import Foundation

extension Duration {
    /// The duration in seconds, with its fraction: what Foundation's and Dispatch's APIs take.
    package var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// The whole milliseconds of the duration (rounded down), clamped to `Int`: what C APIs with
    /// a millisecond timeout take.
    package var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (sum, sumOverflow) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return sumOverflow ? .max : Int(clamping: sum)
    }
}
