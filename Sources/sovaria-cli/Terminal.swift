import Foundation
import Sovaria
import SovariaPlumbing
import Synchronization

/// Standard output and standard error, written with `write(2)` so nothing is lost in a buffer
/// when the process exits with a status.
enum Terminal {
    static func write(_ bytes: [UInt8], to descriptor: Int32 = STDOUT_FILENO) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return  // A closed pipe (`sovaria dump … | head`): nothing more to say.
                }
                offset += written
            }
        }
    }

    static func print(_ text: String) { write(Array((text + "\n").utf8)) }

    static func printError(_ text: String) { write(Array((text + "\n").utf8), to: STDERR_FILENO) }

    static var errorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// The width of the terminal standard error writes to, when it is one and says.
    static var errorColumns: Int? {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}

/// SIGINT and SIGTERM during `migrate`: the work stops after the page it is writing, so the
/// target holds whole pages and a checkpoint.
enum Interruption {
    private static let requested = Atomic<Bool>(false)

    static var isRequested: Bool { requested.load(ordering: .relaxed) }

    static func install() {
        let handler: @convention(c) (Int32) -> Void = { _ in Interruption.requested.store(true, ordering: .relaxed) }
        signal(SIGINT, handler)
        signal(SIGTERM, handler)
    }
}

/// Progress on standard error: a line redrawn in place (`\r`) on a terminal, a plain line every
/// few seconds when standard error is a file or a pipe.
///
/// Once the total is known (``countTotal(_:)`` counts it beside the work), the line also shows
/// the percentage, a bar and the time left:
///
///     migrate  42% [########            ] 8400/20000 entries, 8.2 MiB, 4100 entries/s, ETA 0:03
final class ProgressLine {
    /// The number of entries the work will reach, once a counting task has found it.
    private final class Total: Sendable {
        let value = Atomic<Int>(-1)
    }

    private let verb: String
    private let isTerminal = Terminal.errorIsTerminal
    private let quiet: Bool
    private let start = ContinuousClock.now
    private let total = Total()
    private var counting: Task<Void, Never>?
    private var lastShown = ContinuousClock.now
    private var shownOnce = false

    init(verb: String, quiet: Bool) {
        self.verb = verb
        self.quiet = quiet
    }

    deinit { counting?.cancel() }

    /// Counts the total beside the work with `count` (for example a paged walk over the source),
    /// so the first lines need not wait for it; a failed or cancelled count leaves the line
    /// without a percentage.
    func countTotal(_ count: @escaping @Sendable () async throws -> Int) {
        guard !quiet else { return }
        let total = self.total
        counting = Task {
            if let counted = try? await count(), !Task.isCancelled { total.value.store(counted, ordering: .relaxed) }
        }
    }

    func update(entries: Int, bytes: Int) {
        guard !quiet else { return }
        let now = ContinuousClock.now
        guard now - lastShown >= (isTerminal ? .milliseconds(200) : .seconds(2)) else { return }
        lastShown = now
        show(entries: entries, bytes: bytes, final: false)
    }

    func finish(entries: Int, bytes: Int) {
        counting?.cancel()
        guard !quiet, shownOnce || isTerminal else { return }
        show(entries: entries, bytes: bytes, final: true)
    }

    private func show(entries: Int, bytes: Int, final: Bool) {
        shownOnce = true
        let elapsed = max(0.001, (ContinuousClock.now - start).timeInterval)
        let rate = Double(entries) / elapsed
        let mebibytes = String(format: "%.1f", Double(bytes) / 1_048_576)
        // At the end the work itself is the total: entries may have come or gone since the count.
        let known = total.value.load(ordering: .relaxed)
        let total: Int? = final ? entries : (known >= entries ? known : nil)
        var text: String
        if let total {
            let fraction = total == 0 ? 1 : Double(entries) / Double(total)
            let percent = String(Int((fraction * 100).rounded(.down)))
            text =
                isTerminal
                ? "\(verb) \(String(repeating: " ", count: 3 - percent.count))\(percent)% \(Self.bar(fraction)) "
                    + "\(entries)/\(total) entries"
                : "\(verb): \(entries) of \(total) entries (\(percent)%)"
        } else {
            text = "\(verb): \(entries) entries"
        }
        text += ", \(mebibytes) MiB, \(Int(rate)) entries/s"
        if final {
            text += ", done in \(Self.clock(elapsed))"
        } else if let total, rate > 0 {
            text += ", ETA \(Self.clock(Double(total - entries) / rate))"
        }
        if isTerminal {
            // Wider than the terminal, the line would wrap and `\r` would redraw only its end.
            let columns = Terminal.errorColumns.map { max(20, $0 - 1) } ?? text.count
            let line = text.count > columns ? String(text.prefix(columns)) : text
            Terminal.write(Array(("\r" + line + "\u{1B}[K" + (final ? "\n" : "")).utf8), to: STDERR_FILENO)
        } else {
            Terminal.printError(text)
        }
    }

    /// A bar of 20 cells, `#` for the part done.
    private static func bar(_ fraction: Double) -> String {
        let done = Int((min(1, max(0, fraction)) * 20).rounded(.down))
        return "[" + String(repeating: "#", count: done) + String(repeating: " ", count: 20 - done) + "]"
    }

    /// `m:ss`, or `h:mm:ss` past an hour.
    static func clock(_ seconds: Double) -> String {
        let whole = Int(min(seconds.rounded(.up), 359_999))
        let (hours, minutes, rest) = (whole / 3_600, whole / 60 % 60, whole % 60)
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(rest))" : "\(minutes):\(twoDigits(rest))"
    }
}
