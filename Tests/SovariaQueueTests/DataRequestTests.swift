import Foundation
import Sovaria
import Testing

@testable import SovariaQueue

@Suite struct DataRequestTests {
    @Test func headerNamesCompareWithoutCaseAndSettingOneReplacesEverySpelling() {
        var request = DataRequest(
            method: "PATCH", path: "/rest/v1/notes?id=eq.1", headers: ["prefer": "return=minimal", "X-Other": "1"])
        #expect(request.header("Prefer") == "return=minimal")
        #expect(request.header("PREFER") == "return=minimal")
        #expect(request.header("Prefe") == nil && request.header("preferr") == nil)
        request.setHeader("Prefer", "return=representation")
        #expect(request.headers == ["Prefer": "return=representation", "X-Other": "1"], "one spelling left")
        request.setHeader("x-other", nil)
        #expect(request.headers == ["Prefer": "return=representation"])
        #expect(DataRequest.sameHeaderName("Content-Type", "content-type"))
        #expect(!DataRequest.sameHeaderName("Content-Type", "Content-Typf"))
        #expect(!DataRequest.sameHeaderName("é", "É"), "only ASCII letters fold, as HTTP's tokens are ASCII")
        let both = DataRequest(method: "GET", path: "/", headers: ["range": "0-9", "Range": "10-19"])
        #expect(both.header("range") == "10-19", "of two spellings, the first by its bytes")
    }

    @Test func storedFormIsSortedJSONWithMillisecondDates() throws {
        let write = QueuedWrite(
            id: "id-1", sequence: 7, request: DataRequest(method: "POST", path: "/rest/v1/notes", body: "{}"),
            queuedAt: Date(timeIntervalSince1970: 1_800_000_000.5), attempts: 2, lastError: "offline")
        let text = try QueueCoding.encode(write)
        #expect(
            text == #"{"attempts":2,"id":"id-1","lastError":"offline","queuedAt":1800000000500,"#
                + #""request":{"body":"{}","headers":{},"method":"POST","path":"/rest/v1/notes"},"sequence":7}"#)
        let key = QueueKeys.queued(7, "id-1")
        #expect(try QueueEntryReader().queuedWrite(.init(key: key, value: text)) == write)
    }

    @Test func clockIsKeptToTheMillisecondSoWritesReadBackEqual() throws {
        for seconds in [1_800_000_000.123_456, 1_700_000_000.999_9, 0.000_4, 1_234_567_890.001] {
            let date = QueueCoding.truncatedToMilliseconds(Date(timeIntervalSince1970: seconds))
            let write = QueuedWrite(id: "a", sequence: 1, request: .init(method: "GET", path: "/"), queuedAt: date)
            let back = try QueueEntryReader().queuedWrite(
                .init(key: QueueKeys.queued(1, "a"), value: try QueueCoding.encode(write)))
            #expect(back.queuedAt == date)
        }
    }
}
