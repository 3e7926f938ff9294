import Foundation
import SovariaQueue

/// How long to wait before the next try of a write the server asked to try later.
enum RetryDelay {
    /// `Retry-After` when the answer has one (seconds, or an HTTP date), else exponential
    /// backoff: `base` doubled per earlier failure, at most `maximum`, times a jitter of 50–100%.
    static func after(
        _ response: DataResponse, failures: Int, base: Duration, maximum: Duration, jitter: Double, now: Date
    ) -> Duration {
        if let value = response.header("Retry-After")?.trimmingCharacters(in: .whitespaces) {
            if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
            if let date = HTTPDate.parse(value) { return .seconds(max(0, date.timeIntervalSince(now))) }
        }
        let doubled = base * (1 << min(max(failures - 1, 0), 30))
        let capped = min(doubled, maximum)
        return capped * (0.5 + 0.5 * min(max(jitter, 0), 1))
    }
}

/// HTTP dates (`Sun, 06 Nov 1994 08:49:37 GMT`), as `Date` and `Retry-After` headers carry them.
enum HTTPDate {
    static func parse(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
