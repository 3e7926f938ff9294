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
        ConformanceCheck(
            "scansFollowChangesBetweenThem",
            "keys(_:) and entries list exactly what the writes made, whatever the mix of sets, deletes and batches "
                + "between two scans: one change or eighty, pages small and past 256 entries or 128 KiB."
        ) { context in
            let store = try await context.makeStore().store
            let seed = UInt64.random(in: 1...UInt64.max)
            var random = SplitMix(seed: seed)
            var model: [String: String] = [:]
            func key() -> String { "mix:\(String(random.next() % 400, radix: 36))" }
            for round in 0..<40 {
                // A burst of changes: alone or as one batch, new keys and known ones, a few deletes.
                var burst: [StoreWrite] = []
                for _ in 0..<(1 + Int(random.next() % 80)) {
                    let chosen = key()
                    if random.next() % 5 == 0 {
                        burst.append(.delete(key: chosen))
                        model[chosen] = nil
                    } else {
                        let value = String(repeating: "v", count: 1 + Int(random.next() % 900)) + "\(round)"
                        burst.append(.set(key: chosen, value: value))
                        model[chosen] = value
                    }
                }
                if random.next() % 2 == 0 {
                    try await store.write(burst)
                } else {
                    for write in burst {
                        switch write {
                        case .set(let key, let value): try await store.set(key, value)
                        case .setData(let key, let data): try await store.set(key, data: data)
                        case .delete(let key): try await store.delete(key)
                        }
                    }
                }
                let expected = byteSorted(Array(model.keys))
                let shown = "seed \(seed), round \(round)"
                if random.next() % 3 == 0 {
                    try context.expectKeys(try await store.keys("mix:"), expected, "\(shown): keys(\"mix:\")")
                    continue
                }
                let after = random.next() % 4 == 0 ? nil : key()
                let limit = 1 + Int(random.next() % 400)
                let page = try await store.entries("mix:", after: after, limit: limit)
                let want = Array(
                    expected.filter { stored in after.map { $0.utf8.lexicographicallyPrecedes(stored.utf8) } ?? true }
                        .prefix(limit))
                try context.expectKeys(
                    page.map(\.key), want, "\(shown): entries after \(after ?? "nil"), limit \(limit)")
                for entry in page where entry.value != model[entry.key] {
                    throw context.failure("\(shown): \(entry.key) holds another value than its last write")
                }
            }
        },
    ]
}
