import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaSodium

/// A store a workload runs on, named by a store URL (`--store`), or one of the bench's own in its
/// folder (every engine, when no `--store` is given).
struct WorkloadStore {
    /// The schemes the bench opens: every engine and wrapper Sovaria has.
    static let schemes: [StoreScheme] = [.sqlite, .lmdb, .leveldb, .postgres, .encrypted]

    /// The engines the bench makes its own stores on, from the scheme registry: the built-in ones
    /// and every engine whose place is a folder or file on this machine, not a server's conninfo
    /// (`memory`, `file`, `sqlite`, `lmdb`, `leveldb`). PostgreSQL needs the bench's server, so the
    /// callers add it apart.
    static let localEngines: [String] = ([StoreScheme.memory, .file] + schemes)
        .filter { !$0.isWrapper && $0.location != .optional }.map(\.name)

    /// The row subject: the engine, inside its wrappers (`encrypted(sqlite)`).
    let label: String
    let url: StoreURL
    /// Made by the bench: a fresh one for every workload, deleted after the run. A store the user
    /// named is used as it is; each workload's keys are cleared from it before its load phase.
    let isOwn: Bool

    /// The engine the C replayer runs for this store, if it runs one (a plain SQLite, LMDB or
    /// LevelDB store).
    var cEngine: String? {
        url.wrappers.isEmpty && ["sqlite", "lmdb", "leveldb"].contains(url.engine) ? url.engine : nil
    }

    init(url: StoreURL, isOwn: Bool) {
        self.url = url
        self.isOwn = isOwn
        label = url.wrappers.reversed().reduce(url.engine) { "\($1)(\($0))" }
    }

    /// The stores named by `--store`, or the bench's own: every engine with `durability`
    /// (PostgreSQL on the bench's server when it runs one).
    static func selected(_ texts: [String], durability: Durability, postgres: String?) throws -> [WorkloadStore] {
        guard texts.isEmpty else {
            return try texts.map { text in
                do {
                    return WorkloadStore(url: try OfflineStores.parse(text, using: schemes), isOwn: false)
                } catch {
                    throw BenchError.usage("\(error)")
                }
            }
        }
        var stores = localEngines.map {
            WorkloadStore(url: StoreURL(engine: $0, durability: durability), isOwn: true)
        }
        if let postgres {
            stores.append(
                WorkloadStore(
                    url: StoreURL(engine: "postgres", location: postgres, durability: durability), isOwn: true))
        }
        return stores
    }

    /// The URL this store has for the run named `run`: a fresh place under `folder` for the
    /// bench's own stores (a fresh table on PostgreSQL), the user's URL otherwise, or with
    /// `freshForUser` a fresh place beside it (its location followed by `-run`).
    func url(forRun run: String, in folder: URL, freshForUser: Bool = false) -> StoreURL {
        guard isOwn || freshForUser else { return url }
        var fresh = url
        let place =
            isOwn
            ? folder.appendingPathComponent("\(run)-\(url.engine)", isDirectory: true).path : "\(url.location)-\(run)"
        switch url.engine {
        case "memory": break
        case "sqlite": fresh.location = isOwn ? place + ".sqlite" : place
        case "postgres": fresh.options["table"] = BenchPostgres.freshTableName()
        default: fresh.location = place
        }
        return fresh
    }

    /// The files of an SQLite store: the database at its path, and beside it the WAL, the WAL's
    /// index and the full-disk reserve (1 MiB of zeros a batch of deletes gets back on a full disk,
    /// as the file store keeps its `.reserve` inside its folder).
    static let sqliteFileSuffixes = ["", "-wal", "-shm", "-reserve"]

    /// Bytes the store at `url` keeps on disk, its full-disk reserve included; `nil` for memory
    /// and PostgreSQL (a server's files).
    static func diskBytes(_ url: StoreURL) -> Int? {
        switch url.engine {
        case "memory", "postgres": return nil
        case "sqlite": return sqliteFileSuffixes.compactMap { fileBytes(url.location + $0) }.reduce(0, +)
        default: return folderBytes(url.location)
        }
    }

    static func folderBytes(_ path: String) -> Int? {
        guard let enumerator = FileManager.default.enumerator(atPath: path) else { return nil }
        var total = 0
        while let name = enumerator.nextObject() as? String {
            total += fileBytes(path + "/" + name) ?? 0
        }
        return total
    }

    private static func fileBytes(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(info.st_blocks) * 512
    }

    /// Deletes every key under `prefix` (a workload's keys in a store the user named), a thousand
    /// a batch.
    static func clear(_ store: any OfflineStore, prefix: String) async throws {
        while true {
            let keys = try await store.keys(prefix).prefix(1_000)
            guard !keys.isEmpty else { return }
            try await store.write(keys.map { .delete(key: $0) })
        }
    }
}
