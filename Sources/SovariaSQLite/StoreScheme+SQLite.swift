import Foundation
import Sovaria

extension StoreScheme {
    /// ``SQLiteOfflineStore`` in a database file: `sqlite:PATH[?durability=flushed]`.
    public static let sqlite = engine("sqlite", product: "SovariaSQLite", location: .required) { url in
        try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: url.location), durability: url.durability)
    }
}
