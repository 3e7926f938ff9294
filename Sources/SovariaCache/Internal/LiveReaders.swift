/// The lists live readers show, and when each reader started.
struct LiveReaders {
    private var readers: [UInt64: String] = [:]
    private var newestStart: [String: UInt64] = [:]
    private var readerCount: [String: Int] = [:]
    private var next: UInt64 = 0

    mutating func start(_ id: String) -> LiveReader {
        next += 1
        readers[next] = id
        newestStart[id] = next
        readerCount[id, default: 0] += 1
        return LiveReader(id: id, token: next)
    }

    mutating func stop(_ reader: LiveReader) {
        guard readers.removeValue(forKey: reader.token) != nil else { return }
        readerCount[reader.id, default: 1] -= 1
        if readerCount[reader.id] == 0 {
            readerCount[reader.id] = nil
            newestStart[reader.id] = nil
        }
    }

    /// The lists protected from eviction: all live ones, or past `limit`, the `limit` whose
    /// readers started most recently.
    func protectedIDs(limit: Int) -> Set<String> {
        guard newestStart.count > limit else { return Set(newestStart.keys) }
        return Set(newestStart.sorted { $0.value > $1.value }.prefix(limit).map(\.key))
    }
}
