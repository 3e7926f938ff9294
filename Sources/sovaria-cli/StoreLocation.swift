import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite

/// A store named on the command line: `ENGINE:WHERE[?durability=flushed]`, optionally
/// `encrypted+ENGINE:…`.
struct StoreLocation: CustomStringConvertible {
    enum Engine: String, CaseIterable {
        case memory, file, sqlite, lmdb, leveldb, postgres
    }

    /// Every form a URL may take, for the message of a bad one.
    static let forms = """
        Store URLs:
          memory:                      an empty store in this process's memory (for trying things out)
          file:DIR                     FileOfflineStore in the folder DIR
          sqlite:PATH                  SQLiteOfflineStore in the database file PATH
          lmdb:DIR                     LMDBOfflineStore in the folder DIR
          leveldb:DIR                  LevelDBOfflineStore in the folder DIR
          postgres:CONNINFO            PostgresOfflineStore (libpq conninfo or postgresql:// URL), table sovaria_kv
          encrypted+ENGINE:…           any of the above, values encrypted (EncryptedOfflineStore);
                                       key from --key-file FILE (32 raw bytes) or SOVARIA_PASSPHRASE
        Options after `?`: durability=synced|flushed (default synced); postgres also table=NAME.
        Example: encrypted+sqlite:/var/lib/app/offline.sqlite?durability=flushed
        """

    var engine: Engine
    /// The folder, file or conninfo after the engine's colon, without the options.
    var place: String
    var isEncrypted: Bool
    var durability: Durability = .synced
    var table = "sovaria_kv"
    /// The URL as given.
    let text: String

    var description: String { text }

    init(parsing text: String) throws(CommandFailure) {
        self.text = text
        guard let colon = text.firstIndex(of: ":") else {
            throw Self.bad(text, "it has no `ENGINE:`")
        }
        var scheme = String(text[..<colon]).lowercased()
        isEncrypted = scheme.hasPrefix("encrypted+")
        if isEncrypted { scheme.removeFirst("encrypted+".count) }
        guard let engine = Engine(rawValue: scheme) else {
            throw Self.bad(text, "`\(scheme)` is not an engine")
        }
        self.engine = engine
        var rest = String(text[text.index(after: colon)...])
        if let question = rest.lastIndex(of: "?") {
            let query = rest[rest.index(after: question)...]
            let pairs = query.split(separator: "&").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
            let recognised = pairs.allSatisfy { $0.count == 2 && ["durability", "table"].contains($0[0]) }
            // A `?` in a postgresql:// URL's own parameters (sslmode=…) stays part of the conninfo.
            if recognised {
                rest = String(rest[..<question])
                for pair in pairs {
                    switch (pair[0], pair[1]) {
                    case ("durability", "synced"): durability = .synced
                    case ("durability", "flushed"): durability = .flushed
                    case ("durability", let other):
                        throw Self.bad(text, "durability `\(other)` is not synced or flushed")
                    case ("table", let name) where engine == .postgres: table = name
                    default: throw Self.bad(text, "`\(pair[0])` is not an option of \(engine.rawValue)")
                    }
                }
            }
        }
        if engine != .postgres, rest.hasPrefix("//") { rest.removeFirst(2) }  // file:///tmp/x → /tmp/x
        place = rest
        switch engine {
        case .memory:
            guard place.isEmpty else { throw Self.bad(text, "memory: takes no path") }
        case .file, .sqlite, .lmdb, .leveldb:
            guard !place.isEmpty else { throw Self.bad(text, "\(engine.rawValue): needs a path") }
        case .postgres:
            break  // An empty conninfo takes libpq's defaults and PG* environment variables.
        }
    }

    private static func bad(_ text: String, _ why: String) -> CommandFailure {
        CommandFailure(.usage, "`\(text)` is not a store URL: \(why).\n\(forms)")
    }

    /// Whether the store's files are there already (always true for memory and PostgreSQL).
    var exists: Bool {
        switch engine {
        case .memory, .postgres: true
        case .file, .sqlite, .lmdb, .leveldb: FileManager.default.fileExists(atPath: place)
        }
    }

    /// The files the store keeps on disk, for `inspect`'s size.
    var files: [URL] {
        switch engine {
        case .memory, .postgres: return []
        case .sqlite: return ["", "-wal", "-shm"].map { URL(fileURLWithPath: place + $0) }
        case .file, .lmdb, .leveldb:
            let folder = URL(fileURLWithPath: place, isDirectory: true)
            let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey])
            return (enumerator?.allObjects as? [URL]) ?? []
        }
    }

    /// Opens the engine itself, without the encryption layer.
    ///
    /// - Parameter mustExist: refuse a path that holds no store yet instead of creating one
    ///   (a mistyped source path then says so rather than reading as empty).
    func openEngine(mustExist: Bool) throws(CommandFailure) -> any OfflineStore {
        if mustExist, !exists {
            throw CommandFailure(.cannotOpen, "There is no store at \(place) (\(text)). Check the path.")
        }
        do {
            switch engine {
            case .memory:
                return MemoryOfflineStore()
            case .file:
                let store = FileOfflineStore(
                    directory: URL(fileURLWithPath: place, isDirectory: true), durability: durability)
                if let reason = store.fallbackReason { throw reason }
                return store
            case .sqlite:
                return try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: place), durability: durability)
            case .lmdb:
                return try LMDBOfflineStore(
                    directory: URL(fileURLWithPath: place, isDirectory: true), durability: durability)
            case .leveldb:
                return try LevelDBOfflineStore(
                    directory: URL(fileURLWithPath: place, isDirectory: true), durability: durability)
            case .postgres:
                return try PostgresOfflineStore(connection: place, table: table, durability: durability)
            }
        } catch {
            throw CommandFailure(
                .cannotOpen,
                "Cannot open \(text): \(error). Check the path, its permissions and that no other process holds it.")
        }
    }
}
