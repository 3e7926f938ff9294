import Sovaria

/// `sovaria dump URL [--prefix P] [--decrypt]`: every entry as a JSON Lines object
/// `{"key":…,"value":…}` on standard output, in byte order of the keys.
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
                let page = try await opened.store.entries(prefix, after: after, limit: pageSize)
                var output: [UInt8] = []
                for entry in page {
                    JSONLine.object([("key", .string(entry.key)), ("value", .string(entry.value))], into: &output)
                }
                Terminal.write(output)
                guard page.count == pageSize, let last = page.last?.key else { return }
                after = last
            }
        } catch {
            throw CommandFailure.from(error, while: "Reading \(location)")
        }
    }
}
