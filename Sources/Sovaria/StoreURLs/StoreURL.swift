/// A store named by one line of configuration: `ENGINE:WHERE?durability=flushed`, optionally
/// wrapped (`encrypted+ENGINE:…`).
///
/// The grammar the `sovaria` command, `sovaria-bench` and apps share; ``OfflineStores`` opens
/// one. Parsing checks the form only (the engine's name, its options); whether the engine is
/// linked into the app is checked by ``OfflineStores/open(_:using:secrets:)-(StoreURL,_,_)``.
///
/// ```
/// memory:                                   a store in this process's memory
/// file:/var/lib/app/store                   FileOfflineStore in that folder
/// sqlite:/var/lib/app/offline.sqlite        SQLiteOfflineStore in that database file
/// lmdb:/var/lib/app/lmdb                    LMDBOfflineStore in that folder
/// leveldb:/var/lib/app/leveldb              LevelDBOfflineStore in that folder
/// postgres:host=db dbname=app               PostgresOfflineStore (libpq conninfo or postgresql:// URL)
/// encrypted+sqlite:/var/lib/app/x.sqlite    any of them, values encrypted (EncryptedOfflineStore)
/// checksummed+file:/var/lib/app/store       any of them, values checksummed (ChecksummedOfflineStore)
/// ```
///
/// After `?`: `durability=synced|flushed` (default synced) on every persistent engine, and the
/// options an engine or wrapper names (postgres `table=NAME`, encrypted `key-file=PATH`).
/// A location may be percent-encoded (`%3F` for a `?` in a path, `%25` for `%`) and written
/// `file://`-style: `sqlite:///var/lib/app/offline.sqlite` is `/var/lib/app/offline.sqlite`.
/// A PostgreSQL location is libpq's own text, passed on unchanged: a `postgresql://` URL keeps its
/// own `?sslmode=…` parameters and percent-encoding.
///
/// ```swift
/// let url = try StoreURL("sqlite:/var/lib/app/offline.sqlite?durability=flushed")
/// url.engine      // "sqlite"
/// url.location    // "/var/lib/app/offline.sqlite"
/// url.durability  // .flushed
/// ```
public struct StoreURL: Hashable, Sendable, CustomStringConvertible {
    /// The engine's scheme, lowercased: `memory`, `file`, `sqlite`, `lmdb`, `leveldb`, `postgres`,
    /// or one an app registered (``StoreScheme``).
    public var engine: String
    /// The wrappers around the engine, outermost first (`encrypted+checksummed+sqlite:` is
    /// `["encrypted", "checksummed"]`).
    public var wrappers: [String]
    /// The folder, file or conninfo after the scheme's colon, percent-decoded; empty for memory.
    public var location: String
    /// The durability writes get. Default: `.synced`.
    public var durability: Durability
    /// The other options after `?`, by name (`table`, `key-file`, …), percent-decoded.
    public var options: [String: String]

    /// The option every persistent engine takes.
    public static let durabilityOption = "durability"

    /// A URL made of its parts.
    public init(
        engine: String, location: String = "", durability: Durability = .synced, wrappers: [String] = [],
        options: [String: String] = [:]
    ) {
        self.engine = engine.lowercased()
        self.location = location
        self.durability = durability
        self.wrappers = wrappers.map { $0.lowercased() }
        self.options = options
    }

    /// Parses `text`.
    ///
    /// - Throws: ``StoreURLError`` naming the part of `text` that is wrong; its description
    ///   lists the forms a store URL takes.
    public init(_ text: String) throws(StoreURLError) {
        self = try StoreURLParser(text: text).parse()
    }

    /// The URL in its canonical form, percent-encoding what would not parse back: parsing it
    /// gives an equal value.
    public var description: String {
        var text = (wrappers + [engine]).joined(separator: "+") + ":"
        // A location the scheme takes as written (a conninfo) is written as it is; the others are
        // percent-decoded when parsed, so they are encoded here.
        if OfflineStores.registeredSchemes[engine]?.location == .optional {
            text += location
        } else {
            // `file://…` is read as a file:// URL: a location that starts so keeps its own slashes.
            text += (location.hasPrefix("//") ? "//" : "") + Self.encoded(location)
        }
        var query: [String] = durability == .flushed ? ["durability=flushed"] : []
        query += options.sorted { $0.key < $1.key }.map { "\(Self.encoded($0.key))=\(Self.encoded($0.value))" }
        if !query.isEmpty { text += "?" + query.joined(separator: "&") }
        return text
    }

    /// Every form a store URL takes, for messages and `--help`.
    public static let forms = """
        Store URLs:
          memory:                      an empty store in this process's memory
          file:DIR                     FileOfflineStore in the folder DIR
          sqlite:PATH                  SQLiteOfflineStore in the database file PATH
          lmdb:DIR                     LMDBOfflineStore in the folder DIR
          leveldb:DIR                  LevelDBOfflineStore in the folder DIR
          postgres:CONNINFO            PostgresOfflineStore (libpq conninfo or postgresql:// URL), table sovaria_kv
          encrypted+ENGINE:…           any of the above, values encrypted (EncryptedOfflineStore); key from
                                       key-file=FILE (32 raw bytes; the sovaria command also takes
                                       --key-file) or the passphrase in SOVARIA_PASSPHRASE
          checksummed+ENGINE:…         any of the above, values checksummed (ChecksummedOfflineStore)
        Options after `?`: durability=synced|flushed (default synced); postgres also table=NAME and
        read=primary|standby-if-caught-up|any-standby (CONNINFO then names the primary and its standbys).
        Paths may be percent-encoded (%3F for ?) or file://-style (sqlite:///var/lib/app/offline.sqlite).
        Example: encrypted+sqlite:/var/lib/app/offline.sqlite?durability=flushed
        """

    /// `text` with `%`, `?`, `&`, `=`, `#`, spaces and control characters percent-encoded
    /// (other characters, non-ASCII ones included, kept as they are).
    static func encoded(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            if scalar.isASCII, scalar.value < 0x21 || scalar.value == 0x7F || "%?&=#".unicodeScalars.contains(scalar) {
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "%" + (hex.count == 1 ? "0" + hex : hex)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
