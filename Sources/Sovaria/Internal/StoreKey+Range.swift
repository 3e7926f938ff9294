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
        if let successor = StoreKey.successor(ofPrefix: prefixBytes.utf8) {
            let bound = StoreKey.Bytes(utf8: successor)
            upper = ordered.partitioningIndex { $0 >= bound }
        } else {
            upper = ordered.endIndex
        }
        return lower < upper ? ordered[lower..<upper] : []
    }
}
