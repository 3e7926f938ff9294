import Sovaria

extension OfflineStoreConformance {
    static let valueChecks: [ConformanceCheck] = [
        ConformanceCheck("missingKeys", "get of a missing key is nil; delete of a missing key is not an error.") {
            context in
            let store = try await context.makeStore().store
            try context.expectBytes(try await store.get("missing"), nil, "get(missing)")
            try await store.delete("missing")
            try await store.set("present", "1")
            try await store.delete("present")
            try await store.delete("present")
            try context.expectBytes(try await store.get("present"), nil, "get after delete")
            try context.expectKeys(try await store.keys(""), [], "keys after deletes")
            let longMissing = String(repeating: "m", count: context.factory.maxKeyUTF8Count)
            try await store.delete(longMissing)
            try await store.write([.delete(key: longMissing), .delete(key: "missing too")])
            try context.expectKeys(try await store.keys(""), [], "keys after deleting missing keys")
        },
        ConformanceCheck("emptyAndNULStrings", "\"\" is a value (not nil); \"\\0\" is kept in keys and values.") {
            context in
            let store = try await context.makeStore().store
            try await store.set("empty", "")
            try context.expectBytes(try await store.get("empty"), "", "get(empty value)")
            try context.expectKeys(try await store.keys("empty"), ["empty"], "keys lists a key whose value is \"\"")
            let entries = try await store.entries("empty", after: nil, limit: 5)
            try context.expect(entries == [StoreEntry(key: "empty", value: "")], "entries of \"\": got \(entries)")

            try await store.set("nul", "a\0b\0")
            try context.expectBytes(try await store.get("nul"), "a\0b\0", "value with NULs")
            try await store.set("n\0", "with NUL")
            try await store.set("n", "without")
            try await store.set("n\0\0", "two NULs")
            try context.expectBytes(try await store.get("n\0"), "with NUL", "get(\"n\\0\")")
            try context.expectBytes(try await store.get("n"), "without", "get(\"n\")")
            try context.expectKeys(try await store.keys("n\0"), ["n\0", "n\0\0"], "keys(\"n\\0\")")
            try await store.delete("n\0")
            try context.expectBytes(try await store.get("n"), "without", "get(\"n\") after delete(\"n\\0\")")
            try context.expectBytes(try await store.get("n\0\0"), "two NULs", "get(\"n\\0\\0\") after delete(\"n\\0\")")
        },
        ConformanceCheck("valuesKeepTheirBytes", "A value reads back with exactly the UTF-8 bytes it was written with.")
        {
            context in
            let store = try await context.makeStore().store
            let values = [
                "plain", OfflineStoreConformance.decomposed, OfflineStoreConformance.precomposed, "😀👍🏽", "\u{FEFF}bom",
                "line\nbreak\r\n", #"{"json":[1,2,"é"]}"#, String(repeating: "x", count: 4_096),
            ]
            for (index, value) in values.enumerated() { try await store.set("v\(index)", value) }
            for (index, value) in values.enumerated() {
                try context.expectBytes(try await store.get("v\(index)"), value, "get(v\(index))")
            }
        },
        ConformanceCheck(
            "withValueSeesTheBytesGetReturns",
            "withValue hands its body the bytes get returns; nil for a missing key; a bad key throws .invalidKey."
        ) { context in
            let store = try await context.makeStore().store
            let values = ["", "a\0b", OfflineStoreConformance.decomposed, "😀", String(repeating: "y", count: 2_000)]
            for (index, value) in values.enumerated() { try await store.set("w\(index)", value) }
            for (index, value) in values.enumerated() {
                let bytes = try await store.withValue("w\(index)") { Array($0) }
                try context.expect(bytes == Array(value.utf8), "withValue(w\(index)) gave \(bytes?.count ?? -1) bytes")
            }
            let missing = try await store.withValue("missing") { _ in true }
            try context.expect(missing == nil, "withValue of a missing key called its body")
            try await context.expectError(.invalidKey, "withValue(\"\")") {
                _ = try await store.withValue("") { _ in true }
            }
        },
        ConformanceCheck("setReplaces", "set replaces the value; the key is listed once.") { context in
            let store = try await context.makeStore().store
            try await store.set("k", "first")
            try await store.set("k", "second, longer than the first")
            try await store.set("k", "3")
            try context.expectBytes(try await store.get("k"), "3", "get after three sets")
            try context.expectKeys(try await store.keys(""), ["k"], "keys after three sets")
        },
        ConformanceCheck("largeValues", "8 MiB values are stored and read back whole.") { context in
            let store = try await context.makeStore().store
            let unit = "0123456789abcdef😀é"  // 16 ASCII + 4 + 2 bytes: crosses every boundary
            let large = String(repeating: unit, count: 8 * 1_024 * 1_024 / unit.utf8.count + 1)
            try context.expect(large.utf8.count >= 8 * 1_024 * 1_024, "test value is at least 8 MiB")
            try await store.set("large", large)
            try await store.write([.set(key: "large2", value: large), .set(key: "small", value: "s")])
            try context.expectBytes(try await store.get("large"), large, "get(8 MiB value)")
            try context.expectBytes(try await store.get("large2"), large, "get(8 MiB value written in a batch)")
            let entries = try await store.entries("large", after: nil, limit: 2)
            try context.expect(
                entries.count == 2 && entries.allSatisfy { $0.value.utf8.elementsEqual(large.utf8) },
                "entries return the 8 MiB values whole")
        },
    ]
}
