import Foundation
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
final class ProgressLine {
    private let verb: String
    private let isTerminal = Terminal.errorIsTerminal
    private let quiet: Bool
    private let start = ContinuousClock.now
    private var lastShown = ContinuousClock.now
    private var shownOnce = false

    init(verb: String, quiet: Bool) {
        self.verb = verb
        self.quiet = quiet
    }

    func update(entries: Int, bytes: Int) {
        guard !quiet else { return }
        let now = ContinuousClock.now
        guard now - lastShown >= (isTerminal ? .milliseconds(200) : .seconds(2)) else { return }
        lastShown = now
        show(entries: entries, bytes: bytes, final: false)
    }

    func finish(entries: Int, bytes: Int) {
        guard !quiet, shownOnce || isTerminal else { return }
        show(entries: entries, bytes: bytes, final: true)
    }

    private func show(entries: Int, bytes: Int, final: Bool) {
        shownOnce = true
        let seconds = max(0.001, (ContinuousClock.now - start).seconds)
        let mebibytes = Double(bytes) / 1_048_576
        let text =
            "\(verb): \(entries) entries, \(String(format: "%.1f", mebibytes)) MiB, "
            + "\(Int(Double(entries) / seconds)) entries/s" + (final ? ", done" : "")
        if isTerminal {
            Terminal.write(Array(("\r" + text + "\u{1B}[K" + (final ? "\n" : "")).utf8), to: STDERR_FILENO)
        } else {
            Terminal.printError(text)
        }
    }
}

extension Duration {
    /// The duration in seconds, fractions included.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
