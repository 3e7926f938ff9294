import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaSQLite

/// `sovaria verify URL`: the engine's own check (``EngineCheck``: SQLite `integrity_check`, LMDB's
/// statistics against a cursor walk, a LevelDB iteration with every checksum verified, the file
/// store's journal and names), then a full read of every entry — every value decrypted for an
/// encrypted store — and a report of what is wrong and what to do. Exit status 4 when it finds
/// damage, also when the damage keeps the store from opening.
enum VerifyCommand {
    static let usage = "sovaria verify URL [--key-file FILE] [--json]"

    static func run(_ arguments: ArraySlice<String>) async throws(CommandFailure) {
        let parsed = try ParsedArguments(arguments, options: ["key-file", "batch"], flags: ["json", "quiet"])
        let location = try StoreLocation(parsing: parsed.single("store URL", command: "verify"))
        let pageSize = try parsed.positiveInteger("batch", default: 1_000)
        var report = EngineCheck()
        EngineCrashGuard.install(for: location)
        // The engine itself, opened here to tell damage (exit 4) from a store that cannot be opened
        // (exit 3); the opener below shares its handle.
        guard report.checkFileFolderBeforeOpening(location), let engine = try await openEngine(location, into: &report)
        else {
            try finish(location, report, entries: 0, bytes: 0, json: parsed.has("json"))
            return
        }
        let opened = try await StoreOpener(keyFile: parsed.value("key-file")).open(location, mustExist: true)
        await report.checkEngine(engine, at: location)
        if location.isEncrypted { report.checks.append("every value decrypted and authenticated") }
        report.checks.append("every entry read")
        let progress = ProgressLine(verb: "verify", quiet: parsed.has("json") || parsed.has("quiet"))
        var entries = 0
        var bytes = 0
        do {
            try await readEveryEntry(opened.store, pageSize: pageSize, into: &report.problems) { count, size in
                entries += count
                bytes += size
                progress.update(entries: entries, bytes: bytes)
            }
        } catch {
            throw CommandFailure.from(error, while: "Reading \(location)")
        }
        progress.finish(entries: entries, bytes: bytes)
        withExtendedLifetime(engine) {}
        try finish(location, report, entries: entries, bytes: bytes, json: parsed.has("json"))
    }

    /// Opens the engine of `location`; `nil` (with the problem in `report`) when the engine reports
    /// damage at open.
    private static func openEngine(
        _ location: StoreLocation, into report: inout EngineCheck
    ) async throws(CommandFailure) -> (any OfflineStore)? {
        guard location.exists else { return try await location.openEngine(mustExist: true) }
        do {
            return try await OfflineStores.openEngine(location.url, using: StoreLocation.schemes)
        } catch let error as OfflineStoreError where error.code == .corrupt {
            report.checks.append("opening the store")
            report.problems.append("The store does not open: \(error.message)")
            return nil
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure(
                .cannotOpen,
                "Cannot open \(location): \(error). Check the path, its permissions and that no other process holds it."
            )
        }
    }

    /// Reads every entry in pages of `pageSize` as borrowed bytes (nothing is kept, so nothing is
    /// copied), calling `counted` with each page's entries and bytes. Values are read as bytes: one
    /// that is not UTF-8 is a byte value, not damage. A damaged value ends its page uncounted: the
    /// rest is read one key at a time to name each.
    private static func readEveryEntry(
        _ store: any OfflineStore, pageSize: Int, into problems: inout [String],
        counted: (_ entries: Int, _ bytes: Int) -> Void
    ) async throws {
        var after: String?
        while true {
            var bytes = 0
            let page: StoreScanPage
            do {
                page = try await store.withEntries("", after: after, limit: pageSize) { key, value in
                    bytes += key.count + value.count
                    return true
                }
            } catch let error as OfflineStoreError where error.code == .corrupt || error.code == .decryptionFailed {
                try await readKeyByKey(store, after: after, into: &problems, counted: counted)
                return
            }
            counted(page.count, bytes)
            guard page.mayHaveMore, let last = page.lastKey else { return }
            after = last
        }
    }

    private static func readKeyByKey(
        _ store: any OfflineStore, after: String?, into problems: inout [String],
        counted: (_ entries: Int, _ bytes: Int) -> Void
    ) async throws {
        let keys: [String]
        do {
            keys = try await store.keys("")
        } catch let error as OfflineStoreError where error.code == .corrupt {
            // The keys cannot be listed past the damage (a LevelDB iterator stops at a damaged
            // block): read one entry at a time up to it, so the count says what still reads.
            var last = after
            while let entry = try? await store.dataEntries("", after: last, limit: 1).first {
                counted(1, entry.key.utf8.count + entry.data.count)
                last = entry.key
            }
            let position = last.map { "after \($0.debugDescription)" } ?? "before the first entry"
            problems.append(
                "Reading stopped at damage \(position); entries behind it were not read: \(error.message)")
            return
        }
        let afterBytes = after.map(StoreKey.Bytes.init)
        // Keys in a row that fail with the same words (one damaged page) make one line.
        var run: (first: String, last: String, count: Int, reason: String)?
        func endRun() {
            guard let ended = run else { return }
            let keys = ended.count == 1 ? ended.first : "\(ended.first) … \(ended.last) (\(ended.count) keys)"
            problems.append("\(keys): \(ended.reason)")
            run = nil
        }
        for key in keys.map(StoreKey.Bytes.init).sorted() {
            if let afterBytes, key <= afterBytes { continue }
            do {
                if let size = try await store.withValue(key.string, \.count) {
                    counted(1, key.string.utf8.count + size)
                }
                endRun()
            } catch let damage as OfflineStoreError {
                let reason = "\(damage.code): \(damage.message)"
                if let current = run, current.reason == reason {
                    run = (current.first, key.string, current.count + 1, reason)
                } else {
                    endRun()
                    run = (key.string, key.string, 1, reason)
                }
            }
        }
        endRun()
    }

    /// Prints the report and throws exit status 4 when it lists a problem.
    private static func finish(
        _ location: StoreLocation, _ report: EngineCheck, entries: Int, bytes: Int, json: Bool
    ) throws(CommandFailure) {
        let advice = report.problems.isEmpty ? nil : EngineCheck.advice(for: location)
        if json {
            var fields: [(String, JSONLine.Value)] = [
                ("event", .string("verify")), ("entries", .integer(entries)), ("bytes", .integer(bytes)),
                ("problems", .integer(report.problems.count)),
                ("checks", .string(report.checks.joined(separator: "; "))),
            ]
            if !report.notes.isEmpty { fields.append(("notes", .string(report.notes.joined(separator: " ")))) }
            if let advice { fields.append(("advice", .string(advice))) }
            Terminal.write(JSONLine.object(fields))
            for problem in report.problems {
                Terminal.write(JSONLine.object([("event", .string("problem")), ("message", .string(problem))]))
            }
        } else {
            for check in report.checks { Terminal.printError("verify: checked: " + check) }
            for note in report.notes { Terminal.printError("verify: note: " + note) }
            for problem in report.problems { Terminal.printError("verify: " + problem) }
            if let advice { Terminal.printError("verify: what to do: " + advice) }
            Terminal.printError(
                "verify: read \(entries) entries (\(bytes) bytes), \(report.problems.count) problems.")
        }
        if !report.problems.isEmpty {
            throw CommandFailure(
                .verifyFoundDifference,
                "\(location) is damaged: \(report.problems.count) problems (listed above, with what to do).")
        }
    }
}
