import Sovaria

extension OfflineStoreConformance {
    static let precomposed = "\u{E9}"
    static let decomposed = "e\u{301}"

    static let keyChecks: [ConformanceCheck] = [
        ConformanceCheck(
            "keysAreBytes",
            "Two keys are equal only when their UTF-8 bytes are: precomposed and decomposed \"é\" are two keys."
        ) { context in
            let store = try await context.makeStore().store
            try await store.set(precomposed, "precomposed")
            try await store.set(decomposed, "decomposed")
            try context.expectBytes(try await store.get(precomposed), "precomposed", "get(precomposed é)")
            try context.expectBytes(try await store.get(decomposed), "decomposed", "get(decomposed é)")
            try context.expectKeys(try await store.keys(""), byteSorted([precomposed, decomposed]), "keys(\"\")")
            try await store.delete(decomposed)
            try context.expectBytes(
                try await store.get(precomposed), "precomposed", "get(precomposed) after delete(decomposed)")
            try context.expectBytes(try await store.get(decomposed), nil, "get(decomposed) after its delete")
        },
        ConformanceCheck("keysListInByteOrder", "keys(_:) and entries list keys ascending by UTF-8 bytes (memcmp).") {
            context in
            let store = try await context.makeStore().store
            let keys = [
                "b", "B", "a", "ab", "a\0", "a\0b", "\u{7F}", "zz", precomposed, decomposed, decomposed + "x",
                "\u{FFFD}", "\u{10000}", "\u{10FFFF}", "日本", "😀", "~", "a b",
            ]
            for (index, key) in keys.enumerated() { try await store.set(key, "v\(index)") }
            let expected = byteSorted(keys)
            try context.expectKeys(try await store.keys(""), expected, "keys(\"\")")
            let entries = try await store.entries("", after: nil, limit: 100)
            try context.expectKeys(entries.map(\.key), expected, "entries(\"\").map(\\.key)")
            for entry in entries {
                let index = keys.firstIndex { Array($0.utf8) == Array(entry.key.utf8) }
                try context.expectBytes(entry.value, index.map { "v\($0)" }, "value of \(entry.key.debugDescription)")
            }
        },
        ConformanceCheck("prefixIsBytePrefix", "\"Starts with\" compares UTF-8 bytes, not characters.") { context in
            let store = try await context.makeStore().store
            for key in [
                decomposed + "x", decomposed, precomposed, "e", "ex", "f", "\u{10FFFF}a", "\u{10FFFF}\u{10FFFF}",
            ] {
                try await store.set(key, key)
            }
            try context.expectKeys(
                try await store.keys("e"), byteSorted(["e", "ex", decomposed, decomposed + "x"]), "keys(\"e\")")
            try context.expectKeys(try await store.keys(precomposed), [precomposed], "keys(precomposed é)")
            try context.expectKeys(
                try await store.keys(decomposed), byteSorted([decomposed, decomposed + "x"]), "keys(decomposed é)")
            try context.expectKeys(
                try await store.keys("\u{10FFFF}"), byteSorted(["\u{10FFFF}a", "\u{10FFFF}\u{10FFFF}"]),
                "keys(\"\\u{10FFFF}\") (a prefix ending in the highest bytes)")
            try context.expectKeys(try await store.keys("g"), [], "keys(\"g\")")
            try context.expectKeys(try await store.keys("ex!"), [], "keys(longer than any key)")
        },
        ConformanceCheck("keyLengthLimits", "Keys of 1 to 511 UTF-8 bytes work; \"\" and 512 bytes throw .invalidKey.")
        { context in
            let store = try await context.makeStore().store
            try await store.set("keep", "kept")
            // 511 bytes for an engine; fewer for a view that prefixes every key.
            let limit = context.factory.maxKeyUTF8Count
            let twoByteCount = (limit - 1) / 2
            let longest = [
                String(repeating: "k", count: limit),
                String(repeating: "é", count: twoByteCount) + String(repeating: "k", count: limit - 2 * twoByteCount),
                "😀" + String(repeating: "x", count: limit - 4),
            ]
            for key in longest {
                try context.expect(key.utf8.count == limit, "test key is \(limit) bytes")
                try await store.set(key, "long")
                try context.expectBytes(try await store.get(key), "long", "get(\(limit)-byte key)")
            }
            try context.expectKeys(
                try await store.keys(""), byteSorted(longest + ["keep"]), "keys after \(limit)-byte sets")
            let entries = try await store.entries("", after: longest[0], limit: 10)
            try context.expectKeys(
                entries.map(\.key),
                byteSorted(longest + ["keep"]).filter { longest[0].utf8.lexicographicallyPrecedes($0.utf8) },
                "entries after a \(limit)-byte key")
            for key in longest { try await store.delete(key) }
            for key in longest {
                try context.expectBytes(try await store.get(key), nil, "get(\(limit)-byte key) after delete")
            }

            var invalid = ["", String(repeating: "k", count: limit + 1), String(repeating: "é", count: limit / 2 + 1)]
            if limit < StoreKey.maxUTF8Count {
                invalid.append(String(repeating: "k", count: StoreKey.maxUTF8Count + 1))
            }
            for key in invalid {
                let shown = "\(key.utf8.count)-byte key"
                try await context.expectError(.invalidKey, "set(\(shown))") { try await store.set(key, "x") }
                try await context.expectError(.invalidKey, "get(\(shown))") { _ = try await store.get(key) }
                try await context.expectError(.invalidKey, "delete(\(shown))") { try await store.delete(key) }
            }
            try context.expectKeys(try await store.keys(""), ["keep"], "keys after rejected calls")
            try context.expectBytes(try await store.get("keep"), "kept", "untouched entry")
        },
    ]
}
