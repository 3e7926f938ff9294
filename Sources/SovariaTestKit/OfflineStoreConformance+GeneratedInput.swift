import Foundation
import Sovaria

extension OfflineStoreConformance {
    /// The checks on generated keys and values.
    static let generatedInputChecks: [ConformanceCheck] = [
        ConformanceCheck(
            "generatedKeysAndValues",
            "Keys and values generated from every Unicode plane, with \\0, of 0 to 600 UTF-8 bytes: keys of 1 to "
                + "511 bytes store their values byte for byte and list in byte order; the others throw .invalidKey, "
                + "alone or in the middle of a batch, and change nothing."
        ) { context in
            let store = try await context.makeStore().store
            let seed = UInt64.random(in: 1...UInt64.max)
            let limit = context.factory.maxKeyUTF8Count
            var generator = GeneratedInput(seed: seed, maxKeyUTF8Count: limit)
            let keys = (0..<120).map { _ in generator.string(bytes: generator.length(upTo: 600)) }
            let (valid, invalid) = (
                keys.filter { (1...limit).contains($0.utf8.count) },
                keys.filter { !(1...limit).contains($0.utf8.count) }
            )
            try context.expect(!valid.isEmpty && !invalid.isEmpty, "seed \(seed): the generator made both kinds")
            var model: [[UInt8]: String] = [:]
            var batch: [StoreWrite] = []
            for key in valid {
                let value = generator.string(bytes: generator.length(upTo: 600))
                model[Array(key.utf8)] = value
                batch.append(.set(key: key, value: value))
            }
            // Most in one batch, the last few alone: both paths of every store.
            try await store.write(Array(batch.dropLast(5)))
            for write in batch.suffix(5) {
                if case .set(let key, let value) = write { try await store.set(key, value) }
            }

            for key in invalid {
                let shown = "seed \(seed): \(key.utf8.count)-byte generated key"
                try await context.expectError(.invalidKey, "set(\(shown))") { try await store.set(key, "x") }
                try await context.expectError(.invalidKey, "get(\(shown))") { _ = try await store.get(key) }
                try await context.expectError(.invalidKey, "delete(\(shown))") { try await store.delete(key) }
                let middle = batch.count / 2
                try await context.expectError(.invalidKey, "a batch with the \(shown) in the middle") {
                    try await store.write(
                        batch[..<middle].map { .delete(key: $0.key) } + [.set(key: key, value: "x")]
                            + batch[middle...].map { .set(key: $0.key, value: "changed") })
                }
            }

            let expected = byteSorted(valid.uniquedByBytes())
            try context.expectKeys(try await store.keys(""), expected, "seed \(seed): keys(\"\")")
            for key in expected {
                try context.expectBytes(
                    try await store.get(key), model[Array(key.utf8)], "seed \(seed): get(\(key.utf8.count)-byte key)")
            }
            let entries = try await store.entries("", after: nil, limit: expected.count + 1)
            try context.expectKeys(entries.map(\.key), expected, "seed \(seed): entries(\"\")")
            for entry in entries {
                try context.expectBytes(entry.value, model[Array(entry.key.utf8)], "seed \(seed): an entry's value")
            }
        }
    ]
}

/// Strings for the generated-input check: scalars from every plane, `\0` and noncharacters
/// included, from a seeded generator so a failure names the seed that repeats it.
struct GeneratedInput {
    private var random: SplitMix
    /// The longest valid key: an edge ``length(upTo:)`` returns often.
    private let maxKeyUTF8Count: Int

    /// A generator that makes the same strings for the same `seed`, with the edges of keys up to
    /// `maxKeyUTF8Count` bytes.
    init(seed: UInt64, maxKeyUTF8Count: Int = StoreKey.maxUTF8Count) {
        random = SplitMix(seed: seed)
        self.maxKeyUTF8Count = maxKeyUTF8Count
    }

    /// The next random number.
    mutating func next() -> UInt64 { random.next() }

    /// A length from 0 to `limit`, with the edges of the key limit (0, 1, 511, 512 for an engine)
    /// more often than chance would give them.
    mutating func length(upTo limit: Int) -> Int {
        let edges = [0, 1, maxKeyUTF8Count, maxKeyUTF8Count + 1]
        return next() % 5 == 0 ? edges[Int(next() % UInt64(edges.count))] : Int(next() % UInt64(limit + 1))
    }

    /// A string of exactly `bytes` UTF-8 bytes: random scalars of any plane, then ASCII letters to
    /// fill the last one to three bytes.
    mutating func string(bytes: Int) -> String {
        var scalars = String.UnicodeScalarView()
        var count = 0
        while count < bytes {
            let scalar = self.scalar()
            let width = String(scalar).utf8.count
            if count + width > bytes { break }
            scalars.append(scalar)
            count += width
        }
        while count < bytes {
            scalars.append(Unicode.Scalar(UInt8(97 + next() % 26)))
            count += 1
        }
        return String(scalars)
    }

    /// `\0`, a noncharacter, an ASCII character, or any scalar of a random plane (0 to 16).
    private mutating func scalar() -> Unicode.Scalar {
        switch next() % 10 {
        case 0: return "\0"
        case 1: return ["\u{FFFE}", "\u{FFFF}", "\u{10FFFF}", "\u{FEFF}", "\u{E0001}"][Int(next() % 5)]
        case 2, 3: return Unicode.Scalar(UInt8(32 + next() % 95))
        default:
            let plane = UInt32(next() % 17)
            let value = plane << 16 | UInt32(next() & 0xFFFF)
            return Unicode.Scalar(value) ?? "\u{FFFD}"  // a surrogate (not a scalar) becomes U+FFFD
        }
    }
}

extension Array where Element == String {
    /// The strings with duplicates (by UTF-8 bytes) removed, first occurrence kept.
    fileprivate func uniquedByBytes() -> [String] {
        var seen: Set<[UInt8]> = []
        return filter { seen.insert([UInt8]($0.utf8)).inserted }
    }
}
