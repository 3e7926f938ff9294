import Foundation
import Sovaria

/// `sovaria load URL [--overwrite] [--yes]`: writes the JSON Lines of `dump` from standard input.
///
/// Keys the store already has are kept, as `migrate` keeps them, unless `--overwrite`.
enum LoadCommand {
    static let usage = "sovaria load URL [--overwrite] [--yes] [--batch N] [--key-file FILE] < dump.jsonl"

    private struct Line: Decodable {
        let key: String
        let value: String
    }

    static func run(_ arguments: ArraySlice<String>) async throws(CommandFailure) {
        let parsed = try ParsedArguments(
            arguments, options: ["key-file", "batch"], flags: ["overwrite", "yes", "quiet"])
        let location = try StoreLocation(parsing: parsed.single("store URL", command: "load"))
        let overwrite = parsed.has("overwrite")
        if overwrite, !parsed.has("yes") {
            try Confirmation.ask(
                "Replace the values of keys \(location) already has with those read from standard input?")
        }
        let opened = try await StoreOpener(keyFile: parsed.value("key-file")).open(location, mustExist: false)
        let pageSize = try parsed.positiveInteger("batch", default: 1_000)
        let decoder = JSONDecoder()
        let progress = ProgressLine(verb: "load", quiet: parsed.has("quiet"))
        var lineNumber = 0
        var written = 0
        var kept = 0
        var bytes = 0
        var pending: [StoreEntry] = []
        func flush() async throws {
            guard !pending.isEmpty else { return }
            var writes: [StoreWrite] = []
            for entry in pending {
                if !overwrite, try await opened.store.get(entry.key) != nil {
                    kept += 1
                    continue
                }
                writes.append(.set(key: entry.key, value: entry.value))
            }
            try await opened.store.write(writes)
            written += writes.count
            pending.removeAll(keepingCapacity: true)
            progress.update(entries: written + kept, bytes: bytes)
        }
        do {
            while let text = readLine(strippingNewline: true) {
                lineNumber += 1
                if text.isEmpty { continue }
                guard let line = try? decoder.decode(Line.self, from: Data(text.utf8)) else {
                    throw CommandFailure(
                        .other,
                        "Line \(lineNumber) of standard input is not {\"key\":…,\"value\":…}; \(written) entries were "
                            + "written before it. Fix the line and load again (keys already written are kept).")
                }
                bytes += line.key.utf8.count + line.value.utf8.count
                pending.append(StoreEntry(key: line.key, value: line.value))
                if pending.count >= pageSize { try await flush() }
            }
            try await flush()
        } catch {
            throw CommandFailure.from(error, while: "Loading into \(location)")
        }
        progress.finish(entries: written + kept, bytes: bytes)
        Terminal.printError("load: wrote \(written) entries, kept \(kept) the store already had.")
    }
}

/// Asks before a destructive command: on a terminal a yes/no question, otherwise `--yes` is needed.
enum Confirmation {
    static func ask(_ question: String) throws(CommandFailure) {
        guard isatty(STDERR_FILENO) == 1, let tty = fopen("/dev/tty", "r") else {
            throw CommandFailure(.usage, "\(question)\nNot on a terminal: add --yes to confirm.")
        }
        defer { fclose(tty) }
        Terminal.write(Array("\(question) [y/N] ".utf8), to: STDERR_FILENO)
        var buffer = [CChar](repeating: 0, count: 16)
        let answer =
            fgets(&buffer, Int32(buffer.count), tty).map { _ in
                String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            } ?? ""
        guard answer.lowercased().hasPrefix("y") else { throw CommandFailure(.other, "Nothing was changed.") }
    }
}
