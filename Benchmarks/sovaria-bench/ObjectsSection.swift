import Foundation
import Sovaria
import SovariaObjects

/// Section: 10,000 small Codable objects inserted and read through `ObjectStore`, against a loop
/// written by hand on the same engine in the same run (`JSONEncoder` + `set(_:data:)`, `data(_:)`
/// + `JSONDecoder`, `dataEntries` pages + `JSONDecoder`): the ratio is what the object layer costs.
struct ObjectsSection {
    let options: BenchOptions
    let progress: Progress

    /// The object measured: an id, a title, three numbers and a date.
    struct Item: Codable, Sendable, Identifiable {
        var id: String
        var title: String
        var rank: Int
        var views: Int
        var likes: Int
        var updated: Date
    }

    func run() async throws -> [Measurement] {
        var rows: [Measurement] = []
        let stopwatch = Stopwatch(repeats: options.repeats)
        let section = BenchSection.objects.rawValue
        for engine in BenchEngines.plain where options.runs(engine: engine.name) {
            let count =
                engine.maxKeys.map(options.limit)
                ?? min(options.keyCount, options.pick(quick: 2_000, standard: 10_000, full: 10_000))
            progress.update("objects: \(engine.name), \(count) objects")
            let folder = options.folder.appendingPathComponent("objects-\(engine.name)", isDirectory: true)
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let store = try await engine.open(folder, .flushed)
            let items = (0..<count).map {
                Item(
                    id: String(format: "item-%06d", $0), title: "Item number \($0)", rank: $0, views: $0 * 7,
                    likes: $0 % 13, updated: Date(timeIntervalSince1970: 1_800_000_000 + Double($0)))
            }
            let objects = ObjectStore<Item>(store: store, collection: "bench")
            let rawPrefix = "app:bench:"
            let order = (0..<count).shuffled()
            // What a hand-written loop does: one encoder and one decoder for every call.
            let encoder = JSONEncoder()
            let decoder = JSONDecoder()

            let rawInsert = try await stopwatch.measure(calls: count) { _, call in
                let item = items[call]
                try await store.set(rawPrefix + item.id, data: try encoder.encode(item))
            }
            let objectInsert = try await stopwatch.measure(calls: count) { _, call in
                try await objects.insert(items[call])
            }
            let rawRead = try await stopwatch.measure(calls: count) { _, call in
                let data = try await store.data(rawPrefix + items[order[call]].id)
                _ = try decoder.decode(Item.self, from: data ?? Data())
            }
            let objectRead = try await stopwatch.measure(calls: count) { _, call in
                _ = try await objects.object(items[order[call]].id)
            }
            let rawScan = try await stopwatch.measure(calls: 1, itemsPerCall: count) { _, _ in
                var after: String?
                var read = 0
                repeat {
                    let page = try await store.dataEntries(rawPrefix, after: after, limit: 500)
                    for entry in page { _ = try decoder.decode(Item.self, from: entry.data) }
                    read += page.count
                    after = page.count == 500 ? page.last?.key : nil
                } while after != nil
                precondition(read == count, "the hand-written scan read \(read) of \(count)")
            }
            let objectScan = try await stopwatch.measure(calls: 1, itemsPerCall: count) { _, _ in
                let all = try await objects.objects()
                precondition(all.count == count, "objects() read \(all.count) of \(count)")
            }
            for (operation, raw, layered) in [
                ("insert", rawInsert, objectInsert), ("read by id", rawRead, objectRead),
                ("read all (pages of 500)", rawScan, objectScan),
            ] {
                let baseline = raw.measurement(
                    section: section, subject: engine.name, variant: "hand-written JSON", operation: operation)
                var row = layered.measurement(
                    section: section, subject: engine.name, variant: "ObjectStore", operation: operation)
                row.ratio = row.p50Nanoseconds / max(1, baseline.p50Nanoseconds)
                row.meanRatio = layered.median / max(1, raw.median)
                row.baseline = "hand-written JSON"
                rows += [baseline, row]
            }
            try? FileManager.default.removeItem(at: folder)
        }
        return rows
    }
}
