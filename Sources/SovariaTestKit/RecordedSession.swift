@_spi(Benchmarks) import Sovaria

/// The session the recording tests run through `RecordingOfflineStore`: the library's tests of
/// the recorder and the bench's tests of the trace reader make the same calls and expect the
/// same trace.
@_spi(Benchmarks) public enum RecordedSession {
    /// Makes the calls of a small app session on `store` (every kind of call, an invalid key
    /// among them) and returns the operations a trace of them must hold, in order.
    @discardableResult
    public static func run(on store: any OfflineStore) async throws -> [TraceOperation] {
        try await store.set("sov:cache:feed", "0123456789")
        _ = try await store.get("sov:cache:feed")
        _ = try await store.withValue("sov:cache:feed") { $0.count }
        _ = try await store.get("sov:cache:missing")
        try await store.write([
            .set(key: "sov:queue:0001", value: "é"), .set(key: "sov:queue:0002", value: ""),
            .delete(key: "sov:cache:feed"),
        ])
        _ = try await store.keys("sov:queue:")
        _ = try await store.entries("sov:queue:", after: nil, limit: 1)
        _ = try await store.entries("sov:queue:", after: "sov:queue:0001", limit: 10)
        try await store.delete("sov:queue:0001")
        try? await store.set("", "refused")  // an invalid key: refused by the store, recorded anyway
        try await store.compact()
        return [
            .update(key: "sov:cache:feed", valueBytes: 10),
            .read(key: "sov:cache:feed"),
            .read(key: "sov:cache:feed"),
            .read(key: "sov:cache:missing"),
            .batch([
                .update(key: "sov:queue:0001", valueBytes: 2), .update(key: "sov:queue:0002", valueBytes: 0),
                .delete(key: "sov:cache:feed"),
            ]),
            .keys(prefix: "sov:queue:"),
            .scan(prefix: "sov:queue:", after: nil, limit: 1),
            .scan(prefix: "sov:queue:", after: "sov:queue:0001", limit: 10),
            .delete(key: "sov:queue:0001"),
            .update(key: "", valueBytes: 7),
            .compact,
        ]
    }
}
