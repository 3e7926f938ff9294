import Foundation
import Sovaria

extension OfflineStoreConformance {
    static let borrowedScanChecks: [ConformanceCheck] = [
        ConformanceCheck(
            "borrowedScanMatchesDataEntries",
            "withEntries(prefix, after:, limit:) hands the same keys and bytes as dataEntries, page by page and in "
                + "byte order, and says whether more may follow; forEachEntry reads them all; limit 0, an unused "
                + "prefix and an `after` past the prefix give an empty page."
        ) { context in
            let store = try await context.makeStore().store
            let keys = (0..<23).map { "w:\(String($0 * 37 % 23, radix: 5))" } + ["w", "v:1", "x:1", "w;", "w:é"]
            for key in keys.shuffled() { try await store.set(key, String(repeating: key, count: key.count % 4)) }
            for limit in [1, 4, 24, 100] {
                var after: String?
                var pages = 0
                while true {
                    let expected = try await store.dataEntries("w:", after: after, limit: limit)
                    var seen: [(key: String, bytes: [UInt8])] = []
                    let page = try await store.withEntries("w:", after: after, limit: limit) { key, value in
                        seen.append((String(decoding: key, as: UTF8.self), Array(value)))
                        return true
                    }
                    try context.expectKeys(
                        seen.map(\.key), expected.map(\.key), "withEntries keys after \(after ?? "nil"), limit \(limit)"
                    )
                    for (entry, wanted) in zip(seen, expected) {
                        try context.expectData(wanted.data, entry.bytes, "withEntries value of \(entry.key)")
                    }
                    try context.expect(
                        page.count == seen.count, "the page counts \(page.count) entries, the body saw \(seen.count)")
                    try context.expectBytes(page.lastKey, seen.last?.key, "the page's lastKey")
                    try context.expect(
                        page.mayHaveMore == (seen.count == limit),
                        "mayHaveMore is \(page.mayHaveMore) for a page of \(seen.count) with limit \(limit)")
                    guard page.mayHaveMore else { break }
                    after = page.lastKey
                    pages += 1
                    try context.expect(pages <= 24, "24 entries take at most 24 pages")
                }
            }
            var all: [String] = []
            let total = try await store.forEachEntry("w:", pageSize: 5) { key, _ in
                all.append(String(decoding: key, as: UTF8.self))
                return true
            }
            let expected = byteSorted(keys.filter { StoreKey.hasBytePrefix($0, "w:") })
            try context.expectKeys(all, expected, "forEachEntry(\"w:\") in pages of 5")
            try context.expect(total == expected.count, "forEachEntry counts \(total), expected \(expected.count)")
            for (prefix, after, limit, what) in [
                ("w:", nil as String?, 0, "limit 0"), ("zz", nil, 5, "an unused prefix"),
                ("w:", "w;", 5, "after past the prefix"),
            ] {
                var called = false
                let page = try await store.withEntries(prefix, after: after, limit: limit) { _, _ in
                    called = true
                    return true
                }
                try context.expect(!called && page == .empty, "\(what) hands nothing, got \(page)")
            }
        },
        ConformanceCheck(
            "borrowedScanStopsWhenTheBodySays",
            "withEntries stops at the entry whose body returns false: no entry after it is handed over, the page "
                + "ends at it and says nothing more follows; the next page starts after it."
        ) { context in
            let store = try await context.makeStore().store
            let keys = (0..<10).map { "s:\($0)" }
            try await store.write(keys.map { .set(key: $0, value: "v" + $0) })
            var seen: [String] = []
            let page = try await store.withEntries("s:", after: nil, limit: 8) { key, _ in
                seen.append(String(decoding: key, as: UTF8.self))
                return seen.count < 3
            }
            try context.expectKeys(seen, Array(keys[..<3]), "the entries handed over before the body stopped")
            try context.expect(
                page == StoreScanPage(count: 3, lastKey: "s:2", mayHaveMore: false),
                "a page stopped at its third entry, got \(page)")
            var atLimit = 0
            let stoppedAtLimit = try await store.withEntries("s:", after: nil, limit: 3) { _, _ in
                atLimit += 1
                return atLimit < 3
            }
            try context.expect(
                stoppedAtLimit == StoreScanPage(count: 3, lastKey: "s:2", mayHaveMore: false),
                "a page whose body stops at its last entry says nothing more follows, got \(stoppedAtLimit)")
            var rest: [String] = []
            _ = try await store.withEntries("s:", after: page.lastKey, limit: 100) { key, _ in
                rest.append(String(decoding: key, as: UTF8.self))
                return true
            }
            try context.expectKeys(rest, Array(keys[3...]), "the page after the one that stopped")
            var count = 0
            let stopped = try await store.forEachEntry("s:", pageSize: 2) { _, _ in
                count += 1
                return count < 5
            }
            try context.expect(stopped == 5 && count == 5, "forEachEntry stops at the 5th entry, counted \(stopped)")
        },
        ConformanceCheck(
            "borrowedScanPagesAcrossWrites",
            "Pages of withEntries read between writes show each write after the last page's key, and none of the "
                + "keys before it twice, over pages of 1,100 entries (past any inline bound)."
        ) { context in
            let store = try await context.makeStore().store
            let keys = (0..<2_000).map { "g:" + String(repeating: "0", count: 4 - String($0).count) + "\($0)" }
            try await store.write(keys.map { .set(key: $0, value: "first") })
            var seen: [String: [UInt8]] = [:]
            var order: [String] = []
            func read(after: String?) async throws -> StoreScanPage {
                try await store.withEntries("g:", after: after, limit: 1_100) { key, value in
                    let name = String(decoding: key, as: UTF8.self)
                    order.append(name)
                    seen[name] = Array(value)
                    return true
                }
            }
            let first = try await read(after: nil)
            try context.expect(
                first.mayHaveMore && first.lastKey == keys[1_099], "the first page ends at the 1,100th key")
            // Behind the cursor: never read again. Ahead of it: read as written now.
            try await store.write([
                .set(key: keys[10], value: "changed behind"), .delete(key: keys[1_500]),
                .set(key: keys[1_800], value: "changed ahead"), .set(key: "g:1500a", value: "new ahead"),
            ])
            let second = try await read(after: first.lastKey)
            try context.expect(!second.mayHaveMore, "the second page reads the rest, got \(second)")
            let expected = Array(keys[..<1_500]) + ["g:1500a"] + Array(keys[1_501...])
            try context.expectKeys(order, expected, "the keys of both pages")
            try context.expectData(
                seen[keys[10]].map { Data($0) }, Array("first".utf8), "a key changed behind the cursor, read before")
            try context.expectData(
                seen[keys[1_800]].map { Data($0) }, Array("changed ahead".utf8), "a key changed ahead of the cursor")
        },
        ConformanceCheck(
            "borrowedScanHandsBytesAsStored",
            "withEntries hands values as the bytes stored: empty, NULs and, on a store with .byteValues, bytes that "
                + "are not UTF-8 (no string is made of them, so nothing throws .notUTF8)."
        ) { context in
            let store = try await context.makeStore().store
            var values: [[UInt8]] = [[], [0, 0x61, 0], Array("é\u{301}😀".utf8)]
            if store.capabilities.contains(.byteValues) { values += notUTF8.map(\.bytes) }
            let keys = values.indices.map { "n:\($0)" }
            for (key, value) in zip(keys, values) { try await store.set(key, data: Data(value)) }
            var seen: [[UInt8]] = []
            _ = try await store.withEntries("n:", after: nil, limit: 100) { _, value in
                seen.append(Array(value))
                return true
            }
            try context.expect(seen == values, "withEntries handed \(seen), expected \(values)")
        },
        ConformanceCheck(
            "borrowedScanRethrowsTheBodysError",
            "An error the body of withEntries throws ends the scan and comes out as it is; the store then reads, "
                + "writes and scans as before (no read left open)."
        ) { context in
            let store = try await context.makeStore().store
            try await store.write((0..<6).map { .set(key: "t:\($0)", value: "v\($0)") })
            struct Refused: Error {}
            var calls = 0
            do {
                _ = try await store.withEntries("t:", after: nil, limit: 10) { _, _ in
                    calls += 1
                    if calls == 2 { throw Refused() }
                    return true
                }
                try context.expect(false, "withEntries returned although its body threw")
            } catch is Refused {
                try context.expect(
                    calls == 2, "the body ran \(calls) times, expected 2: the scan goes on after a throw")
            }
            for round in 0..<3 {
                try await store.set("t:\(round)", "after \(round)")
                try context.expectBytes(try await store.get("t:\(round)"), "after \(round)", "a get after a throw")
                var count = 0
                _ = try await store.withEntries("t:", after: nil, limit: 10) { _, _ in
                    count += 1
                    return true
                }
                try context.expect(count == 6, "a scan after a throw sees 6 entries, got \(count)")
            }
        },
        ConformanceCheck(
            "borrowedKeyScanMatchesKeys",
            "withKeys(prefix, after:, limit:) hands the keys keys(prefix) lists, page by page in byte order, stops when "
                + "its body says so or throws (the error comes out as it is), and forEachKey reads them all."
        ) { context in
            let store = try await context.makeStore().store
            let keys = (0..<1_150).map { "k:" + String($0 * 7 % 1_150, radix: 16) } + ["k", "j:1", "l:1", "k;", "k:é"]
            try await store.write(keys.map { .set(key: $0, value: String(repeating: "v", count: 200)) })
            let expected = try await store.keys("k:")
            try context.expectKeys(
                expected, byteSorted(keys.filter { StoreKey.hasBytePrefix($0, "k:") }), "keys(\"k:\")")
            for limit in [7, 1_100] {
                var seen: [String] = []
                var after: String?
                while true {
                    var page: [String] = []
                    let read = try await store.withKeys("k:", after: after, limit: limit) { key in
                        page.append(String(decoding: key, as: UTF8.self))
                        return true
                    }
                    try context.expect(
                        page.count <= limit, "a page of withKeys holds at most \(limit), got \(page.count)")
                    try context.expect(
                        read.count == page.count && read.lastKey == page.last
                            && read.mayHaveMore == (page.count == limit),
                        "the page says \(read) for \(page.count) keys with limit \(limit)")
                    seen += page
                    guard read.mayHaveMore else { break }
                    after = read.lastKey
                }
                try context.expectKeys(seen, expected, "withKeys in pages of \(limit)")
            }
            var all: [String] = []
            try context.expect(
                try await store.forEachKey("k:", pageSize: 100) { key in
                    all.append(String(decoding: key, as: UTF8.self))
                    return true
                } == expected.count, "forEachKey counts every key")
            try context.expectKeys(all, expected, "forEachKey(\"k:\")")
            var stoppedAt: [String] = []
            let stopped = try await store.withKeys("k:", after: expected[10], limit: 50) { key in
                stoppedAt.append(String(decoding: key, as: UTF8.self))
                return stoppedAt.count < 4
            }
            try context.expectKeys(
                stoppedAt, Array(expected[11..<15]), "withKeys after the 11th key, stopped at the 4th")
            try context.expect(!stopped.mayHaveMore && stopped.lastKey == expected[14], "a stopped page: \(stopped)")
            struct Refused: Error {}
            var calls = 0
            do {
                _ = try await store.withKeys("k:", after: nil, limit: 10) { _ in
                    calls += 1
                    if calls == 3 { throw Refused() }
                    return true
                }
                try context.expect(false, "withKeys returned although its body threw")
            } catch is Refused {
                try context.expect(calls == 3, "the body ran \(calls) times after throwing at the 3rd key")
            }
            try context.expectBytes(
                try await store.get("k:0"), String(repeating: "v", count: 200), "a get after a throw")
            var none = true
            for (prefix, after, limit) in [("k:", nil as String?, 0), ("zz", nil, 5), ("k:", "k;", 5)] {
                let page = try await store.withKeys(prefix, after: after, limit: limit) { _ in
                    none = false
                    return true
                }
                try context.expect(
                    none && page == .empty, "withKeys(\(prefix), after: \(after ?? "nil"), limit: \(limit)) is empty")
            }
        },
    ]
}
