import Sovaria
import SovariaPlumbing

/// The name of a cached file: the first 128 bits of SHA-256 over its key's UTF-8 bytes, written as
/// 32 lowercase hex digits in `files/` and in the metadata key (see ``HexID``).
typealias FileID = HexID

extension FileID {
    /// The id of a cache key.
    init(of key: String) {
        let digest = SHA256.digest(Array(key.utf8))
        self.init(
            high: digest[0..<8].reduce(0) { $0 << 8 | UInt64($1) },
            low: digest[8..<16].reduce(0) { $0 << 8 | UInt64($1) })
    }
}
