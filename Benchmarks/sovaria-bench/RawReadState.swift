/// What a raw baseline keeps between calls: its place in a walk over every page, and the
/// copies it read, kept so the optimizer cannot drop the copying the adapters also do.
struct RawReadState {
    /// The prefix every workload key has: pages walk it.
    let pagePrefix = Array(Workload.keyPrefix.utf8)
    /// The last key of the previous page, as the adapter's caller keeps it.
    var cursor: [UInt8]?
    var lastValue: [UInt8] = []
    var lastKeys: [[UInt8]] = []
    var lastPage: [(key: [UInt8], value: [UInt8])] = []
}
