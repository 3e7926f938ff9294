import Foundation
import Sovaria

/// `sovaria load URL [--overwrite] [--yes]`: writes the JSON Lines of `dump` from standard input.
///
/// A line is `{"key":…,"value":…}` (a value that is text) or `{"key":…,"base64":…}` (a value of
/// any bytes, RFC 4648 base64 with the standard alphabet and padding), exactly one of the two.
/// Keys the store already has are kept, as `migrate` keeps them, unless `--overwrite`.
enum LoadCommand {
    static let usage = "sovaria load URL [--overwrite] [--yes] [--batch N] [--key-file FILE] < dump.jsonl"

    private struct Line: Decodable {
        let key: String
        let value: String?
        let base64: String?
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
        var input = InputLines(fileDescriptor: STDIN_FILENO)
        var lineNumber = 0
        var written = 0
        var kept = 0
        var bytes = 0
        var pending: [StoreWrite] = []
        func flush() async throws {
            guard !pending.isEmpty else { return }
            var writes: [StoreWrite] = []
            for write in pending {
                // Asked as bytes: a value the store holds that is not UTF-8 is still a value.
                if !overwrite, try await opened.store.withValue(write.key, { _ in true }) != nil {
                    kept += 1
                    continue
                }
                writes.append(write)
            }
            try await opened.store.write(writes)
            written += writes.count
            pending.removeAll(keepingCapacity: true)
            progress.update(entries: written + kept, bytes: bytes)
        }
        /// The error for line `lineNumber`, saying what was written before it.
        func badLine(_ problem: String) -> CommandFailure {
            CommandFailure(
                .other,
                "Line \(lineNumber) of standard input \(problem); \(written) entries were written before it. Fix the "
                    + "line and load again (keys already written are kept).")
        }
        do {
            while let text = try input.next() {
                lineNumber += 1
                if text.isEmpty { continue }
                // Checked here rather than repaired: a line that is not UTF-8 was not written by `dump`.
                guard String(validating: text, as: UTF8.self) != nil else { throw badLine("is not UTF-8") }
                guard let line = try? decoder.decode(Line.self, from: Data(text)) else {
                    throw badLine("is not {\"key\":…,\"value\":…} or {\"key\":…,\"base64\":…}")
                }
                switch (line.value, line.base64) {
                case (let value?, nil):
                    bytes += line.key.utf8.count + value.utf8.count
                    pending.append(.set(key: line.key, value: value))
                case (nil, let base64?):
                    guard let data = Data(base64Encoded: base64) else {
                        throw badLine("has a \"base64\" that is not base64 (RFC 4648, standard alphabet, padded)")
                    }
                    bytes += line.key.utf8.count + data.count
                    pending.append(.setData(key: line.key, data: data))
                case (.some, .some):
                    throw badLine("has both \"value\" and \"base64\": a line carries its value in one of them")
                case (nil, nil):
                    throw badLine("has neither \"value\" nor \"base64\"")
                }
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

/// The lines of a file descriptor as bytes, without their `\n` (or `\r\n`): unlike `readLine`,
/// which replaces bytes that are not UTF-8 with U+FFFD, a line comes back exactly as read.
private struct InputLines {
    let fileDescriptor: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    /// Bytes before this index hold no `\n` (a long line is scanned once, not once per read).
    private var scanned = 0
    private var atEnd = false

    init(fileDescriptor: Int32) { self.fileDescriptor = fileDescriptor }

    /// The next line; `nil` at the end of the input (a last line without `\n` is a line).
    mutating func next() throws -> [UInt8]? {
        while true {
            if let newline = buffer[max(start, scanned)...].firstIndex(of: 0x0A) {
                var line = Array(buffer[start..<newline])
                start = newline + 1
                scanned = start
                if line.last == 0x0D { line.removeLast() }
                return line
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                return line
            }
            buffer.removeFirst(start)
            start = 0
            scanned = buffer.count
            try fill()
        }
    }

    private mutating func fill() throws {
        let chunk = 1 << 16
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        var count = 0
        repeat {
            count = buffer.withUnsafeMutableBytes { read(fileDescriptor, $0.baseAddress! + old, chunk) }
        } while count < 0 && errno == EINTR
        guard count >= 0 else {
            buffer.removeLast(chunk)
            throw CommandFailure(.other, "Reading standard input failed: \(String(cString: strerror(errno))).")
        }
        buffer.removeLast(chunk - count)
        if count == 0 { atEnd = true }
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
