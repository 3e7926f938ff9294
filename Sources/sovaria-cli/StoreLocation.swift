import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaSodium

/// A store named on the command line: a ``StoreURL`` (the library's grammar, ``StoreURL/forms``)
/// of one of the engines this command links.
struct StoreLocation: CustomStringConvertible {
    enum Engine: String, CaseIterable {
        case memory, file, sqlite, lmdb, leveldb, postgres
    }

    /// The schemes this command opens: every engine and wrapper Sovaria has.
    static let schemes: [StoreScheme] = [.sqlite, .lmdb, .leveldb, .postgres, .encrypted]

    /// Every form a URL may take, for `sovaria help` (a bad URL's message points there).
    static let forms = StoreURL.forms

    /// A usage failure for a refused URL: what is wrong on one line, and where the forms are.
    static func failure(_ error: StoreURLError) -> CommandFailure {
        CommandFailure(
            .usage,
            "`\(error.url)` is not a store URL sovaria can open: \(error.explanation). `sovaria help` lists the forms.")
    }

    var url: StoreURL
    var engine: Engine
    /// The URL as given.
    let text: String

    /// The folder, file or conninfo after the engine's colon, without the options.
    var place: String { url.location }
    var durability: Durability { url.durability }
    /// Whether the engine is wrapped (`encrypted+…`); set to false to work on the engine itself.
    var isEncrypted: Bool {
        get { url.wrappers.contains("encrypted") }
        set { if !newValue { url.wrappers.removeAll() } }
    }

    var description: String { text }

    init(parsing text: String) throws(CommandFailure) {
        self.text = text
        do {
            url = try OfflineStores.parse(text, using: Self.schemes)
        } catch {
            throw Self.failure(error)
        }
        guard let engine = Engine(rawValue: url.engine) else {
            throw CommandFailure(
                .usage, "`\(url.engine)` is not an engine this command opens; `sovaria help` lists the store URL forms."
            )
        }
        self.engine = engine
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
    func openEngine(mustExist: Bool) async throws(CommandFailure) -> any OfflineStore {
        if mustExist, !exists {
            throw CommandFailure(.cannotOpen, "There is no store at \(place) (\(text)). Check the path.")
        }
        do {
            return try await OfflineStores.openEngine(url, using: Self.schemes)
        } catch {
            throw CommandFailure(
                .cannotOpen,
                "Cannot open \(text): \(error). Check the path, its permissions and that no other process holds it.")
        }
    }
}
