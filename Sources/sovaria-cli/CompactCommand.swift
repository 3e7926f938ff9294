import Foundation

/// `sovaria compact URL`: gives the space freed by deletes back to the operating system.
enum CompactCommand {
    static let usage = "sovaria compact URL [--key-file FILE]"

    static func run(_ arguments: ArraySlice<String>) async throws(CommandFailure) {
        let parsed = try ParsedArguments(arguments, options: [], flags: [])
        var location = try StoreLocation(parsing: parsed.single("store URL", command: "compact"))
        // Compaction is the engine's work: the encryption layer only forwards it, so no key is needed.
        location.isEncrypted = false
        let store = try await StoreOpener().open(location, mustExist: true).store
        let before = diskBytes(location)
        do {
            try await store.compact()
        } catch {
            throw CommandFailure.from(error, while: "Compacting \(location)")
        }
        Terminal.printError("compact: \(location): \(before) bytes on disk before, \(diskBytes(location)) after.")
    }

    private static func diskBytes(_ location: StoreLocation) -> Int {
        location.files.reduce(0) { total, file in
            total + ((try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
        }
    }
}
