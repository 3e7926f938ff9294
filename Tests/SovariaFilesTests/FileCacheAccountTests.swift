import Foundation
import Sovaria
import SovariaTestEngines
import SovariaTestKit
import Testing

@testable import SovariaFiles

/// One cache of private files per account (issue 60): a folder and metadata of its own, so
/// two accounts of one device never see each other's files.
@Suite struct FileCacheAccountTests {
    @Test(arguments: TestEngine.all)
    func anAccountSeesOnlyItsOwnFilesAndForgetsThemAlone(_ engine: MetadataEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.child("meta"))
        let base = folder.child("files")
        var alice: FileCache? = try await FileCache(directory: base, metadata: store, account: try AccountID("alice"))
        let bob = try await FileCache(directory: base, metadata: store, account: try AccountID("bob"))
        _ = try await alice?.store("avatar", data: Data("Alice's face".utf8))
        _ = try await bob.store("receipt", data: Data("Bob's receipt".utf8))
        let alicesFile = try await bob.open("avatar")
        #expect(!bob.contains("avatar") && alicesFile == nil, "Bob sees none of Alice's files")
        #expect(alice?.contains("receipt") == false)

        // Alice signs out: her files go, Bob's stay.
        try await alice?.removeAll()
        let lease = try #require(try await bob.open("receipt"))
        #expect(try Data(contentsOf: lease.url) == Data("Bob's receipt".utf8))
        lease.end()
        await alice?.waitForPendingWork()
        alice = nil  // released: the folder is free for the next open
        let aliceAgain = try await FileCache(directory: base, metadata: store, account: try AccountID("alice"))
        #expect(aliceAgain.fileCount == 0)
        let left = try FileManager.default.contentsOfDirectory(
            atPath: FileCache.accountDirectory(of: try AccountID("alice"), in: base).path + "/files")
        #expect(left.isEmpty, "nothing of Alice's on disk: \(left)")
    }

    @Test func accountsThatDifferOnlyInCaseOrAreDotsGetFoldersOfTheirOwnInsideTheDirectory() throws {
        let base = URL(fileURLWithPath: "/caches/files", isDirectory: true)
        let names = try ["Ada", "ada", "..", "."].map { try FileCache.accountDirectory(of: AccountID($0), in: base) }
        #expect(Set(names.map { $0.path.lowercased() }).count == 4, "\(names)")
        for name in names {
            #expect(name.deletingLastPathComponent().standardizedFileURL.path == base.path)
            #expect(name.lastPathComponent.hasPrefix("account-"))
        }
        #expect(names[1].lastPathComponent == "account-616461")
    }
}
