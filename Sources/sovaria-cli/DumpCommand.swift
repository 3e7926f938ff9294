import Foundation
import Sovaria

/// `sovaria dump URL [--prefix P] [--decrypt]`: every entry as a JSON Lines object on standard
/// output, in byte order of the keys: `{"key":…,"value":…}` for a value that is valid UTF-8,
/// `{"key":…,"base64":…}` for any other value (RFC 4648, standard alphabet, padded). The form depends only on the bytes, so every engine dumps alike.
enum DumpCommand {
    static let usage = "sovaria dump URL [--prefix P] [--decrypt] [--key-file FILE]"

    static func run(_ arguments: ArraySlice<String>) async throws(CommandFailure) {
        let parsed = try ParsedArguments(arguments, options: ["prefix", "key-file", "batch"], flags: ["decrypt"])
        let location = try StoreLocation(parsing: parsed.single("store URL", command: "dump"))
        if location.isEncrypted, !parsed.has("decrypt") {
            throw CommandFailure(
                .usage,
                "\(location) is encrypted: `dump` writes values as plain text only with --decrypt. Add --decrypt if "
                    + "that is what you want, and keep the output as safe as the key.")
        }
        let opened = try await StoreOpener(keyFile: parsed.value("key-file")).open(location, mustExist: true)
        let prefix = parsed.value("prefix") ?? ""
        let pageSize = try parsed.positiveInteger("batch", default: 1_000)
        var after: String?
        do {
            while true {
                // Each page as borrowed bytes, written as JSON into one buffer: no entry is kept.
                var output: [UInt8] = []
                let page = try await opened.store.withEntries(prefix, after: after, limit: pageSize) { key, bytes in
                    let value: (String, JSONLine.Value) =
                        if let text = String(validating: bytes, as: UTF8.self) {
                            ("value", .string(text))
                        } else {
                            // A JSON string holds text only: other bytes go as base64.
                            ("base64", .string(Data(bytes).base64EncodedString()))
                        }
                    JSONLine.object([("key", .string(String(decoding: key, as: UTF8.self))), value], into: &output)
                    return true
                }
                Terminal.write(output)
                guard page.mayHaveMore, let last = page.lastKey else { return }
                after = last
            }
        } catch {
            throw CommandFailure.from(error, while: "Reading \(location)")
        }
    }
}
