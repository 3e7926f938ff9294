import SovariaLevelDB
import Testing

@Suite struct LevelDBLibraryTests {
    @Test func linksTheSystemLibrary() {
        #expect(LevelDBLibrary.version.firstMatch(of: /^\d+\.\d+(\.\d+)?$/) != nil, "\(LevelDBLibrary.version)")
    }
}
