extension QueryCache {
    /// Tells the cache a reader shows `query`'s list, so eviction keeps it (up to
    /// 500 lists, the seed's rule). Call ``stopReading(_:)`` when the reader goes away.
    public func startReading(_ query: String) -> LiveReader {
        readers.withLock { $0.start(CacheKeys.id(of: query)) }
    }

    /// Ends a reader started with ``startReading(_:)``.
    public func stopReading(_ reader: LiveReader) {
        readers.withLock { $0.stop(reader) }
    }
}
