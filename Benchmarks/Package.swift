// swift-tools-version:6.0
import PackageDescription

/// The benchmarks: a package of their own beside the library (as swift-nio keeps its own), so the
/// library's manifest builds only what an app links. `make bench` runs `sovaria-bench`; `make test`
/// builds and runs this package's tests too.
///
/// It sees the library as an app does, through its products, plus the symbols marked
/// `@_spi(Benchmarks)` (the trace format the recorder writes, and the internals the bench times
/// beside their public callers), imported as `@_spi(Benchmarks) import …`.
let package = Package(
    name: "SovariaBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .executable(name: "sovaria-bench", targets: ["sovaria-bench"])
    ],
    dependencies: [
        .package(name: "Sovaria", path: "..")
    ],
    targets: [
        // The C libraries the raw baselines call directly, from the OS (`make deps` installs them).
        .systemLibrary(
            name: "CBenchSQLite",
            path: "CBenchSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .systemLibrary(
            name: "CBenchLMDB",
            path: "CBenchLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // Debian ships no pkg-config file for LevelDB; the module map links "leveldb" by name.
        .systemLibrary(
            name: "CBenchLevelDB",
            path: "CBenchLevelDB",
            providers: [.apt(["libleveldb-dev"]), .brew(["leveldb"])]
        ),
        .systemLibrary(
            name: "CBenchLibPQ",
            path: "CBenchLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // The C heap's bytes in use (glibc's mallinfo2), for the bench's memory rows.
        .target(name: "CHeap", path: "CHeap"),

        // Workload generators (YCSB A–F, custom mixes), trace readers (Sovaria's own, libCacheSim's)
        // and the replay driver, shared by sovaria-bench and the tests (issue 36).
        .target(
            name: "SovariaWorkloads",
            dependencies: [
                .product(name: "Sovaria", package: "Sovaria"), .product(name: "SovariaCache", package: "Sovaria"),
            ],
            path: "SovariaWorkloads"
        ),

        .executableTarget(
            name: "sovaria-bench",
            dependencies: [
                "SovariaWorkloads", "CHeap", "CBenchSQLite", "CBenchLMDB", "CBenchLevelDB", "CBenchLibPQ",
                .product(name: "Sovaria", package: "Sovaria"),
                .product(name: "SovariaCache", package: "Sovaria"),
                .product(name: "SovariaQueue", package: "Sovaria"),
                .product(name: "SovariaSync", package: "Sovaria"),
                .product(name: "SovariaPostgREST", package: "Sovaria"),
                .product(name: "SovariaHTTP", package: "Sovaria"),
                .product(name: "SovariaFiles", package: "Sovaria"),
                .product(name: "SovariaObjects", package: "Sovaria"),
                .product(name: "SovariaSQLite", package: "Sovaria"),
                .product(name: "SovariaLMDB", package: "Sovaria"),
                .product(name: "SovariaLevelDB", package: "Sovaria"),
                .product(name: "SovariaSodium", package: "Sovaria"),
                .product(name: "SovariaPostgres", package: "Sovaria"),
                // Starts the throwaway PostgreSQL cluster the postgres engine is measured on.
                .product(name: "SovariaTestServers", package: "Sovaria"),
            ],
            path: "sovaria-bench"
        ),

        .testTarget(
            name: "SovariaWorkloadsTests",
            dependencies: [
                "SovariaWorkloads",
                .product(name: "Sovaria", package: "Sovaria"),
                .product(name: "SovariaCache", package: "Sovaria"),
                .product(name: "SovariaTestKit", package: "Sovaria"),
                .product(name: "SovariaSQLite", package: "Sovaria"),
                .product(name: "SovariaLMDB", package: "Sovaria"),
                .product(name: "SovariaLevelDB", package: "Sovaria"),
                .product(name: "SovariaPostgres", package: "Sovaria"),
                .product(name: "SovariaTestServers", package: "Sovaria"),
            ]
        ),
        // Runs the benchmark executable (built because the target depends on it) in a quick mode.
        .testTarget(
            name: "SovariaBenchTests",
            dependencies: [
                "sovaria-bench",
                .product(name: "Sovaria", package: "Sovaria"),
                .product(name: "SovariaTestKit", package: "Sovaria"),
                .product(name: "SovariaTestServers", package: "Sovaria"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// As in the library's manifest: async calls run on the caller's executor unless a method says otherwise.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
}
