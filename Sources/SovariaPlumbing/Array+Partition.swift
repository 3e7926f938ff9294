extension RandomAccessCollection {
    /// The first index whose element satisfies `belongsToSecondPart`, for a collection already
    /// partitioned by it (all `false`, then all `true`): a binary search.
    package func partitioningIndex(where belongsToSecondPart: (Element) -> Bool) -> Index {
        var low = startIndex
        var count = distance(from: startIndex, to: endIndex)
        while count > 0 {
            let half = count / 2
            let middle = index(low, offsetBy: half)
            if belongsToSecondPart(self[middle]) {
                count = half
            } else {
                low = index(after: middle)
                count -= half + 1
            }
        }
        return low
    }
}
