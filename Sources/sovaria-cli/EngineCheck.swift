import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite

/// `sovaria verify`'s checks of an engine's own structures, beyond reading every entry: what each
/// engine can say about its files, and what to do when it finds damage.
struct EngineCheck {
    /// What was checked, one line each, for the report.
    var checks: [String] = []
    /// What is wrong, one sentence each.
    var problems: [String] = []
    /// Facts a person may want that are not problems (a pending batch, stale reader slots).
    var notes: [String] = []

    /// The file store's folder, read before the store opens it (an open finishes or drops a pending
    /// batch and removes temporary files). Returns `false` when the store must not be opened: its
    /// journal is damaged and an open would drop it.
    mutating func checkFileFolderBeforeOpening(_ location: StoreLocation) -> Bool {
        guard location.engine == StoreScheme.file.name else { return true }
        let found: FileStoreFolderCheck
        do {
            found = try FileStoreFolderCheck(directory: URL(fileURLWithPath: location.place, isDirectory: true))
        } catch {
            problems.append("The folder \(location.place) cannot be read: \(error.message)")
            return false
        }
        checks.append("the folder's names (\(found.entryFiles) entry files) and its batch journal")
        switch found.journal {
        case .none: break
        case .pending(let steps):
            notes.append(
                "A batch of \(steps) writes was interrupted after its commit (.journal); opening the store finished it."
            )
        case .damaged(let size):
            problems.append(
                "The batch journal \(location.place)/.journal (\(size) bytes) is damaged: it fails its checksum. "
                    + "Opening the store would drop it and the batch it holds; verify did not open the store. If the "
                    + "app wrote with durability flushed and the machine lost power, the batch was never "
                    + "acknowledged: move .journal out of the folder and run verify again. Otherwise restore the folder "
                    + "from a backup.")
            return false
        }
        if !found.temporaryFiles.isEmpty {
            notes.append("\(found.temporaryFiles.count) temporary files a crash left; opening the store removed them.")
        }
        for name in found.strayNames {
            problems.append(
                "\(location.place)/\(name) is not named as any key's file (a renamed or damaged name): the store does "
                    + "not list it, so its entry is missing. Rename it back if you know its key, or move it out of "
                    + "the folder.")
        }
        return true
    }

    /// The engine's own check of an open store.
    mutating func checkEngine(_ engine: any OfflineStore, at location: StoreLocation) async {
        switch engine {
        case let sqlite as SQLiteOfflineStore:
            checks.append("SQLite integrity_check (every page, the free list, every row against the key index)")
            do {
                for line in try await sqlite.integrityProblems() {
                    problems.append("SQLite integrity_check on \(location.place): \(line)")
                }
            } catch {
                problems.append("SQLite integrity_check on \(location.place) stopped: \(Self.describe(error))")
            }
        case let lmdb as LMDBOfflineStore:
            do {
                let report = try await lmdb.integrityReport()
                checks.append(
                    "LMDB mdb_env_stat, mdb_env_info and mdb_reader_check; a cursor walk of all \(report.entriesWalked) "
                        + "entries against the \(report.entriesCounted) LMDB counts (depth \(report.depth), "
                        + "\(report.pages) pages)")
                let cleared = lmdb.staleReadersClearedAtOpen + report.staleReadersCleared
                if cleared > 0 { notes.append("\(cleared) reader slots of dead processes were cleared.") }
                problems += report.problems
            } catch {
                checks.append("LMDB mdb_env_stat, mdb_reader_check and a cursor walk of every entry")
                problems.append("LMDB's check of \(location.place) stopped: \(Self.describe(error))")
            }
        case let leveldb as LevelDBOfflineStore:
            checks.append("LevelDB paranoid checks at open (log, MANIFEST, tables)")
            do {
                let report = try await leveldb.verifyEveryEntry()
                checks.append(
                    "a LevelDB iteration of every entry, every block's checksum verified (\(report.entries) read)")
                problems += report.problems
            } catch {
                problems.append("LevelDB's iteration of \(location.place) stopped: \(Self.describe(error))")
            }
        case is FileOfflineStore:
            checks.append("every entry file's checksum (bound to its key's name) on read")
        default:
            if location.engine == StoreScheme.postgres.name { checks.append("every row read from PostgreSQL") }
        }
    }

    /// What to do about damage in `location`'s engine.
    static func advice(for location: StoreLocation) -> String {
        let migrate = "copy what still reads into a new store with `sovaria migrate --from \(location) --to NEW-URL`"
        switch location.engine {
        case StoreScheme.sqlite.name:
            return migrate + " (delete the damaged keys first: migrate stops at them), or restore the file from a "
                + "backup; sqlite3's `.recover` command salvages more rows than a read does."
        case StoreScheme.lmdb.name:
            return migrate
                + " (delete the damaged keys first), or restore the folder from a backup; LMDB has no repair."
        case StoreScheme.leveldb.name:
            return "rebuild the store with LevelDB's repair (from Swift: LevelDBOfflineStore.repair(directory:); "
                + "entries in damaged blocks are lost), run verify again, then " + migrate
                + " if it still fails; or restore the folder from a backup."
        case StoreScheme.file.name:
            return "delete the damaged keys or write them again (the app fetches cached data anew), move stray files "
                + "out of the folder, or restore it from a backup."
        default:
            return migrate + " (delete the damaged keys first), or restore a backup."
        }
    }

    private static func describe(_ error: any Error) -> String {
        (error as? OfflineStoreError)?.message ?? "\(error)"
    }
}
