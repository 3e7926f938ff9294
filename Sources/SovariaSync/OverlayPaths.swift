/// How answers were computed: by applying only appended writes, or all of them again. SPI, not
/// API: statistics for tests and diagnostics.
@_spi(Diagnostics) public struct OverlayPaths: Sendable, Hashable {
    /// Sessions made: a cached answer parsed.
    public var made = 0
    /// Answers that applied only the writes appended since the session's last answer (all of
    /// them on its first).
    public var appended = 0
    /// Answers that applied every write again to the parsed cached answer.
    public var rebuilt = 0
    /// Answers derived from the last one by moving the rows the appended writes touched, not by
    /// reading every row.
    public var updated = 0

    /// Counts of each path.
    public init(made: Int = 0, appended: Int = 0, rebuilt: Int = 0, updated: Int = 0) {
        self.made = made
        self.appended = appended
        self.rebuilt = rebuilt
        self.updated = updated
    }
}
