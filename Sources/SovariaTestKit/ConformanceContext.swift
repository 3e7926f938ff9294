import Foundation
import Sovaria

/// What a check works with: fresh folders and stores, and assertions that throw a
/// ``ConformanceFailure``.
public final class ConformanceContext: Sendable {
    /// The factory under test.
    public let factory: StoreFactory
    let checkName: String
    private let root: URL

    init(factory: StoreFactory, checkName: String) throws {
        self.factory = factory
        self.checkName = checkName
        root = FileManager.default.temporaryDirectory
            .appendingPathComponent("sovaria-conformance-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    deinit { removeFolder(at: root) }

    /// A new, empty folder that no other store uses.
    public func makeFolder() throws -> URL {
        let folder = root.appendingPathComponent(UUID().uuidString, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// A fresh store in a folder of its own; returns the folder too, for reopening.
    public func makeStore() async throws -> (store: any OfflineStore, folder: URL) {
        let folder = try makeFolder()
        return (try await factory.open(folder), folder)
    }

    /// A failure of this check with `message`.
    public func failure(_ message: String) -> ConformanceFailure {
        ConformanceFailure(check: checkName, store: factory.name, message: message)
    }

    /// Throws a failure with `message` unless `condition` holds.
    public func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw failure(message()) }
    }

    /// Throws unless `actual` has the same UTF-8 bytes as `expected` (`String ==` would accept
    /// a different normalization).
    public func expectBytes(_ actual: String?, _ expected: String?, _ what: @autoclosure () -> String) throws {
        let same = actual.map { Array($0.utf8) } == expected.map { Array($0.utf8) }
        try expect(same, "\(what()): expected \(Self.show(expected)), got \(Self.show(actual))")
    }

    /// Throws unless `actual` lists the same keys, byte for byte and in the same order.
    public func expectKeys(_ actual: [String], _ expected: [String], _ what: @autoclosure () -> String) throws {
        let actualBytes = actual.map { Array($0.utf8) }
        let expectedBytes = expected.map { Array($0.utf8) }
        guard actualBytes != expectedBytes else { return }
        if max(actual.count, expected.count) <= 20 {
            throw failure("\(what()): expected \(expected.map(Self.show)), got \(actual.map(Self.show))")
        }
        let index =
            zip(actualBytes, expectedBytes).enumerated().first { $1.0 != $1.1 }?.offset
            ?? min(actual.count, expected.count)
        throw failure(
            "\(what()): expected \(expected.count) keys, got \(actual.count); first difference at index \(index): "
                + "expected \(Self.show(index < expected.count ? expected[index] : nil)), "
                + "got \(Self.show(index < actual.count ? actual[index] : nil))")
    }

    /// Throws unless `body` throws an `OfflineStoreError` with `code`.
    public func expectError(
        _ code: OfflineStoreError.Code, _ what: @autoclosure () -> String, _ body: () async throws -> Void
    ) async throws {
        do {
            try await body()
        } catch let error as OfflineStoreError {
            try expect(error.code == code, "\(what()): expected error \(code), got \(error)")
            return
        } catch {
            throw failure("\(what()): expected OfflineStoreError \(code), got \(type(of: error)): \(error)")
        }
        throw failure("\(what()): expected error \(code), but the call succeeded")
    }

    /// A short, unambiguous rendering of a string: its scalars, escaped.
    static func show(_ value: String?) -> String {
        guard let value else { return "nil" }
        guard value.unicodeScalars.count <= 40 else { return "<\(value.utf8.count) bytes>" }
        let scalars = value.unicodeScalars.map { scalar in
            (0x20..<0x7F).contains(scalar.value) && scalar != "\\" && scalar != "\""
                ? String(scalar) : "\\u{\(String(scalar.value, radix: 16))}"
        }
        return "\"" + scalars.joined() + "\""
    }
}
