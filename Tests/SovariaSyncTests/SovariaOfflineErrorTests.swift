import Foundation
import SovariaQueue
import Testing

@testable import SovariaSync

@Suite struct SovariaOfflineErrorTests {
    @Test func aReadAnsweredWithNeither2xxNor304ThrowsUnexpectedStatusWithTheAnswerAndCachesNothing() async throws {
        let rig = try await Rig(.memory)
        let select = DataRequest(method: "GET", path: "/rest/v1/notes?select=*")
        rig.transport.answer(DataResponse(status: 500, body: "boom"))
        let error = await #expect(throws: SovariaOfflineError.self) {
            try await rig.offline.read(select, policy: .networkOnly)
        }
        #expect(error?.code == .unexpectedStatus)
        #expect(error?.response == DataResponse(status: 500, body: "boom"))
        #expect(error?.message.contains("500") == true)
        #expect(try await rig.offline.cache.responseCount == 0)
        #expect(rig.offline.online, "the server answered")
    }
}
