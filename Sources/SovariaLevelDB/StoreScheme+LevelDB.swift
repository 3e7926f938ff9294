import Foundation
import Sovaria

extension StoreScheme {
    /// ``LevelDBOfflineStore`` in a folder: `leveldb:DIR[?durability=flushed]`.
    public static let leveldb = engine("leveldb", product: "SovariaLevelDB", location: .required) { url in
        try LevelDBOfflineStore(
            directory: URL(fileURLWithPath: url.location, isDirectory: true), durability: url.durability)
    }
}
