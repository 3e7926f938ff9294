import Foundation

/// python-diskcache on the file cache's latency workload, in the same run: `Cache.set` of the same
/// 64 KiB bodies under a `size_limit` of the same bound, least-recently-used eviction. Run only
/// when `python3 -c "import diskcache"` works (`pip install diskcache`); otherwise a line before
/// the table says it is absent (a row of zeros would spoil the chart).
///
/// Not the same guarantees: diskcache writes a value file without fsync and culls inside `set`,
/// ten entries at a time (`cull_limit`); SovariaFiles fsyncs each file and its folder and evicts
/// behind the download.
struct DiskCacheBaseline {
    let options: BenchOptions
    let progress: Progress

    static let script = """
        import json, sys, time
        import diskcache
        folder, count, size, bound = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        cache = diskcache.Cache(folder, size_limit=bound, eviction_policy="least-recently-used")
        body = bytes((i * 7) % 256 for i in range(size))
        latencies = []
        for i in range(count):
            start = time.perf_counter_ns()
            cache.set("https://example.com/photo/%d.jpg" % i, body)
            latencies.append(time.perf_counter_ns() - start)
        print(json.dumps({"version": diskcache.__version__, "latencies": latencies, "volume": cache.volume()}))
        """

    func run(downloads: Int, bodyBytes: Int, boundBytes: Int, folder: URL) async throws -> [Measurement] {
        let section = BenchSection.fileCache.rawValue
        let operation = "download 64 KiB while passes run"
        progress.update("file cache: python-diskcache, \(downloads) sets")
        guard
            let output = Self.python(["-c", Self.script, folder.path, "\(downloads)", "\(bodyBytes)", "\(boundBytes)"]),
            let parsed = try? JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
            let latencies = parsed["latencies"] as? [Double]
        else {
            print(
                "file-cache: python-diskcache is not installed here (pip install diskcache): no comparison in this run")
            return []
        }
        let mean = latencies.reduce(0, +) / Double(max(1, latencies.count))
        var row = Sample(perItemNanoseconds: [mean], callLatencies: latencies).measurement(
            section: section, subject: "python-diskcache", variant: "\(parsed["version"] ?? "?")", operation: operation)
        row.note =
            "Cache.set, size_limit \(FileCacheSection.describe(boundBytes)), LRU; no fsync; volume after: "
            + "\(((parsed["volume"] as? Int) ?? 0) >> 20) MiB"
        try? FileManager.default.removeItem(at: folder)
        return [row]
    }

    /// Runs `python3` with `arguments`; its standard output, or `nil` when it fails or is missing.
    private static func python(_ arguments: [String]) -> String? { Machine.output(of: "python3", arguments) }
}
