import SovariaSodium
import Testing

@Suite struct SodiumLibraryTests {
    @Test func linksTheSystemLibrary() {
        #expect(SodiumLibrary.version.firstMatch(of: /^\d+\.\d+(\.\d+)?$/) != nil, "\(SodiumLibrary.version)")
    }
}
