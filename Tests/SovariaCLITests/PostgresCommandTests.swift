import Foundation
import SovariaTestServers
import Testing

/// `postgres:` URLs against the shared throwaway cluster (Tests/Server/pgcluster).
@Suite struct PostgresCommandTests {
    @Test func migratesThroughPostgreSQLAndDumpsAlike() async throws {
        let folder = try Fixtures.Folder()
        let source = Fixtures.url("leveldb", in: folder, name: "source")
        let load = try await CommandRunner.run(["load", source], inputFile: try Fixtures.inputFile(in: folder))
        try #require(load.status == 0)
        let table = PostgresCluster.tableName(for: URL(fileURLWithPath: folder.path))
        let postgres = "postgres:\(try await PostgresCluster.sharedDatabase())?table=\(table)"
        let back = Fixtures.url("sqlite", in: folder, name: "back")

        let there = try await CommandRunner.run(["migrate", "--from", source, "--to", postgres, "--verify"])
        #expect(there.status == 0, "\(there.errors)")
        let home = try await CommandRunner.run(["migrate", "--from", postgres, "--to", back, "--verify"])
        #expect(home.status == 0, "\(home.errors)")
        let sourceDump = try await CommandRunner.run(["dump", source])
        let postgresDump = try await CommandRunner.run(["dump", postgres])
        let backDump = try await CommandRunner.run(["dump", back])
        #expect(sourceDump.lines.count == 2_000)
        #expect(Data(postgresDump.output.utf8) == Data(sourceDump.output.utf8))
        #expect(Data(backDump.output.utf8) == Data(sourceDump.output.utf8))
    }

    @Test func unreachableServerExitsThree() async throws {
        let folder = try Fixtures.Folder()
        let run = try await CommandRunner.run(["dump", "postgres:host=\(folder.path) dbname=none connect_timeout=2"])
        #expect(run.status == 3, "\(run.errors)")
        #expect(run.errors.contains("Cannot open"))
    }
}
