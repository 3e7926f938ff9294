import Foundation
import Sovaria
import Testing

@testable import SovariaQueue

@Suite struct ClientIDTests {
    @Test func clientIDsAreLowercaseVersion4UUIDsAsUUIDStringLowercasedWroteThem() throws {
        var seen = Set<String>()
        for _ in 0..<2_000 {
            let id = ClientID.make()
            let uuid = try #require(UUID(uuidString: id), "\(id) parses as a UUID")
            #expect(uuid.uuidString.lowercased() == id, "same text as UUID().uuidString.lowercased()")
            let bytes = uuid.uuid
            #expect(bytes.6 >> 4 == 4, "version 4")
            #expect(bytes.8 >> 6 == 0b10, "RFC variant")
            seen.insert(id)
        }
        #expect(seen.count == 2_000, "random: no repeats")
    }

    @Test func clientIDsVaryInEveryRandomHexDigit() {
        // Dashes aside, digit 14 is the version and 19 the variant (4 values); every other one varies.
        let ids = (0..<400).map { _ in Array(ClientID.make().utf8) }
        for position in 0..<36 where ![8, 13, 14, 18, 19, 23].contains(position) {
            #expect(Set(ids.map { $0[position] }).count > 4, "digit at \(position)")
        }
    }
}

/// A write can be queued under a client id it was already sent with; a bad or taken id is
/// refused before anything is written.
@Suite struct GivenClientIDTests {
    @Test func aGivenIDIsKeptAndABadOrTakenOneIsRefused() async throws {
        let store = MemoryOfflineStore()
        let queue = try await WriteQueue(store: store)
        let request = DataRequest(method: "POST", path: "/rest/v1/notes", body: "{}")
        let id = WriteQueue.makeClientID()
        let write = try await queue.enqueue(request, id: id)
        #expect(write.id == id)
        for bad in [id, "", String(repeating: "x", count: 129), "a\nb"] {
            let error = await #expect(throws: WriteQueueError.self) { try await queue.enqueue(request, id: bad) }
            #expect(error?.code == .invalidClientID)
        }
        #expect(try await queue.pending().map(\.id) == [id])
        #expect(try await store.keys("sov:queue:").count == 1)
    }
}
