import SovariaLMDB
import Testing

@Suite struct LMDBLibraryTests {
    @Test func linksTheSystemLibrary() {
        #expect(LMDBLibrary.version.firstMatch(of: /^\d+\.\d+(\.\d+)?$/) != nil, "\(LMDBLibrary.version)")
    }
}
