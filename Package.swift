// swift-tools-version:6.0
import PackageDescription

/// Sovaria: offline-first storage for Swift, one key/value protocol over several engines.
///
/// Only the adapter modules import C. An app that wants SQLite links `Sovaria` and `SovariaSQLite`, and
/// `SovariaCache` for the query cache.
let package = Package(
    name: "Sovaria",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Sovaria", targets: ["Sovaria"]),
        .library(name: "SovariaCache", targets: ["SovariaCache"]),
        .library(name: "SovariaSQLite", targets: ["SovariaSQLite"]),
        .library(name: "SovariaLMDB", targets: ["SovariaLMDB"]),
        .library(name: "SovariaLevelDB", targets: ["SovariaLevelDB"]),
        .library(name: "SovariaSodium", targets: ["SovariaSodium"]),
        .library(name: "SovariaPostgres", targets: ["SovariaPostgres"]),
        .library(name: "SovariaTestKit", targets: ["SovariaTestKit"]),
        // Test equipment, not for apps: the throwaway PostgreSQL cluster and the REST test server,
        // a product only so the Benchmarks package (Benchmarks/Package.swift) can start them too.
        .library(name: "SovariaTestServers", targets: ["SovariaTestServers"]),
        .library(name: "SovariaQueue", targets: ["SovariaQueue"]),
        .library(name: "SovariaSync", targets: ["SovariaSync"]),
        .library(name: "SovariaHTTP", targets: ["SovariaHTTP"]),
        .library(name: "SovariaFiles", targets: ["SovariaFiles"]),
        .library(name: "SovariaObjects", targets: ["SovariaObjects"]),
        .executable(name: "sovaria", targets: ["sovaria"]),
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

        // Plumbing the engines and layers share (locks, gates, group commit, hashing): package
        // access only, and not a product, so none of it is part of the API.
        .target(name: "SovariaPlumbing"),
        .target(name: "Sovaria", dependencies: ["SovariaPlumbing"]),
        // The query cache: written against `OfflineStore` only, so it runs on every engine.
        .target(name: "SovariaCache", dependencies: ["SovariaPlumbing", "Sovaria"]),
        .target(name: "SovariaSQLite", dependencies: ["SovariaPlumbing", "Sovaria", "CSQLite"]),
        .target(name: "SovariaLMDB", dependencies: ["SovariaPlumbing", "Sovaria", "CLMDB"]),
        .target(name: "SovariaLevelDB", dependencies: ["SovariaPlumbing", "Sovaria", "CLevelDB"]),
        .target(name: "SovariaSodium", dependencies: ["SovariaPlumbing", "Sovaria", "CSodium"]),
        // One table shared by many processes and machines, over libpq.
        .target(name: "SovariaPostgres", dependencies: ["SovariaPlumbing", "Sovaria", "CLibPQ"]),
        .target(name: "SovariaTestKit", dependencies: ["SovariaPlumbing", "Sovaria"]),
        // The durable write queue and the rejected list (seed 003); sees only `OfflineStore`.
        .target(name: "SovariaQueue", dependencies: ["SovariaPlumbing", "Sovaria"]),
        // The offline controller (seed 003) over the cache and the queue; the network is a protocol.
        .target(name: "SovariaSync", dependencies: ["SovariaPlumbing", "Sovaria", "SovariaCache", "SovariaQueue"]),
        // The HTTP transport (URLSession) and PostgREST's request conventions.
        .target(name: "SovariaHTTP", dependencies: ["SovariaPlumbing", "SovariaSync", "SovariaCache", "SovariaQueue"]),
        // The file cache (seed 000): files in a folder, their metadata in any `OfflineStore`.
        .target(name: "SovariaFiles", dependencies: ["SovariaPlumbing", "Sovaria"]),
        // Codable objects by id in any `OfflineStore`, their changes and an observable model (issue 39).
        .target(name: "SovariaObjects", dependencies: ["SovariaPlumbing", "Sovaria"]),

        // The `sovaria` command (issue 14): dump, load, migrate, inspect, verify and compact any store by URL.
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
            dependencies: ["Sovaria", "SovariaCache", "SovariaSQLite", "SovariaHTTP", "SovariaQueue", "SovariaSync"],
            path: "Examples/sovaria-notes"
        ),

        .testTarget(
            name: "SovariaTests",
            dependencies: ["Sovaria", "SovariaPlumbing", "SovariaTestKit", "SovariaTestServers", "SovariaSQLite"]),
        // Test equipment: a throwaway PostgreSQL cluster (Tests/Server/pgcluster) for the tests that
        // need a real server.
        .target(name: "SovariaTestServers", dependencies: ["SovariaSync"], path: "Tests/SovariaTestServers"),
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
                "SovariaSync", "SovariaHTTP", "SovariaFiles", "SovariaSodium",
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
                "SovariaTestServers", "SovariaFiles",
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
                "SovariaPostgres",
            ]
        ),
        // The HTTP transport, end to end against PostgreSQL behind Tests/Server/restserver.py.
        .testTarget(
            name: "SovariaHTTPTests",
            dependencies: [
                "SovariaHTTP", "SovariaSync", "SovariaCache", "SovariaQueue", "Sovaria", "SovariaTestKit",
                "SovariaSQLite", "SovariaLevelDB", "SovariaLMDB", "SovariaSodium", "SovariaTestServers",
                "sovaria-crash-writer",
            ]
        ),
        // Runs the `sovaria` executable (built because the target depends on it) as a subprocess.
        .testTarget(
            name: "SovariaCLITests",
            dependencies: ["sovaria", "Sovaria", "SovariaCache", "SovariaSQLite", "SovariaTestServers"]),
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
                "sovaria-crash-writer",
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
