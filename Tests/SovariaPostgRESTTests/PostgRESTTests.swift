import Foundation
import SovariaQueue
import Testing

@testable import SovariaPostgREST

@Suite struct PostgRESTTests {
    @Test func tableIsThePostgRESTTableOfThePath() {
        let api = PostgREST()
        #expect(api.table(of: DataRequest(method: "GET", path: "/rest/v1/notes?id=eq.7")) == "notes")
        #expect(api.table(of: DataRequest(method: "PATCH", path: "/rest/v1/notes")) == "notes")
        #expect(api.table(of: DataRequest(method: "GET", path: "/rest/v1/notes/extra")) == "notes")
        #expect(api.table(of: DataRequest(method: "GET", path: "/rest/v1/my%20notes?select=*")) == "my notes")
        #expect(
            api.table(of: DataRequest(method: "POST", path: "/rest/v1/rpc/archive")) == nil, "a function, not a table")
        #expect(api.table(of: DataRequest(method: "GET", path: "/rest/v1/")) == nil)
        #expect(api.table(of: DataRequest(method: "GET", path: "/rest/v1/?x=1")) == nil)
        #expect(api.table(of: DataRequest(method: "GET", path: "/auth/v1/user")) == nil)
        #expect(api.table(of: DataRequest(method: "GET", path: "rest/v1/notes")) == nil)
    }

    @Test func tablesAndBuiltPathsFollowTheAdaptersPathPrefix() {
        let api = PostgREST(pathPrefix: "/api/")
        #expect(api.table(of: DataRequest(method: "GET", path: "/api/notes?id=eq.7")) == "notes")
        #expect(api.table(of: DataRequest(method: "GET", path: "/rest/v1/notes")) == nil)
        #expect(api.callsFunction(DataRequest(method: "POST", path: "/api/rpc/archive")))
        #expect(!api.callsFunction(DataRequest(method: "POST", path: "/rest/v1/rpc/archive")))
        #expect(api.select("notes", where: [.eq("id", "7")]).path == "/api/notes?select=*&id=eq.7")
        #expect(PostgREST.select("notes").path == "/rest/v1/notes?select=*")
    }
}
