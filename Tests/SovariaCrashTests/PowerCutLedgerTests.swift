import Foundation
import Testing

/// How ``PowerCutLedger`` counts a writer that ended on its own after the cut.
struct PowerCutLedgerTests {
    /// The cut's I/O errors, and on a store that maps its file (LMDB) a death by SIGBUS or SIGSEGV,
    /// are the cut's; any other end is a finding.
    @Test(
        arguments: [
            ("wait status 256: Input/output error", false, true),
            ("wait status 256: Read-only file system", false, true),
            ("wait status \(SIGSEGV): ", true, true),
            ("wait status \(SIGBUS): ", true, true),
            ("wait status \(SIGSEGV | 0x80): ", true, true),  // with a core dump
            ("wait status \(SIGSEGV): ", false, false),
            ("wait status \(SIGABRT): ", true, false),
            ("wait status \(SIGSEGV << 8): ", true, false),  // exited with status 11: not a signal
            ("wait status 256: fatal error", true, false),
        ] as [(String, Bool, Bool)])
    func aWriterThatEndedAfterTheCutIsCountedByHowItEnded(message: String, mapped: Bool, isTheCuts: Bool) {
        var ledger = PowerCutLedger()
        var acks = Acknowledged()
        acks.exitMessage = message
        ledger.countEnd(of: acks, cut: 0, mapped: mapped)
        #expect(ledger.findings.childrenEndedByIOErrors == (isTheCuts ? 1 : 0))
        #expect(ledger.findings.problems == (isTheCuts ? 0 : 1))
    }
}
