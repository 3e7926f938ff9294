import Foundation
import SovariaTestServers
import Testing

/// `sovaria verify`: each engine's own check finds damage in its files, names the file and what to
/// do, and exits 4; an intact store exits 0.
@Suite struct VerifyCommandTests {
    /// A store of `engine` loaded with the fixtures' 2,000 entries (and compacted, so LevelDB's
    /// entries are in a table); returns its URL and its file or folder.
    private func loadedStore(_ engine: String, in folder: Fixtures.Folder) async throws -> (url: String, place: String)
    {
        let url = Fixtures.url(engine, in: folder, name: "store")
        let load = try await CommandRunner.run(["load", url], inputFile: try Fixtures.inputFile(in: folder))
        try #require(load.status == 0, "\(load.errors)")
        let compact = try await CommandRunner.run(["compact", url])
        try #require(compact.status == 0, "\(compact.errors)")
        return (url, String(url.drop { $0 != ":" }.dropFirst()))
    }

    @Test(arguments: [
        ("file", "batch journal"), ("sqlite", "integrity_check"), ("lmdb", "mdb_env_stat"),
        ("leveldb", "every block's checksum verified (2000 read)"),
    ])
    func anIntactStoreRunsTheEngineCheckAndExitsZero(engine: String, check: String) async throws {
        let folder = try Fixtures.Folder()
        let (url, _) = try await loadedStore(engine, in: folder)
        let run = try await CommandRunner.run(["verify", url])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains(check), "\(run.errors)")
        #expect(run.errors.contains("read 2000 entries"), "\(run.errors)")
        #expect(run.errors.contains("0 problems"))
        #expect(!run.errors.contains("what to do"))
    }

    @Test func anSQLiteFileCutShortIsReportedNotOpened() async throws {
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("sqlite", in: folder)
        try cut(place, toFraction: 0.6)
        let run = try await CommandRunner.run(["verify", url])
        #expect(run.status == 4, "\(run.errors)")
        #expect(run.errors.contains("cut short"), "\(run.errors)")
        #expect(run.errors.contains(place))
        #expect(run.errors.contains("what to do"))
    }

    /// A zeroed page of the file: SQLite's integrity_check lists it, with the file's path.
    @Test func aDamagedSQLitePageIsListedByIntegrityCheck() async throws {
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("sqlite", in: folder)
        let size = try FileManager.default.attributesOfItem(atPath: place)[.size] as? Int ?? 0
        try overwrite(place, at: size / 2 / 4_096 * 4_096, with: [UInt8](repeating: 0, count: 4_096))
        let run = try await CommandRunner.run(["verify", url])
        #expect(run.status == 4, "\(run.errors)")
        #expect(run.errors.contains("integrity_check on \(place)"), "\(run.errors)")
        #expect(run.errors.contains("sovaria migrate"), "the advice")
    }

    /// A byte of a key made invalid UTF-8 inside `data.mdb` (the last digit of `sov:cache:l:1236`
    /// turned into `FF`): LMDB's walk names it. (A value is any bytes: LMDB, without checksums,
    /// cannot tell a changed value byte from a value written that way.)
    @Test func anLMDBKeyDamagedInPlaceIsNamed() async throws {
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("lmdb", in: folder)
        let data = place + "/data.mdb"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: data))
        let key = Data("sov:cache:l:1236".utf8)
        let offset = try #require(bytes.range(of: key)?.lowerBound)
        try overwrite(data, at: offset + key.count - 1, with: [0xFF])
        let run = try await CommandRunner.run(["verify", url])
        #expect(run.status == 4, "\(run.errors)")
        #expect(run.errors.contains("A key in \(data) is not valid UTF-8"), "\(run.errors)")
    }

    /// Values that are not UTF-8 (the fixtures' binary values) are values, not damage: the engine
    /// checks of LMDB and LevelDB, which flagged them before byte values, pass them.
    @Test(arguments: ["lmdb", "leveldb"])
    func binaryValuesAreNotDamageToTheEngineCheck(engine: String) async throws {
        let folder = try Fixtures.Folder()
        let (url, _) = try await loadedStore(engine, in: folder)
        let run = try await CommandRunner.run(["verify", url, "--json"])
        #expect(!run.output.contains("not valid UTF-8"), "\(run.output)")
        #expect(run.status == 0, "\(run.output) \(run.errors)")
    }

    @Test func anLMDBFileCutShortIsReportedNotOpened() async throws {
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("lmdb", in: folder)
        try cut(place + "/data.mdb", toFraction: 0.5)
        let run = try await CommandRunner.run(["verify", url])
        #expect(run.status == 4, "\(run.errors)")
        #expect(run.errors.contains("data.mdb is cut short"), "\(run.errors)")
    }

    /// A flipped byte in a LevelDB table: the checksummed iteration stops there and the report
    /// points to LevelDB's repair.
    @Test func aDamagedLevelDBTableIsFoundAndRepairSuggested() async throws {
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("leveldb", in: folder)
        let table = try #require(
            try FileManager.default.contentsOfDirectory(atPath: place).first { $0.hasSuffix(".ldb") })
        let path = place + "/" + table
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        try invert(path, at: size / 3)
        let run = try await CommandRunner.run(["verify", url])
        #expect(run.status == 4, "\(run.errors)")
        #expect(run.errors.contains("checksum mismatch"), "\(run.errors)")
        #expect(run.errors.contains(place))
        #expect(run.errors.contains("LevelDBOfflineStore.repair(directory:)"))
    }

    @Test func aLevelDBManifestCutShortIsReportedNotOpened() async throws {
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("leveldb", in: folder)
        let manifest = try #require(
            try FileManager.default.contentsOfDirectory(atPath: place).first { $0.hasPrefix("MANIFEST-") })
        try cut(place + "/" + manifest, toFraction: 0.5)
        let run = try await CommandRunner.run(["verify", url])
        #expect(run.status == 4, "\(run.errors)")
        #expect(run.errors.contains("MANIFEST"), "\(run.errors)")
        #expect(run.errors.contains("repair"))
    }

    /// An entry file renamed to a name that is no key's: the store does not list it, verify does.
    @Test func aFileStoreNameThatIsNoKeysIsNamed() async throws {
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("file", in: folder)
        let entry = try #require(try FileManager.default.contentsOfDirectory(atPath: place).first { $0.hasPrefix("k") })
        let renamed = String(entry.dropLast()) + "z"
        try FileManager.default.moveItem(atPath: place + "/" + entry, toPath: place + "/" + renamed)
        let run = try await CommandRunner.run(["verify", url])
        #expect(run.status == 4, "\(run.errors)")
        #expect(run.errors.contains("\(place)/\(renamed) is not named as any key's file"), "\(run.errors)")
        #expect(run.errors.contains("read 1999 entries"))
    }

    /// A damaged batch journal is reported, and the store is not opened (which would drop it).
    @Test func aDamagedFileStoreJournalIsReportedAndKept() async throws {
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("file", in: folder)
        var journal = Self.journal(removing: "sov:cache:l:0")
        journal[8] ^= 0x01
        try Data(journal).write(to: URL(fileURLWithPath: place + "/.journal"))
        let run = try await CommandRunner.run(["verify", url])
        #expect(run.status == 4, "\(run.errors)")
        #expect(run.errors.contains("\(place)/.journal"), "\(run.errors)")
        #expect(run.errors.contains("verify did not open the store"))
        #expect(FileManager.default.fileExists(atPath: place + "/.journal"), "the evidence is kept")
    }

    /// An intact pending batch is no problem: opening finishes it, and verify says so.
    @Test func aPendingFileStoreBatchIsNotedAndFinished() async throws {
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("file", in: folder)
        try Data(Self.journal(removing: "sov:cache:l:0")).write(to: URL(fileURLWithPath: place + "/.journal"))
        let run = try await CommandRunner.run(["verify", url])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("A batch of 1 writes was interrupted"), "\(run.errors)")
        #expect(run.errors.contains("read 1999 entries"), "the batch removed its key")
    }

    /// A crash in the engine's C code (LMDB can end with SIGSEGV on some damaged pages) is reported
    /// as damage: exit 4, the store named, what to do. strace delivers the SIGSEGV the moment LMDB
    /// opens `data.mdb`.
    @Test func aCrashInTheEngineIsReportedAsDamage() async throws {
        let strace = "/usr/bin/strace"
        try #require(FileManager.default.isExecutableFile(atPath: strace), "make test installs strace")
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("lmdb", in: folder)
        let errorFile = folder.file("errors")
        let arguments = [
            "-f", "-o", "/dev/null", "-P", place + "/data.mdb", "-e", "trace=openat", "-e",
            "inject=openat:signal=SIGSEGV", CommandRunner.executable, "verify", url,
        ]
        let status = try await PostgresCluster.onThread {
            try ChildProcess(
                strace, arguments, environment: ["SWIFT_BACKTRACE": "enable=no"], captureOutput: false,
                errorFile: errorFile
            ).waitBlocking()
        }
        let errors = (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? ""
        #expect(status & 0x7F == 0 && (status >> 8) & 0xFF == 4, "status \(status): \(errors)")
        #expect(errors.contains("the engine crashed reading \(place)"), "\(errors)")
        #expect(errors.contains("what to do"))
    }

    @Test func jsonReportCarriesTheProblemsAndTheAdvice() async throws {
        let folder = try Fixtures.Folder()
        let (url, place) = try await loadedStore("lmdb", in: folder)
        try cut(place + "/data.mdb", toFraction: 0.5)
        let run = try await CommandRunner.run(["verify", url, "--json"])
        #expect(run.status == 4)
        let summary = try #require(run.lines.first)
        #expect(summary.contains(#""problems":1"#), "\(summary)")
        #expect(summary.contains(#""advice":"#))
        #expect(run.lines.dropFirst().first?.contains(#""event":"problem""#) == true)
    }

    // MARK: - Damage

    /// The file store's journal of a batch removing `key` (docs/ARCHITECTURE.md, "FileOfflineStore
    /// on disk"): `"SOVJ2\n"`, tag 2, the key's length (UInt32 LE) and bytes, FNV-1a 64 (UInt64 LE).
    private static func journal(removing key: String) -> [UInt8] {
        var bytes = Array("SOVJ2\n".utf8) + [2]
        withUnsafeBytes(of: UInt32(key.utf8.count).littleEndian) { bytes += $0 }
        bytes += key.utf8
        let hash = bytes.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        withUnsafeBytes(of: hash.littleEndian) { bytes += $0 }
        return bytes
    }

    private func cut(_ path: String, toFraction fraction: Double) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.truncate(atOffset: UInt64(Double(try handle.seekToEnd()) * fraction))
    }

    private func overwrite(_ path: String, at offset: Int, with bytes: [UInt8]) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: bytes)
    }

    private func invert(_ path: String, at offset: Int) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: [~byte])
    }
}
