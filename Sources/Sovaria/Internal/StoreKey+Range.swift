extension StoreKey {
    /// The slice of `ordered` whose keys start with `prefix` and sort after `after`.
    static func range(of prefix: String, after: String?, in ordered: [Bytes]) -> ArraySlice<Bytes> {
        let prefixBytes = StoreKey.Bytes(prefix)
        var lower = ordered.partitioningIndex { $0 >= prefixBytes }
        if let after {
            let afterBytes = StoreKey.Bytes(after)
            lower = max(lower, ordered.partitioningIndex { $0 > afterBytes })
        }
        let upper: Int
        // The successor may not be UTF-8 (a last byte 0x7F becomes 0x80): compare it as bytes.
        if let successor = StoreKey.successor(ofPrefix: Array(prefix.utf8)) {
            upper = ordered.partitioningIndex { !$0.string.utf8.lexicographicallyPrecedes(successor) }
        } else {
            upper = ordered.endIndex
        }
        return lower < upper ? ordered[lower..<upper] : []
    }
}
