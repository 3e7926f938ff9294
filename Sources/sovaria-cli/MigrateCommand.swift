import Foundation
import Sovaria
import SovariaPlumbing

/// `sovaria migrate --from URL --to URL`: copies every entry (under `--prefix`) the target lacks,
/// page by page, keeping the target's own keys as `OfflineMigration.migrate` does (`--overwrite`
/// replaces them instead, after a question on a terminal or with `--yes`).
///
/// Each page is written in one batch together with a checkpoint (the page's last key) under
/// ``checkpointKey`` in the target, so a migrate stopped by Ctrl-C, a kill or a full disk
/// continues with `--resume` after the last whole page; the checkpoint is deleted at the end.
enum MigrateCommand {
    static let usage = """
        sovaria migrate --from URL --to URL [--prefix P] [--batch N] [--dry-run] [--verify] [--resume] [--json]
                        [--overwrite [--yes]]
                        [--key-file FILE | --from-key-file FILE --to-key-file FILE]
        """

    /// Where the checkpoint lives in the target; never copied from a source.
    static let checkpointKey = "sov:meta:migrate:checkpoint"

    private struct Checkpoint: Codable {
        var after: String
        var prefix: String
    }

    private struct Counts {
        var read = 0
        var copied = 0
        var kept = 0
        var bytes = 0
    }

    static func run(_ arguments: ArraySlice<String>) async throws(CommandFailure) {
        let parsed = try ParsedArguments(
            arguments, options: ["from", "to", "prefix", "batch", "key-file", "from-key-file", "to-key-file"],
            flags: ["dry-run", "verify", "resume", "json", "quiet", "overwrite", "yes"])
        guard parsed.positionals.isEmpty else { throw .usage("`sovaria migrate` takes no positional argument.") }
        guard let fromText = parsed.value("from"), let toText = parsed.value("to") else {
            throw .usage("`sovaria migrate` needs --from URL and --to URL.")
        }
        // From here on Ctrl-C stops between pages (exit 6), never halfway through opening or writing one.
        Interruption.install()
        let sourceLocation = try StoreLocation(parsing: fromText)
        let targetLocation = try StoreLocation(parsing: toText)
        let prefix = parsed.value("prefix") ?? ""
        let pageSize = try parsed.positiveInteger("batch", default: 1_000)
        guard sourceLocation.engine != targetLocation.engine || sourceLocation.place != targetLocation.place else {
            throw .usage("--from and --to name the same store.")
        }
        let dryRun = parsed.has("dry-run")
        let overwrite = parsed.has("overwrite")
        let json = parsed.has("json")
        let source = try await StoreOpener(
            keyFile: parsed.value("from-key-file") ?? parsed.value("key-file"),
            passphraseVariables: ["SOVARIA_FROM_PASSPHRASE", "SOVARIA_PASSPHRASE"]
        ).open(sourceLocation, mustExist: true).store
        // A dry run into a target that does not exist yet reads as empty instead of creating it.
        let target: any OfflineStore =
            dryRun && !targetLocation.exists
            ? MemoryOfflineStore()
            : try await StoreOpener(
                keyFile: parsed.value("to-key-file") ?? parsed.value("key-file"),
                passphraseVariables: ["SOVARIA_TO_PASSPHRASE", "SOVARIA_PASSPHRASE"]
            ).open(targetLocation, mustExist: false).store

        if overwrite, !dryRun, !parsed.has("yes") {
            let targetHasEntries: Bool
            do {
                targetHasEntries = try await !target.dataEntries(prefix, after: nil, limit: 1).isEmpty
            } catch {
                throw CommandFailure.from(error, while: "Reading \(targetLocation)")
            }
            if targetHasEntries {
                try Confirmation.ask(
                    "\(targetLocation) is not empty: replace its values of keys the source also has?")
            }
        }

        var after: String?
        do {
            if let saved = try await target.data(checkpointKey),
                let checkpoint = try? JSONDecoder().decode(Checkpoint.self, from: saved)
            {
                if !parsed.has("resume") {
                    note(
                        "\(targetLocation) holds the checkpoint of an earlier migrate; starting from the beginning "
                            + "(keys it has are kept). Add --resume to continue after it instead.", json: json)
                } else if checkpoint.prefix != prefix {
                    throw CommandFailure(
                        .usage,
                        "The checkpoint in \(targetLocation) is of a migrate with --prefix '\(checkpoint.prefix)'; "
                            + "resume with the same --prefix.")
                } else {
                    after = checkpoint.after
                }
            } else if parsed.has("resume") {
                note("No checkpoint in \(targetLocation): starting from the beginning.", json: json)
            }
        } catch {
            throw CommandFailure.from(error, while: "Reading the checkpoint of \(targetLocation)")
        }

        if json {
            Terminal.write(
                JSONLine.object([
                    ("event", .string("start")), ("from", .string(fromText)), ("to", .string(toText)),
                    ("prefix", .string(prefix)), ("resumeAfter", .string(after ?? "")), ("dryRun", .bool(dryRun)),
                ]))
        }
        let progress = ProgressLine(verb: dryRun ? "migrate (dry run)" : "migrate", quiet: json || parsed.has("quiet"))
        progress.countTotal { [after] in
            try await StoreRange.remaining(in: source, prefix: prefix, after: after, pageSize: pageSize).entries
        }
        let started = ContinuousClock.now
        var counts = Counts()
        do {
            while true {
                if Interruption.isRequested {
                    throw CommandFailure(
                        .interrupted,
                        after == nil
                            ? "Interrupted before anything was copied. Run the same command again."
                            : "Interrupted after \(counts.copied) entries copied; \(targetLocation) holds them and a "
                                + "checkpoint. Run the same command with --resume to continue.")
                }
                let page = try await source.dataEntries(prefix, after: after, limit: pageSize)
                guard let last = page.last?.key else { break }
                // --overwrite writes every entry: no need to learn which keys the target has.
                let existing =
                    overwrite
                    ? [:]
                    : try await StoreRange.entries(
                        of: target, prefix: prefix, after: after, through: last, pageSize: pageSize)
                var writes: [StoreWrite] = []
                for entry in page where !StoreKey.hasBytePrefix(entry.key, "sov:meta:migrate:") {
                    counts.read += 1
                    counts.bytes += entry.key.utf8.count + entry.data.count
                    if existing[StoreKey.Bytes(entry.key)] != nil {
                        counts.kept += 1
                    } else {
                        // Bytes, not strings: binary values and strings alike arrive byte-identical.
                        writes.append(.setData(key: entry.key, data: entry.data))
                    }
                }
                counts.copied += writes.count
                if !dryRun {
                    let checkpoint = try JSONEncoder().encode(Checkpoint(after: last, prefix: prefix))
                    writes.append(.set(key: checkpointKey, value: String(decoding: checkpoint, as: UTF8.self)))
                    try await target.write(writes)
                }
                if json {
                    Terminal.write(
                        JSONLine.object([
                            ("event", .string("progress")), ("read", .integer(counts.read)),
                            ("copied", .integer(counts.copied)), ("kept", .integer(counts.kept)),
                            ("bytes", .integer(counts.bytes)), ("checkpoint", .string(last)),
                        ]))
                }
                progress.update(entries: counts.read, bytes: counts.bytes)
                after = last
                if page.count < pageSize { break }
            }
            if !dryRun { try await target.delete(checkpointKey) }
        } catch {
            var failure = CommandFailure.from(error, while: "Migrating from \(sourceLocation) to \(targetLocation)")
            if failure.status != .interrupted, !dryRun, counts.read > 0 {
                failure.message +=
                    "\nWhole pages copied before the failure stay in the target with a checkpoint: "
                    + "run the same command with --resume to continue."
            }
            if failure.status == .targetFull,
                let remaining = try? await StoreRange.remaining(
                    in: source, prefix: prefix, after: after, pageSize: pageSize
                ).bytes
            {
                failure.message +=
                    "\nAbout \(mebibytes(remaining)) MiB of keys and values were still to copy; the target needs more "
                    + "than that on disk (its own structures; encryption adds about a third)."
            }
            throw failure
        }
        progress.finish(entries: counts.read, bytes: counts.bytes)

        var differences = 0
        if parsed.has("verify"), !dryRun {
            do {
                differences = try await compare(source, target, prefix: prefix, pageSize: pageSize, json: json)
            } catch {
                throw CommandFailure.from(error, while: "Verifying \(targetLocation) against \(sourceLocation)")
            }
        }
        let seconds = (ContinuousClock.now - started).timeInterval
        if json {
            Terminal.write(
                JSONLine.object([
                    ("event", .string("done")), ("read", .integer(counts.read)), ("copied", .integer(counts.copied)),
                    ("kept", .integer(counts.kept)), ("bytes", .integer(counts.bytes)),
                    ("differences", .integer(differences)), ("seconds", .number(seconds)), ("dryRun", .bool(dryRun)),
                ]))
        } else {
            Terminal.printError(
                "migrate: read \(counts.read) entries, \(dryRun ? "would copy" : "copied") \(counts.copied), kept "
                    + "\(counts.kept) the target already had" + (parsed.has("verify") && !dryRun ? ", verified" : "")
                    + ".")
        }
        if differences > 0 {
            throw CommandFailure(
                .verifyFoundDifference,
                "--verify found \(differences) source entries the target lacks or holds with another value (a key the "
                    + "target already had keeps its own value). `sovaria dump` both stores and diff them to see which.")
        }
    }

    /// Every source entry under `prefix` read back from the target; returns how many differ. Values
    /// are compared as bytes: `String` `==` would call canonically equivalent strings (`"é"` and
    /// `"e\u{301}"`) equal, and could not read a value that is not UTF-8.
    private static func compare(
        _ source: any OfflineStore, _ target: any OfflineStore, prefix: String, pageSize: Int, json: Bool
    ) async throws -> Int {
        var differences = 0
        var after: String?
        while true {
            if Interruption.isRequested {
                throw CommandFailure(
                    .interrupted,
                    "Interrupted while verifying; the copy itself is complete. Run the same command again to verify.")
            }
            let page = try await source.dataEntries(prefix, after: after, limit: pageSize)
            guard let last = page.last?.key else { return differences }
            let copies = try await StoreRange.entries(
                of: target, prefix: prefix, after: after, through: last, pageSize: pageSize)
            for entry in page where !StoreKey.hasBytePrefix(entry.key, "sov:meta:migrate:") {
                guard copies[StoreKey.Bytes(entry.key)] != entry.data else { continue }
                differences += 1
                if json {
                    Terminal.write(JSONLine.object([("event", .string("difference")), ("key", .string(entry.key))]))
                } else if differences <= 20 {
                    Terminal.printError("verify: differs: \(entry.key)")
                }
            }
            if page.count < pageSize { return differences }
            after = last
        }
    }

    /// The bytes of keys and values under `prefix` after `after`: what a stopped copy still has to write.
    private static func mebibytes(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }

    private static func note(_ text: String, json: Bool) {
        if json {
            Terminal.write(JSONLine.object([("event", .string("note")), ("message", .string(text))]))
        } else {
            Terminal.printError("migrate: " + text)
        }
    }
}
