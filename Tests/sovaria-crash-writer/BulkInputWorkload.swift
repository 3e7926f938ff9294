import Foundation
import Sovaria

/// The crash writer's bulk-input mode (`bulk-<engine>`, FIRST being the size of the large value
/// in MiB, with the batch size in `SOVARIA_BULK_BATCH`): in a process of its own, so that its
/// peak memory is its own, it
///
/// 1. sets one value of FIRST MiB, reads it back and compares;
/// 2. writes a batch of SOVARIA_BULK_BATCH sets (`sov:bulk:<n>`, 100-byte values);
/// 3. writes a batch as large that overwrites all of them, with one invalid (512-byte) key in
///    the middle: it must throw `.invalidKey` and change nothing.
///
/// Prints `large OK|MISMATCH`, `batch OK`, `badbatch CODE`, then `rss KIB` (the peak resident
/// set, `VmHWM`) after each step, and `done`; `failed STEP CODE` when a step throws an
/// ``OfflineStoreError`` and `untyped STEP TYPE` for any other error, and stops there.
enum BulkInputWorkload {
    static let enginePrefix = "bulk-"
    static let largeKey = "sov:bulk:large"

    /// The key of bulk entry `index`.
    static func key(_ index: Int) -> String { "sov:bulk:\(index)" }

    /// Bulk entry `index`'s value: 100 bytes that say its number.
    static func value(_ index: Int) -> String {
        let text = "v\(index)-"
        return String(repeating: text, count: 100 / text.utf8.count + 1).prefix(100).description
    }

    /// A value of `mebibytes` MiB whose every 64 KiB block differs, so a misplaced block shows.
    static func largeValue(mebibytes: Int) -> String {
        var text = ""
        text.reserveCapacity(mebibytes << 20)
        for block in 0..<(mebibytes * 16) {
            let unit = "\(block)|é😀|"
            text += String(repeating: unit, count: 65_536 / unit.utf8.count)
            text += String(repeating: "x", count: 65_536 - (65_536 / unit.utf8.count) * unit.utf8.count)
        }
        return text
    }

    /// Runs the three steps on `engine` at `location` and exits with status 0.
    static func run(engine: String, location: String, durability: Durability, mebibytes: Int) async -> Never {
        let batchSize = Int(ProcessInfo.processInfo.environment["SOVARIA_BULK_BATCH"] ?? "") ?? 100_000
        do {
            let store = try await CrashStores.open(engine, location: location, durability: durability)
            try await step("large") {
                let large = largeValue(mebibytes: mebibytes)
                try await store.set(largeKey, large)
                let read = try await store.get(largeKey)
                IOErrorWorkload.say("large \(read == large ? "OK" : "MISMATCH")")
            }
            try await step("batch") {
                try await store.write((0..<batchSize).map { .set(key: key($0), value: value($0)) })
                IOErrorWorkload.say("batch OK")
            }
            try await step("badbatch") {
                var writes: [StoreWrite] = (0..<batchSize).map { .set(key: key($0), value: "changed") }
                writes[batchSize / 2] = .set(key: String(repeating: "k", count: StoreKey.maxUTF8Count + 1), value: "x")
                do {
                    try await store.write(writes)
                    IOErrorWorkload.say("badbatch accepted")
                } catch let error as OfflineStoreError {
                    IOErrorWorkload.say("badbatch \(error.code)")
                }
            }
        } catch {}
        IOErrorWorkload.say("done")
        exit(0)
    }

    /// Runs `body`, then prints the peak resident set; reports an error and rethrows it.
    private static func step(_ name: String, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as OfflineStoreError {
            IOErrorWorkload.say("failed \(name) \(error.code)")
            IOErrorWorkload.say(to: 2, "\(name): \(error)")
            throw error
        } catch {
            IOErrorWorkload.say("untyped \(name) \(type(of: error))")
            IOErrorWorkload.say(to: 2, "\(name): \(error)")
            throw error
        }
        IOErrorWorkload.say("rss \(peakResidentKiB())")
    }

    /// `VmHWM` of this process, in KiB (0 when /proc cannot tell).
    static func peakResidentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
        return line.flatMap { Int($0.split(separator: " ")[1]) } ?? 0
    }
}
