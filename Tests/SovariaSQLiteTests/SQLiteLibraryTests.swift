import SovariaSQLite
import Testing

@Suite struct SQLiteLibraryTests {
    @Test func linksTheSystemLibrary() {
        #expect(SQLiteLibrary.version.firstMatch(of: /^\d+\.\d+(\.\d+)?$/) != nil, "\(SQLiteLibrary.version)")
    }
}
