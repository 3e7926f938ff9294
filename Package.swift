// swift-tools-version:6.0
import PackageDescription

/// Sovaria: offline-first storage for Swift, one key/value protocol over several engines.
///
/// Only the engine modules import C. An app that wants SQLite links `Sovaria` and `SovariaSQLite`, and
/// `SovariaCache` for the query cache. The benchmarks are a package of their own (`Benchmarks/Package.swift`).
let package = Package(
    name: "Sovaria",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        // In layers, as the targets below: the protocol, the engines, the logic written once, sync,
        // PostgREST, HTTP.
        .library(name: "Sovaria", targets: ["Sovaria"]),
        .library(name: "SovariaSQLite", targets: ["SovariaSQLite"]),
        .library(name: "SovariaLMDB", targets: ["SovariaLMDB"]),
        .library(name: "SovariaLevelDB", targets: ["SovariaLevelDB"]),
        .library(name: "SovariaPostgres", targets: ["SovariaPostgres"]),
        .library(name: "SovariaSodium", targets: ["SovariaSodium"]),
        .library(name: "SovariaTestKit", targets: ["SovariaTestKit"]),
        .library(name: "SovariaCache", targets: ["SovariaCache"]),
        .library(name: "SovariaQueue", targets: ["SovariaQueue"]),
        .library(name: "SovariaFiles", targets: ["SovariaFiles"]),
        .library(name: "SovariaObjects", targets: ["SovariaObjects"]),
        .library(name: "SovariaSync", targets: ["SovariaSync"]),
        .library(name: "SovariaPostgREST", targets: ["SovariaPostgREST"]),
        .library(name: "SovariaHTTP", targets: ["SovariaHTTP"]),
        .executable(name: "sovaria", targets: ["sovaria"]),
        // Test equipment, not for apps: the throwaway PostgreSQL cluster and the REST test server,
        // a product only so the Benchmarks package (Benchmarks/Package.swift) can start them too.
        .library(name: "SovariaTestServers", targets: ["SovariaTestServers"]),
    ],
    targets: [
        // System libraries, from the OS: `libsqlite3-dev liblmdb-dev libleveldb-dev libsodium-dev`.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // Debian ships no pkg-config file for LevelDB; the module map links "leveldb" by name.
        .systemLibrary(
            name: "CLevelDB",
            providers: [.apt(["libleveldb-dev"]), .brew(["leveldb"])]
        ),
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        // libpq, PostgreSQL's client library (the server is not needed to build).
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),

        // The layers, bottom up; no module reaches up.
        // 0. Plumbing every layer shares (locks, gates, group commit, hashing, the lock order):
        //    not a product, so none of it is part of the API. Members are `package`; a type whose
        //    `@inlinable` members other modules inline is `public` (Swift does not inline those of
        //    a `package` type across modules; `make lint` checks it).
        .target(name: "SovariaPlumbing"),
        // 1. The protocol, the memory and file stores, migration, store URLs.
        .target(name: "Sovaria", dependencies: ["SovariaPlumbing"]),
        // 2. The engines: one module each, the only ones that import C.
        .target(name: "SovariaSQLite", dependencies: ["SovariaPlumbing", "Sovaria", "CSQLite"]),
        .target(name: "SovariaLMDB", dependencies: ["SovariaPlumbing", "Sovaria", "CLMDB"]),
        .target(name: "SovariaLevelDB", dependencies: ["SovariaPlumbing", "Sovaria", "CLevelDB"]),
        // One table shared by many processes and machines, over libpq.
        .target(name: "SovariaPostgres", dependencies: ["SovariaPlumbing", "Sovaria", "CLibPQ"]),
        // Encryption around any store.
        .target(name: "SovariaSodium", dependencies: ["SovariaPlumbing", "Sovaria", "CSodium"]),
        // The conformance suite every store runs.
        .target(name: "SovariaTestKit", dependencies: ["SovariaPlumbing", "Sovaria"]),
        // 3. The logic written once, against `OfflineStore` only, so it runs on every engine: the
        //    query cache, the durable write queue and the rejected list, the file cache, Codable objects.
        .target(name: "SovariaCache", dependencies: ["SovariaPlumbing", "Sovaria"]),
        .target(name: "SovariaQueue", dependencies: ["SovariaPlumbing", "Sovaria"]),
        .target(name: "SovariaFiles", dependencies: ["SovariaPlumbing", "Sovaria"]),
        .target(name: "SovariaObjects", dependencies: ["SovariaPlumbing", "Sovaria"]),
        // 4. Sync: the offline controller over the cache and the queue; the server's API and the
        //    network are protocols (`DataAPI`, `SyncTransport`).
        .target(name: "SovariaSync", dependencies: ["SovariaPlumbing", "Sovaria", "SovariaCache", "SovariaQueue"]),
        // 5. Everything that knows PostgREST: the API adapter (paths, filters, headers), request
        //    builders, coders, and the overlay that evaluates PostgREST queries on cached answers.
        .target(
            name: "SovariaPostgREST", dependencies: ["SovariaPlumbing", "SovariaQueue", "SovariaSync"],
            // The change feed's SQL, which a user applies to their database (Tests/Server applies it too).
            exclude: ["ChangeFeed.sql"]),
        // 6. The HTTP transport (URLSession) and its access tokens.
        .target(
            name: "SovariaHTTP",
            dependencies: ["SovariaPlumbing", "SovariaSync", "SovariaCache", "SovariaQueue", "SovariaPostgREST"]),

        // The `sovaria` command: dump, load, migrate, inspect, verify and compact any store by URL.
        .executableTarget(
            name: "sovaria",
            dependencies: [
                "Sovaria", "SovariaCache", "SovariaSQLite", "SovariaLMDB", "SovariaLevelDB", "SovariaSodium",
                "SovariaPostgres", "SovariaPlumbing",
            ],
            path: "Sources/sovaria-cli"
        ),

        // `make demo`: a small notes app on Sovaria against the test server.
        .executableTarget(
            name: "sovaria-notes",
            dependencies: [
                "Sovaria", "SovariaCache", "SovariaSQLite", "SovariaHTTP", "SovariaPostgREST", "SovariaQueue",
                "SovariaSync",
            ],
            path: "Examples/sovaria-notes"
        ),

        .testTarget(
            name: "SovariaTests",
            dependencies: [
                "Sovaria", "SovariaPlumbing", "SovariaTestKit", "SovariaTestServers", "SovariaSQLite",
                "SovariaTestEngines",
            ]),
        // Test equipment: a throwaway PostgreSQL cluster (Tests/Server/pgcluster) for the tests that
        // need a real server, and a libpq session a test holds a transaction open on.
        .target(
            name: "SovariaTestServers", dependencies: ["SovariaSync", "SovariaHTTP", "CLibPQ"],
            path: "Tests/SovariaTestServers"),
        // The engines every layer's tests run on, listed once (TestEngine.standard).
        .target(
            name: "SovariaTestEngines",
            dependencies: [
                "Sovaria", "SovariaSQLite", "SovariaLMDB", "SovariaLevelDB", "SovariaPostgres", "SovariaSodium",
                "SovariaTestServers",
            ],
            path: "Tests/SovariaTestEngines"),
        // The child process the crash tests kill with SIGKILL, and those tests.
        .executableTarget(
            name: "sovaria-crash-writer",
            dependencies: [
                "Sovaria", "SovariaSQLite", "SovariaLMDB", "SovariaLevelDB", "SovariaPostgres", "SovariaQueue",
                "SovariaSync", "SovariaHTTP", "SovariaPostgREST", "SovariaFiles", "SovariaSodium", "SovariaTestKit",
            ],
            path: "Tests/sovaria-crash-writer"
        ),
        .testTarget(
            name: "SovariaCacheTests",
            dependencies: [
                "SovariaTestEngines",
                "SovariaCache", "Sovaria", "SovariaTestKit", "SovariaSQLite", "SovariaLMDB", "SovariaLevelDB",
                "SovariaPostgres", "SovariaTestServers",
            ]
        ),
        .testTarget(
            name: "SovariaCrashTests",
            dependencies: [
                "sovaria-crash-writer", "Sovaria", "SovariaSQLite", "SovariaPostgres", "SovariaQueue", "SovariaSync",
                "SovariaCache",
                "SovariaPostgREST",
                "SovariaTestServers", "SovariaFiles", "SovariaTestEngines",
            ]
        ),
        .testTarget(
            name: "SovariaQueueTests",
            dependencies: [
                "SovariaTestEngines",
                "SovariaQueue", "Sovaria", "SovariaTestKit", "SovariaSQLite", "SovariaLMDB", "SovariaLevelDB",
                "SovariaSodium", "SovariaPostgres", "SovariaTestServers",
            ]
        ),
        .testTarget(
            name: "SovariaSyncTests",
            dependencies: [
                "SovariaTestEngines",
                "SovariaSync", "SovariaCache", "SovariaQueue", "Sovaria", "SovariaTestKit", "SovariaSQLite",
                "SovariaLMDB", "SovariaLevelDB", "SovariaSodium", "SovariaTestServers", "SovariaHTTP",
                "SovariaPostgREST", "SovariaPostgres",
            ]
        ),
        // The HTTP transport, end to end against PostgreSQL behind Tests/Server/restserver.py.
        .testTarget(
            name: "SovariaHTTPTests",
            dependencies: [
                "SovariaHTTP", "SovariaPostgREST", "SovariaSync", "SovariaCache", "SovariaQueue", "Sovaria",
                "SovariaTestKit", "SovariaSQLite", "SovariaLevelDB", "SovariaLMDB", "SovariaSodium",
                "SovariaTestServers", "sovaria-crash-writer",
                "SovariaTestEngines",
            ]
        ),
        // The PostgREST adapter, builders, coders and overlay, without a server.
        .testTarget(
            name: "SovariaPostgRESTTests",
            dependencies: ["SovariaPostgREST", "SovariaSync", "SovariaQueue", "Sovaria", "SovariaTestKit"]
        ),
        // Runs the `sovaria` executable (built because the target depends on it) as a subprocess.
        .testTarget(
            name: "SovariaCLITests",
            dependencies: [
                "sovaria", "Sovaria", "SovariaCache", "SovariaQueue", "SovariaSQLite", "SovariaTestServers",
                "SovariaTestEngines",
            ]),
        .testTarget(
            name: "SovariaFilesTests",
            dependencies: [
                "SovariaTestEngines",
                "SovariaFiles", "Sovaria", "SovariaTestKit", "SovariaSQLite", "SovariaLMDB", "SovariaLevelDB",
                "SovariaSodium",
            ]
        ),
        .testTarget(
            name: "SovariaObjectsTests",
            dependencies: [
                "SovariaTestEngines", "SovariaObjects", "Sovaria", "SovariaTestKit", "SovariaTestServers",
            ]
        ),
        .testTarget(name: "SovariaSQLiteTests", dependencies: ["SovariaSQLite", "SovariaTestKit"]),
        .testTarget(name: "SovariaLMDBTests", dependencies: ["SovariaLMDB", "SovariaTestKit"]),
        .testTarget(
            name: "SovariaLevelDBTests", dependencies: ["SovariaLevelDB", "SovariaTestKit", "SovariaTestServers"]),
        .testTarget(
            name: "SovariaPostgresTests",
            dependencies: ["SovariaPostgres", "SovariaPlumbing", "SovariaTestKit", "SovariaTestServers"]
        ),
        // Full disks, read-only mounts and damaged files (mounts a tmpfs: runs as root).
        .testTarget(
            name: "SovariaFaultTests",
            dependencies: [
                "Sovaria", "SovariaTestKit", "SovariaSQLite", "SovariaLMDB", "SovariaLevelDB", "SovariaTestServers",
                "SovariaQueue", "SovariaCache", "SovariaFiles", "SovariaSodium",
                // The child that reads damaged stores (`read-<engine>`), so a crash in a C library ends it, not the run,
                // and the I/O-error and bulk-input workloads.
                "sovaria-crash-writer", "SovariaTestEngines",
            ]
        ),
        .testTarget(
            name: "SovariaSodiumTests",
            dependencies: [
                "SovariaSodium", "SovariaTestKit", "SovariaSQLite", "SovariaLMDB", "SovariaLevelDB", "SovariaPostgres",
                "SovariaTestServers",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Async calls run on the caller's executor unless a method says otherwise: a read through
// `any OfflineStore` from the main actor then costs no hop (see docs/ARCHITECTURE.md).
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
}
