import Foundation
import Sovaria
import SovariaFiles
import Synchronization

/// The crash writer's file-cache mode (`files-<engine>`): downloads numbered files of 28 to 100
/// KiB into a ``FileCache`` bounded at 256 KiB whose metadata is in the named engine, so that
/// after the first few downloads most start an eviction pass; reads an older file after every
/// fourth download (a use record). The cache's clock moves 60 s per download, so
/// every file but the newest can be evicted.
///
/// Prints `downloading N` before each download and `downloaded N SIZE` after it returns; then
/// `evicting N 1` when the download left the cache over its bound (`0` when not), and
/// `evicted N` once the pass it started is over (``FileCache/waitForPendingWork()``). The lines
/// alternate strictly, so the test picks the phase a kill lands in by the parity of the count:
/// inside a download, in the body's writes (between its halves, often), the fsyncs and rename,
/// or the metadata write; inside a pass, between the deletion of files and that of their
/// metadata.
enum FileCacheCrashWorkload {
    static let enginePrefix = "files-"
    /// `files-inpass-<engine>`: the same, but the child kills itself inside one of the first
    /// eight batches of deletions only (a pass's: its files are gone already), before or after
    /// it is written (``SelfKillingStore``).
    static let passKillPrefix = "inpass-"
    /// `files-inbatch-<engine>`: the child kills itself inside its 10th to 60th metadata batch
    /// of any kind (a download's record, a use record, a pass), before or after it is written.
    static let batchKillPrefix = "inbatch-"
    static let boundBytes = 256 * 1_024

    /// The cache key of file `index`.
    static func key(_ index: Int) -> String { "https://example.com/photos/\(index).jpg?size=large" }

    /// The size of file `index`: 28 to 100 KiB, spread by a multiplicative hash. Above a tenth of
    /// the bound, so most downloads start a pass; two of them fit in 90% of it, so a pass never
    /// takes the file downloaded before the one that started it.
    static func size(_ index: Int) -> Int { 28 * 1_024 + Int((UInt64(index) &* 2_654_435_761) % (72 * 1_024)) }

    /// The bytes of file `index`: every part says the number, so a torn or swapped file shows.
    static func body(_ index: Int) -> Data {
        let pattern = Array("<\(index)>".utf8)
        return Data((0..<size(index)).map { pattern[$0 % pattern.count] })
    }

    /// The cache folder and the metadata folder under `folder`.
    static func folders(_ folder: URL) -> (cache: URL, metadata: URL) {
        (folder.appendingPathComponent("cache"), folder.appendingPathComponent("meta"))
    }

    static func run(engine: String, folder: URL, durability: Durability, first: Int) async throws -> Never {
        let (cacheFolder, metadataFolder) = folders(folder)
        try FileManager.default.createDirectory(at: metadataFolder, withIntermediateDirectories: true)
        let prefix = [passKillPrefix, batchKillPrefix].first { engine.hasPrefix($0) }
        var store = try CrashStores.open(
            String(engine.dropFirst(prefix?.count ?? 0)), at: metadataFolder, durability: durability)
        if let prefix {
            let deletionsOnly = prefix == passKillPrefix
            store = SelfKillingStore(
                store, countdown: deletionsOnly ? Int.random(in: 1...8) : Int.random(in: 10...60),
                deletionsOnly: deletionsOnly, afterWrite: Bool.random())
        }
        let step = Mutex(first)
        let cache = try await FileCache(
            directory: cacheFolder, metadata: store, size: .bytes(boundBytes),
            clock: { Date(timeIntervalSince1970: 1_800_000_000 + Double(step.withLock { $0 }) * 60) })
        CrashWriter.acknowledge("ready")
        var index = first
        while true {
            step.withLock { $0 = index }
            CrashWriter.acknowledge("downloading \(index)")
            let bytes = body(index)
            try await cache.download(key(index)) { url in
                // Half, a wait for the disk (as a network read would), the rest: a kill often
                // lands while the file is half written.
                guard FileManager.default.createFile(atPath: url.path, contents: nil),
                    let handle = FileHandle(forWritingAtPath: url.path)
                else { throw OfflineStoreError(.io, "cannot create \(url.path)") }
                try handle.write(contentsOf: bytes.prefix(bytes.count / 2))
                try handle.synchronize()
                try handle.write(contentsOf: bytes.dropFirst(bytes.count / 2))
                try handle.close()
            }
            CrashWriter.acknowledge("downloaded \(index) \(bytes.count)")
            CrashWriter.acknowledge("evicting \(index) \(cache.totalBytes > boundBytes ? 1 : 0)")
            await cache.waitForPendingWork()
            CrashWriter.acknowledge("evicted \(index)")
            if index % 4 == 3, let lease = try await cache.open(key(index - 2)) {
                guard try lease.fileHandle.readToEnd() == body(index - 2) else {
                    throw OfflineStoreError(.corrupt, "file \(index - 2) reads back wrong")
                }
                lease.end()
            }
            index += 1
        }
    }
}
