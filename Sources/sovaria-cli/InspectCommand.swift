import Foundation
import Sovaria
import SovariaCache

/// `sovaria inspect URL`: entries and bytes per area of a Sovaria store, what each account holds
/// (``AccountUsage``: counts and bytes, never content), the oldest and newest list of the implicit
/// account's query cache by server time, and the store's size on disk.
///
/// An encrypted store is inspected without its key: key names are stored as they are, and the
/// sizes are those of the stored (encrypted) values, which is what takes the disk space.
enum InspectCommand {
    static let usage = "sovaria inspect URL [--json]"

    /// The areas Sovaria's modules write, by key prefix (SovariaCache, SovariaQueue, SovariaFiles).
    static let areas: [(name: String, prefix: String)] = [
        ("cache", "sov:cache:"), ("queue", "sov:queue:"), ("rejected", "sov:rejected:"), ("files", "sov:file:"),
        ("meta", "sov:meta:"), ("accounts", AccountScopedStore.keyPrefix),
    ]

    static func run(_ arguments: ArraySlice<String>) async throws(CommandFailure) {
        let parsed = try ParsedArguments(arguments, options: ["batch"], flags: ["json"])
        var location = try StoreLocation(parsing: parsed.single("store URL", command: "inspect"))
        let encrypted = location.isEncrypted
        location.isEncrypted = false
        let store = try await StoreOpener().open(location, mustExist: true).store
        let pageSize = try parsed.positiveInteger("batch", default: 1_000)
        var counts = [(entries: Int, bytes: Int)](repeating: (0, 0), count: areas.count + 1)
        var accounts = AccountTally()
        // List keys sort by their query's hash: the oldest and newest are kept as pages go by.
        var oldest: StoredResponse?
        var newest: StoredResponse?
        var after: String?
        do {
            while true {
                // Bytes: a value that is not UTF-8 is counted like any other.
                let page = try await store.dataEntries("", after: after, limit: pageSize)
                for entry in page {
                    let area = areas.firstIndex { StoreKey.hasBytePrefix(entry.key, $0.prefix) } ?? areas.count
                    let storedBytes = entry.key.utf8.count + entry.data.count
                    counts[area].entries += 1
                    counts[area].bytes += storedBytes
                    accounts.add(key: entry.key, storedBytes: storedBytes)
                    guard area == 0 else { continue }
                    // A cache record is JSON text: only a UTF-8 value can be one.
                    let text = encrypted ? nil : String(validating: entry.data, as: UTF8.self)
                    if let list = StoredResponse(key: entry.key, value: text) {
                        if oldest.map({ list.serverTime < $0.serverTime }) ?? true { oldest = list }
                        if newest.map({ list.serverTime >= $0.serverTime }) ?? true { newest = list }
                    }
                }
                guard page.count == pageSize, let last = page.last?.key else { break }
                after = last
            }
        } catch {
            throw CommandFailure.from(error, while: "Reading \(location)")
        }
        let names = areas.map(\.name) + ["other"]
        let diskBytes = location.files.reduce(0) { total, file in
            total + ((try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
        }
        if parsed.has("json") {
            var members: [(String, JSONLine.Value)] = [
                ("event", .string("inspect")), ("engine", .string(location.engine)),
                ("encrypted", .bool(encrypted)), ("diskBytes", .integer(diskBytes)),
            ]
            for (index, name) in names.enumerated() {
                members.append((name + "Entries", .integer(counts[index].entries)))
                members.append((name + "Bytes", .integer(counts[index].bytes)))
            }
            members.append(("accounts", .array(accounts.accounts.map(json))))
            for (name, list) in [("oldestCached", oldest), ("newestCached", newest)] {
                guard let list else { continue }
                members.append((name + "ServerTime", .string(timestamp(list.serverTime))))
                members.append((name + "Bytes", .integer(list.sizeBytes)))
                if let query = list.response?.query { members.append((name + "Query", .string(query))) }
            }
            Terminal.write(JSONLine.object(members))
            return
        }
        Terminal.print("store     \(location.text)")
        Terminal.print("engine    \(location.engine)\(encrypted ? ", encrypted (sizes as stored)" : "")")
        if location.isOnDisk {
            Terminal.print("on disk   \(diskBytes) bytes")
        }
        Terminal.print("area       entries        bytes")
        for (index, name) in names.enumerated() {
            let entries = String(counts[index].entries)
            let bytes = String(counts[index].bytes)
            Terminal.print(
                name.padding(toLength: 9, withPad: " ", startingAt: 0)
                    + String(repeating: " ", count: max(1, 9 - entries.count)) + entries
                    + String(repeating: " ", count: max(1, 13 - bytes.count)) + bytes)
        }
        Terminal.print("pending writes (queue): \(accounts.queuedWrites)")
        printAccounts(accounts.accounts)
        if let oldest, let newest {
            Terminal.print("cached responses by server time:")
            Terminal.print("  oldest  " + describe(oldest, encrypted: encrypted))
            Terminal.print("  newest  " + describe(newest, encrypted: encrypted))
        }
    }

    /// One account's counts and bytes per kind; `account` is `null` for the implicit account.
    private static func json(_ usage: AccountUsage) -> JSONLine.Value {
        var members: [(String, JSONLine.Value)] = [("account", usage.account.map { .string($0.rawValue) } ?? .null)]
        for kind in AccountUsage.Kind.allCases {
            members.append((kind.name + "Entries", .integer(usage.entries(kind))))
            members.append((kind.name + "Bytes", .integer(usage.bytes(kind))))
        }
        return .object(members)
    }

    /// A line per account: its id (or `(implicit)`), then entries and bytes of each kind.
    private static func printAccounts(_ accounts: [AccountUsage]) {
        let names = accounts.map { $0.account?.rawValue ?? "(implicit)" }
        let named = accounts.count { $0.account != nil }
        Terminal.print("accounts: \(named)" + (named < accounts.count ? " and the implicit one" : ""))
        let width = names.map(\.count).max() ?? 0
        for (name, usage) in zip(names, accounts) {
            let kinds = AccountUsage.Kind.allCases.map { kind in
                "\(kind.name) \(usage.entries(kind)) (\(usage.bytes(kind)) bytes)"
            }
            Terminal.print(
                "  " + name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + kinds.joined(separator: ", ")
            )
        }
    }

    /// One line for a cached list: its server time, body size and query (cut to 60 characters).
    private static func describe(_ list: StoredResponse, encrypted: Bool) -> String {
        let query = list.response.map { $0.query.count > 60 ? $0.query.prefix(59) + "…" : $0.query }
        return "\(timestamp(list.serverTime))  \(list.sizeBytes) bytes  "
            + (query ?? (encrypted ? "(query encrypted)" : "(not a cache record)"))
    }

    /// ISO 8601 in UTC with milliseconds, as the server time is kept.
    private static func timestamp(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}
