import Sovaria

extension OfflineStoreConformance {
    static let scanChecks: [ConformanceCheck] = [
        ConformanceCheck(
            "entriesPageInOrder",
            "entries(prefix, after:, limit:) pages through a prefix in byte order with the right values."
        ) { context in
            let store = try await context.makeStore().store
            let keys = (0..<25).map { "p:\(String($0, radix: 7))" } + ["p", "o:1", "q:1", "p;"]
            for key in keys.shuffled() { try await store.set(key, "value of " + key) }
            let expected = byteSorted(keys.filter { StoreKey.hasBytePrefix($0, "p:") })

            var paged: [StoreEntry] = []
            var after: String?
            var pages = 0
            while true {
                let page = try await store.entries("p:", after: after, limit: 10)
                try context.expect(page.count <= 10, "a page holds at most `limit` entries, got \(page.count)")
                guard let last = page.last else { break }
                paged += page
                after = last.key
                pages += 1
                try context.expect(pages <= 3, "25 entries in pages of 10 take 3 pages")
            }
            try context.expectKeys(paged.map(\.key), expected, "keys of all pages")
            for entry in paged {
                try context.expectBytes(entry.value, "value of " + entry.key, "value of \(entry.key)")
            }
            try context.expectKeys(try await store.keys("p:"), expected, "keys(\"p:\")")

            let middle = try await store.entries("p:", after: "p:1~", limit: 100)
            try context.expectKeys(
                middle.map(\.key), expected.filter { "p:1~".utf8.lexicographicallyPrecedes($0.utf8) },
                "entries after a key that is not stored")
            try context.expect(try await store.entries("p:", after: nil, limit: 0).isEmpty, "limit 0 gives no entries")
            try context.expect(
                try await store.entries("p:", after: "p;", limit: 5).isEmpty, "after past the prefix gives no entries")
            try context.expect(
                try await store.entries("zz", after: nil, limit: 5).isEmpty, "an unused prefix gives none")
            let all = try await store.entries("", after: nil, limit: 1_000)
            try context.expectKeys(all.map(\.key), byteSorted(keys), "entries(\"\") lists every key")
        },
        ConformanceCheck(
            "longScansAreWhole",
            "keys(_:) and entries list every one of 1,100 keys, past any batch size a store reads in at once."
        ) { context in
            let store = try await context.makeStore().store
            let keys = (0..<1_100).map { "long:\(String(repeating: "0", count: 4 - String($0).count))\($0)" }
            for half in [keys[..<550], keys[550...]] {
                try await store.write(half.map { .set(key: $0, value: "v") })
            }
            try await store.set("long;", "outside the prefix")
            try context.expectKeys(try await store.keys("long:"), keys, "keys(\"long:\")")
            let page = try await store.entries("long:", after: "long:0099", limit: 1_050)
            try context.expectKeys(page.map(\.key), Array(keys[100...]), "a page of 1,050 after the 100th key")
        },
    ]
}
