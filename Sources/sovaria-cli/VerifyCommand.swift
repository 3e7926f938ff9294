import Sovaria
import SovariaLMDB
import SovariaSQLite

/// `sovaria verify URL`: the engine's own check where Sovaria can reach it (SQLite's
/// `quick_check`), then a full read of every entry — every value decrypted for an encrypted store.
enum VerifyCommand {
    /// What reading the store checked besides the values themselves, engine by engine.
    private static func engineChecks(_ opened: StoreOpener.Opened) -> [String] {
        var checks: [String]
        switch opened.location.engine {
        case .sqlite: checks = ["SQLite quick_check"]
        case .lmdb:
            let cleared = (opened.engine as? LMDBOfflineStore)?.staleReadersClearedAtOpen ?? 0
            checks = ["LMDB reader table (\(cleared) stale reader slots cleared at open)"]
        case .leveldb: checks = ["LevelDB paranoid checks at open, every block's checksum on read"]
        case .file: checks = ["the batch journal replayed at open, every entry file's checksum and name on read"]
        case .postgres: checks = ["every row read from PostgreSQL"]
        case .memory: checks = []
        }
        if opened.location.isEncrypted { checks.append("every value decrypted and authenticated") }
        return checks
    }

    static let usage = "sovaria verify URL [--key-file FILE] [--json]"

    static func run(_ arguments: ArraySlice<String>) async throws(CommandFailure) {
        let parsed = try ParsedArguments(arguments, options: ["key-file", "batch"], flags: ["json", "quiet"])
        let location = try StoreLocation(parsing: parsed.single("store URL", command: "verify"))
        let opened = try await StoreOpener(keyFile: parsed.value("key-file")).open(location, mustExist: true)
        let pageSize = try parsed.positiveInteger("batch", default: 1_000)
        var problems: [String] = []
        if let sqlite = opened.engine as? SQLiteOfflineStore {
            do {
                if try await !sqlite.quickCheck() {
                    problems.append(
                        "SQLite's quick_check reports damage in \(location.place): copy what still reads with "
                            + "`sovaria migrate` to a new store, or restore a backup.")
                }
            } catch {
                problems.append("SQLite's quick_check failed: \(error)")
            }
        }
        let checks = engineChecks(opened)
        let progress = ProgressLine(verb: "verify", quiet: parsed.has("json") || parsed.has("quiet"))
        var entries = 0
        var bytes = 0
        var after: String?
        do {
            pages: while true {
                let page: [StoreEntry]
                do {
                    page = try await opened.store.entries("", after: after, limit: pageSize)
                } catch let error as OfflineStoreError where error.code == .corrupt || error.code == .decryptionFailed {
                    // One damaged value refuses its whole page: read the rest one key at a time to name each.
                    let afterBytes = after.map(StoreKey.Bytes.init)
                    for key in try await opened.store.keys("").map(StoreKey.Bytes.init).sorted() {
                        if let afterBytes, key <= afterBytes { continue }
                        do {
                            if let value = try await opened.store.get(key.string) {
                                entries += 1
                                bytes += key.string.utf8.count + value.utf8.count
                            }
                        } catch let damage as OfflineStoreError {
                            problems.append("\(key.string): \(damage.code): \(damage.message)")
                        }
                        progress.update(entries: entries, bytes: bytes)
                    }
                    break pages
                }
                for entry in page {
                    entries += 1
                    bytes += entry.key.utf8.count + entry.value.utf8.count
                }
                progress.update(entries: entries, bytes: bytes)
                guard page.count == pageSize, let last = page.last?.key else { break }
                after = last
            }
        } catch {
            throw CommandFailure.from(error, while: "Reading \(location)")
        }
        progress.finish(entries: entries, bytes: bytes)
        if parsed.has("json") {
            Terminal.write(
                JSONLine.object([
                    ("event", .string("verify")), ("entries", .integer(entries)), ("bytes", .integer(bytes)),
                    ("problems", .integer(problems.count)), ("checks", .string(checks.joined(separator: "; "))),
                ]))
            for problem in problems {
                Terminal.write(JSONLine.object([("event", .string("problem")), ("message", .string(problem))]))
            }
        } else {
            for check in checks { Terminal.printError("verify: checked: " + check) }
            for problem in problems { Terminal.printError("verify: " + problem) }
            Terminal.printError("verify: read \(entries) entries (\(bytes) bytes), \(problems.count) problems.")
        }
        if !problems.isEmpty {
            throw CommandFailure(
                .verifyFoundDifference,
                "\(location) has \(problems.count) problems (listed above). Copy what reads with `sovaria migrate` "
                    + "into a new store (damaged entries stop it: delete them first), or restore a backup.")
        }
    }
}
