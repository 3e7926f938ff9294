import Foundation
import Sovaria

extension StoreScheme {
    /// ``LMDBOfflineStore`` in a folder: `lmdb:DIR[?durability=flushed]`.
    public static let lmdb = engine("lmdb", product: "SovariaLMDB", location: .required) { url in
        try LMDBOfflineStore(
            directory: URL(fileURLWithPath: url.location, isDirectory: true), durability: url.durability)
    }
}
