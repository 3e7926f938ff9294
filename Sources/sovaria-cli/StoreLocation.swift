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
    /// The schemes this command opens besides `Sovaria`'s own: every engine and wrapper module it
    /// links. The one list of engines the command knows; a new engine is added here only.
    static let schemes: [StoreScheme] = [.sqlite, .lmdb, .leveldb, .postgres, .encrypted]
    /// Every engine scheme the command opens, `Sovaria`'s own included.
    static let engines: [StoreScheme] = ([.memory, .file] + schemes).filter { !$0.isWrapper }

    /// Every form a URL may take, for `sovaria help` (a bad URL's message points there).
    static let forms = StoreURL.forms

    /// A usage failure for a refused URL: what is wrong on one line, and where the forms are.
    static func failure(_ error: StoreURLError) -> CommandFailure {
        CommandFailure(
            .usage,
            "`\(error.url)` is not a store URL sovaria can open: \(error.explanation). `sovaria help` lists the forms.")
    }

    var url: StoreURL
    /// The engine's scheme.
    let scheme: StoreScheme
    /// The engine's name in the URL (`sqlite`).
    var engine: String { scheme.name }
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
        let name = url.engine
        guard let scheme = Self.engines.first(where: { $0.name == name }) else {
            throw CommandFailure(
                .usage, "`\(name)` is not an engine this command opens; `sovaria help` lists the store URL forms."
            )
        }
        self.scheme = scheme
    }

    /// Whether the engine keeps its data in a file or folder on this machine (its URL names a path):
    /// not memory, not PostgreSQL's conninfo.
    var isOnDisk: Bool { scheme.location == .required }

    /// Whether the store's files are there already (always true for a store not on disk).
    var exists: Bool { !isOnDisk || FileManager.default.fileExists(atPath: place) }

    /// The files the store keeps on disk, for `inspect`'s size: a folder's files, or a database file
    /// and its SQLite-style `-wal` and `-shm` companions.
    var files: [URL] {
        guard isOnDisk else { return [] }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: place, isDirectory: &isFolder), isFolder.boolValue else {
            return ["", "-wal", "-shm"].map { URL(fileURLWithPath: place + $0) }
        }
        let folder = URL(fileURLWithPath: place, isDirectory: true)
        let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey])
        return (enumerator?.allObjects as? [URL]) ?? []
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
