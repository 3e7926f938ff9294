extension QueryCache {
    /// Tells the cache a reader shows `query`'s response, so eviction keeps it (up to 500
    /// responses) for as long as the returned ``LiveReader`` lives or until
    /// ``stopReading(_:)``.
    public func startReading(_ query: String) -> LiveReader {
        readers.start(CacheKeys.id(of: query))
    }

    /// Ends a reader started with ``startReading(_:)`` before it is released; stopping it again
    /// does nothing.
    public func stopReading(_ reader: LiveReader) {
        reader.stop()
    }

    /// Whether a live reader shows `query`'s response now.
    package func isBeingRead(_ query: String) -> Bool {
        readers.isReading(CacheKeys.id(of: query))
    }
}
