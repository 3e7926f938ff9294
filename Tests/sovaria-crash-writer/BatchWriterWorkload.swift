import Foundation
import Sovaria

/// The writer half of the cross-process batch test (`batches-<engine>`): applies `count`
/// three-key batches `x = i, y = i, z<i % 50> = i` for i = 1 … count to a store another
/// process reads meanwhile, then exits with status 0. Every value is a zero-padded number, so
/// the reader can tell which batch it came from.
enum BatchWriterWorkload {
    static let enginePrefix = "batches-"

    static func run(engine: String, location: String, durability: Durability, count: Int) async {
        do {
            let store = try await CrashStores.open(engine, location: location, durability: durability)
            for index in 1...max(1, count) {
                let value = value(index)
                try await store.write([
                    .set(key: "x", value: value), .set(key: "y", value: value),
                    .set(key: "z" + String(format: "%02d", index % 50), value: value),
                ])
            }
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("batches: \(error)\n".utf8))
            exit(1)
        }
    }

    static func value(_ index: Int) -> String { String(format: "%08d", index) }
}
