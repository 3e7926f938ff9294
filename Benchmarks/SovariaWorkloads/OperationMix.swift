/// The share of each YCSB operation in a run phase: YCSB's `readproportion`,
/// `updateproportion`, `insertproportion`, `scanproportion` and `readmodifywriteproportion`.
///
/// The shares are weights: a mix whose shares do not add up to 1 is scaled to 1, as YCSB's
/// `DiscreteGenerator` does.
package struct OperationMix: Sendable, Equatable {
    /// Reads of an existing key. Default: 0.95, YCSB's.
    package var read: Double
    /// Rewrites of an existing key. Default: 0.05, YCSB's.
    package var update: Double
    /// Writes of a new key. Default: 0.
    package var insert: Double
    /// Short ranges from an existing key. Default: 0.
    package var scan: Double
    /// A read and a rewrite of one existing key. Default: 0.
    package var readModifyWrite: Double

    /// A mix with the given shares; YCSB's `CoreWorkload` defaults when none are given.
    package init(
        read: Double = 0.95, update: Double = 0.05, insert: Double = 0, scan: Double = 0, readModifyWrite: Double = 0
    ) {
        self.read = read
        self.update = update
        self.insert = insert
        self.scan = scan
        self.readModifyWrite = readModifyWrite
    }

    /// The shares in YCSB's order (read, update, insert, scan, read-modify-write), which is the
    /// order a draw is matched against: changing it changes every stream.
    package var sharesInYCSBOrder: [Double] { [read, update, insert, scan, readModifyWrite] }

    /// The sum of the shares.
    package var total: Double { sharesInYCSBOrder.reduce(0, +) }

    /// Whether any operation other than an insert can be drawn: those need a key that exists.
    package var readsExistingKeys: Bool { read > 0 || update > 0 || scan > 0 || readModifyWrite > 0 }
}
