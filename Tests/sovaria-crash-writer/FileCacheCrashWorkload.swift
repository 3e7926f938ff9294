import Foundation
import Sovaria
import SovariaFiles
import SovariaTestKit
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The crash writer's file-cache mode (`files-<engine>`): downloads numbered files of 28 to 100
/// KiB into a ``FileCache`` bounded at 256 KiB whose metadata is in the named engine, so that
/// after the first few downloads most start an eviction pass; reads an older file after every
/// fourth download (a use record). The cache's clock moves 60 s per download, so
/// every file but the newest can be evicted. Every third download replaces a cached key: that of
/// the download before it (``keyIndex(_:)``), with bytes of another size (``body(_:)`` of its
/// own number).
///
/// Prints `downloading N` before each download (a replacement too) and `downloaded N SIZE` after
/// it returns; then `evicting N 1` when the download left the cache over its bound (`0` when
/// not), and `evicted N` once the pass it started is over (``FileCache/waitForPendingWork()``).
/// The lines alternate strictly, so the test picks the phase a kill lands in by the parity of
/// the count: inside a download, in the body's writes (between its halves, often), the fsyncs and
/// rename, or the metadata write (a replacement's: the old key's deletion, the old file's second
/// name, the rename over it, the new key); inside a pass, between the deletion of files and that
/// of their metadata.
enum FileCacheCrashWorkload {
    static let enginePrefix = "files-"
    /// `files-inpass-<engine>`: the same, but the child kills itself inside one of the first
    /// eight batches of deletions only (a pass's, whose files are gone already, or a
    /// replacement's deletion of the old key), before or after it is written
    /// (``SelfKillingStore``).
    static let passKillPrefix = "inpass-"
    /// `files-inbatch-<engine>`: the child kills itself inside its 10th to 60th metadata batch
    /// of any kind (a download's record, a replacement's deletion, a use record, a pass), before
    /// or after it is written.
    static let batchKillPrefix = "inbatch-"
    /// `files-inreplace-<engine>`: the child kills itself inside one of its first three
    /// replacements, after the old key's deletion, before the new key's write or after it
    /// (``ReplacementKillingStore``).
    static let replacementKillPrefix = "inreplace-"
    static let boundBytes = 256 * 1_024

    /// The cache key of file `index`.
    static func key(_ index: Int) -> String { "https://example.com/photos/\(index).jpg?size=large" }

    /// Whether download `index` replaces the key of the download before it: every third one.
    /// That file is always cached (it was used at the previous step, 60 s before, and no pass ran
    /// since), except at the first download of a run, whose previous number was never downloaded.
    static func replaces(_ index: Int) -> Bool { index % 3 == 2 }

    /// The number of the key download `index` caches its bytes under: its own, or for a
    /// replacement the previous download's (which is never a replacement itself).
    static func keyIndex(_ index: Int) -> Int { replaces(index) ? index - 1 : index }

    /// The size of file `index`: 28 to 100 KiB, spread by a multiplicative hash. Above a tenth of
    /// the bound, so most downloads start a pass; two of them fit in 90% of it, so a pass never
    /// takes the file downloaded before the one that started it.
    static func size(_ index: Int) -> Int { 28 * 1_024 + Int((UInt64(index) &* 2_654_435_761) % (72 * 1_024)) }

    /// The bytes of download `index`: every part says the number, so a torn or swapped file, or
    /// a version of a key other than those downloaded, shows.
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
        let prefix = [passKillPrefix, batchKillPrefix, replacementKillPrefix].first { engine.hasPrefix($0) }
        var store = try await CrashStores.open(
            String(engine.dropFirst(prefix?.count ?? 0)), at: metadataFolder, durability: durability)
        var replacementKiller: ReplacementKillingStore?
        if prefix == replacementKillPrefix {
            let killer = ReplacementKillingStore(
                store, replacement: Int.random(in: 1...3),
                point: ReplacementKillingStore.Point.allCases.randomElement()!)
            replacementKiller = killer
            store = killer
        } else if let prefix {
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
        var versions: [Int: Int] = [:]  // key number → the download whose bytes it holds, this run
        var index = first
        while true {
            step.withLock { $0 = index }
            CrashWriter.acknowledge("downloading \(index)")
            let bytes = body(index)
            let replacing = replaces(index) && versions[keyIndex(index)] != nil
            if replacing { replacementKiller?.beginReplacement() }
            try await cache.download(key(keyIndex(index))) { url in
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
            if replacing { try replacementKiller?.endReplacement() }
            versions[keyIndex(index)] = index
            CrashWriter.acknowledge("downloaded \(index) \(bytes.count)")
            CrashWriter.acknowledge("evicting \(index) \(cache.totalBytes > boundBytes ? 1 : 0)")
            await cache.waitForPendingWork()
            CrashWriter.acknowledge("evicted \(index)")
            let readKey = keyIndex(index - 2)
            if index % 4 == 3, let version = versions[readKey], let lease = try await cache.open(key(readKey)) {
                guard try lease.fileHandle.readToEnd() == body(version) else {
                    throw OfflineStoreError(.corrupt, "file \(readKey) does not read back as download \(version)")
                }
                lease.end()
            }
            index += 1
        }
    }
}

extension FileCacheCrashWorkload {
    /// Wraps the file cache's metadata store and kills the process with SIGKILL inside the
    /// `replacement`-th download that replaces a cached key, at `point` of its commit: the moments
    /// where the old file has no key, where the new file has its name but no key, and where the new
    /// key is written while the old file still has its second name in `tmp/`. The workload marks
    /// each replacement's call (``beginReplacement()``, ``endReplacement()``); nothing else writes
    /// metadata meanwhile (the pass before it is over, a lease ends in the step it opened in).
    final class ReplacementKillingStore: ForwardingStore {
        /// Where in a replacement's commit the process dies.
        enum Point: CaseIterable {
            /// The old key is deleted; the old file has its name and no key.
            case afterOldKeyDeletion
            /// The new file has the name (renamed over the old one, `files/` fsynced), no key yet.
            case beforeNewKey
            /// The new key is written; the old file's second name is still in `tmp/`.
            case afterNewKey
        }

        let inner: any OfflineStore
        private let point: Point
        /// Replacements still to begin before the one killed in, and the batches that one wrote so
        /// far (`nil` outside it).
        private let state: Mutex<(replacementsLeft: Int, batchesSeen: Int?)>

        init(_ inner: any OfflineStore, replacement: Int, point: Point) {
            self.inner = inner
            self.point = point
            self.state = Mutex((replacement, nil))
        }

        /// A replacement's download call starts.
        func beginReplacement() {
            state.withLock { state in
                state.replacementsLeft -= 1
                state.batchesSeen = state.replacementsLeft == 0 ? 0 : nil
            }
        }

        /// A replacement's download call returned. Throws when it was the one to kill in, which
        /// then wrote fewer batches than its commit should (the child ends with that error
        /// instead of running on, unkilled).
        func endReplacement() throws {
            let batches = state.withLock { state in
                defer { state.batchesSeen = nil }
                return state.batchesSeen
            }
            if let batches {
                throw OfflineStoreError(
                    .corrupt,
                    "a replacement wrote \(batches) metadata batches: the old key's deletion and the new key expected")
            }
        }

        func write(_ batch: [StoreWrite]) async throws {
            // A replacement writes two batches: the old key's deletion, then the new key.
            let number = state.withLock { state -> Int? in
                guard let seen = state.batchesSeen else { return nil }
                state.batchesSeen = seen + 1
                return seen + 1
            }
            let (killedBatch, afterWrite): (Int, Bool) =
                switch point {
                case .afterOldKeyDeletion: (1, true)
                case .beforeNewKey: (2, false)
                case .afterNewKey: (2, true)
                }
            let kill = number == killedBatch
            if kill, !afterWrite { die(batch, afterWrite: false) }
            try await inner.write(batch)
            if kill { die(batch, afterWrite: true) }
        }

        private func die(_ batch: [StoreWrite], afterWrite: Bool) -> Never {
            CrashWriter.acknowledge("killing \(batch.count) \(afterWrite ? 1 : 0)")
            kill(getpid(), SIGKILL)
            while true { pause() }
        }
    }
}
