import Foundation
import Sovaria
import SovariaCache
import SovariaSQLite
import Testing

/// `sovaria inspect` on a store the query cache wrote: the oldest and newest list by server time.
@Suite struct InspectCommandTests {
    /// A SQLite store holding three lists put by a real ``QueryCache``, in an order unlike their
    /// server times; the store is released before the command opens it.
    private func storeWithLists(in folder: Fixtures.Folder) async throws -> String {
        let path = folder.file("cache.sqlite")
        let store = try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: path))
        let cache = try await QueryCache(store: store)
        try await cache.put("todos?owner=eq.bob", body: "[2]", serverTime: Date(timeIntervalSince1970: 1_700_000_500))
        try await cache.put("todos?owner=eq.ann", body: "[1,1]", serverTime: Date(timeIntervalSince1970: 1_700_000_000))
        try await cache.put("notes?id=eq.7", body: "[3,3,3]", serverTime: Date(timeIntervalSince1970: 1_700_000_900.25))
        return "sqlite:" + path
    }

    @Test func namesTheOldestAndNewestCachedListByServerTime() async throws {
        let folder = try Fixtures.Folder()
        let url = try await storeWithLists(in: folder)
        let run = try await CommandRunner.run(["inspect", url, "--json"])
        #expect(run.status == 0, "\(run.errors)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        #expect(report["cacheEntries"] as? Int == 3)
        #expect(report["oldestCachedQuery"] as? String == "todos?owner=eq.ann")
        #expect(report["oldestCachedServerTime"] as? String == "2023-11-14T22:13:20.000Z")
        #expect(report["oldestCachedBytes"] as? Int == 5)
        #expect(report["newestCachedQuery"] as? String == "notes?id=eq.7")
        #expect(report["newestCachedServerTime"] as? String == "2023-11-14T22:28:20.250Z")

        let text = try await CommandRunner.run(["inspect", url])
        #expect(text.status == 0)
        #expect(text.output.contains("oldest  2023-11-14T22:13:20.000Z  5 bytes  todos?owner=eq.ann"), "\(text.output)")
        #expect(text.output.contains("newest  2023-11-14T22:28:20.250Z  7 bytes  notes?id=eq.7"))
    }
}
