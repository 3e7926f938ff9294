import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaSQLite
import SovariaTestKit
import SovariaWorkloads
import Testing

/// `sovaria-c-replay` (Benchmarks/c-baseline/sovaria_c_replay.c) against the Swift engines: the
/// program named by `SOVARIA_C_REPLAY`, or else compiled here from the source with the system C
/// compiler, so `make test` needs no `make c-baseline` first and always checks today's source.
@Suite(.serialized) struct CReplayTests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The replayer: SOVARIA_C_REPLAY, or compiled once per test run into the Benchmarks
    /// package's build folder (each run's replaces the last).
    static let program: Result<String, Error> = Result {
        if let path = ProcessInfo.processInfo.environment["SOVARIA_C_REPLAY"] { return path }
        let build = packageRoot.appendingPathComponent(".build", isDirectory: true)
        try FileManager.default.createDirectory(at: build, withIntermediateDirectories: true)
        let output = build.appendingPathComponent("sovaria-c-replay-tests").path
        let (status, _, errors) = try run(
            "/usr/bin/env",
            [
                "cc", "-O2", "-std=c11", "-Wall", "-Werror", "-o", output,
                packageRoot.appendingPathComponent("c-baseline/sovaria_c_replay.c").path,
                "-lsqlite3", "-llmdb", "-lleveldb", "-lm",
            ])
        guard status == 0 else { throw CompileFailure(message: errors) }
        return output
    }

    struct CompileFailure: Error { var message: String }

    static func run(_ executable: String, _ arguments: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: outputData, as: UTF8.self),
            String(decoding: errorData, as: UTF8.self)
        )
    }

    /// A small trace that uses every operation, an invalid key, a batch refused whole, and both phases.
    static let trace: [TraceRecord] = {
        var operations: [TraceOperation] = [.phase(.load)]
        for index in 0..<40 { operations.append(.insert(key: key(index), valueBytes: 10 + index)) }
        operations.append(.phase(.run))
        operations += [
            .read(key: key(3)), .read(key: key(999)), .update(key: key(4), valueBytes: 100), .delete(key: key(5)),
            .batch([.update(key: key(1), valueBytes: 7), .insert(key: key(100), valueBytes: 8), .delete(key: key(2))]),
            .scan(prefix: "t:", after: key(10), limit: 5), .scan(prefix: "t:", after: nil, limit: 3),
            .keys(prefix: "t:"), .readModifyWrite(key: key(6), valueBytes: 33),
            .fetch(key: key(200), valueBytes: 64), .fetch(key: key(3), valueBytes: 64),
            .update(key: "", valueBytes: 5),  // invalid: fails, writes nothing
            .batch([.insert(key: key(300), valueBytes: 1), .delete(key: String(repeating: "x", count: 512))]),
            .compact, .read(key: key(100)), .update(key: key(7), valueBytes: 0),
        ]
        return operations.enumerated().map { TraceRecord(nanoseconds: UInt64($0.offset) * 1000, operation: $0.element) }
    }()

    static func key(_ index: Int) -> String { "t:" + String(format: "%03d", index) }

    /// What the trace replays as through an `OfflineStore`: the Swift side of the comparison.
    static func replay(_ records: [TraceRecord], on store: any OfflineStore) async {
        for (position, record) in records.enumerated() {
            func value(_ count: Int) -> String {
                String(decoding: TraceValue.bytes(count: count, index: UInt64(position)), as: UTF8.self)
            }
            switch record.operation {
            case .read(let key): _ = try? await store.get(key)
            case .update(let key, let size), .insert(let key, let size): try? await store.set(key, value(size))
            case .delete(let key): try? await store.delete(key)
            case .scan(let prefix, let after, let limit):
                _ = try? await store.entries(prefix, after: after, limit: limit)
            case .readModifyWrite(let key, let size):
                do {  // the set follows a get that did not fail, found or not
                    _ = try await store.get(key)
                    try? await store.set(key, value(size))
                } catch {}
            case .keys(let prefix): _ = try? await store.keys(prefix)
            case .batch(let writes):
                try? await store.write(
                    writes.map {
                        switch $0 {
                        case .update(let key, let size), .insert(let key, let size): .set(key: key, value: value(size))
                        case .delete(let key): .delete(key: key)
                        default: preconditionFailure()
                        }
                    })
            case .fetch(let key, let size):
                do {
                    if try await store.get(key) == nil { try? await store.set(key, value(size)) }
                } catch {}
            case .compact: try? await store.compact()
            case .phase: break
            }
        }
    }

    static func contents(of store: any OfflineStore) async throws -> [StoreEntry] {
        try await store.entries("t:", after: nil, limit: 10_000)
    }

    enum Engine: String, CaseIterable {
        case sqlite, lmdb, leveldb

        func open(_ folder: URL) throws -> any OfflineStore {
            switch self {
            case .sqlite: try SQLiteOfflineStore(fileURL: folder.appendingPathComponent("store.sqlite"))
            case .lmdb: try LMDBOfflineStore(directory: folder)
            case .leveldb: try LevelDBOfflineStore(directory: folder)
            }
        }
    }

    @Test(arguments: Engine.allCases)
    func leavesTheStoreTheSwiftEngineLeaves(_ engine: Engine) async throws {
        let program = try Self.program.get()
        let folder = try TemporaryFolder()
        let tracePath = folder.child("trace.sovtrace").path
        let writer = try TraceWriter(path: tracePath)
        for record in Self.trace { try writer.append(record) }
        try writer.close()

        let (status, output, errors) = try Self.run(
            program, [engine.rawValue, folder.child("c").path, tracePath, "--durability", "flushed"])
        try #require(status == 0, "\(errors)")
        let swiftFolder = folder.child("swift")
        try FileManager.default.createDirectory(at: swiftFolder, withIntermediateDirectories: true)
        do {
            let store = try engine.open(swiftFolder)
            await Self.replay(Self.trace, on: store)
        }
        let fromC = try await Self.contents(of: engine.open(folder.child("c")))
        let fromSwift = try await Self.contents(of: engine.open(swiftFolder))
        #expect(fromC.count == 40 + 2 - 2)  // 40 loaded, t:100 and t:200 added, t:002 and t:005 deleted
        #expect(fromC == fromSwift)

        // The JSON lines: one per phase and kind, plus "all" per phase and the trace line.
        let lines = try output.split(separator: "\n").map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        func line(_ phase: String, _ operation: String) -> [String: Any]? {
            lines.first { $0["phase"] as? String == phase && $0["operation"] as? String == operation }
        }
        var expected: [String: (count: Int, failures: Int, misses: Int)] = [:]
        for record in Self.trace.drop(while: { $0.operation != .phase(.run) }) {
            let kind: String
            switch record.operation {
            case .read: kind = "read"
            case .update: kind = "update"
            case .insert: kind = "insert"
            case .delete: kind = "delete"
            case .scan: kind = "scan"
            case .readModifyWrite: kind = "readModifyWrite"
            case .keys: kind = "keys"
            case .batch: kind = "batch"
            case .fetch: kind = "fetch"
            case .compact: kind = "compact"
            case .phase: continue
            }
            expected[kind, default: (0, 0, 0)].count += 1
        }
        expected["update"]!.failures = 1
        expected["batch"]!.failures = 1
        expected["read"]!.misses = 1
        expected["fetch"]!.misses = 1
        for (kind, figures) in expected {
            let found = try #require(line("run", kind), "no line for \(kind)")
            #expect(found["count"] as? Int == figures.count, "\(kind)")
            #expect(found["failures"] as? Int == figures.failures, "\(kind)")
            #expect(found["misses"] as? Int == figures.misses, "\(kind)")
            let p50 = try #require(found["p50Nanoseconds"] as? Int)
            let p99 = try #require(found["p99Nanoseconds"] as? Int)
            let max = try #require(found["maxNanoseconds"] as? Int)
            #expect(p50 <= p99 && p99 <= max && max > 0)
            #expect(found["engine"] as? String == engine.rawValue && found["durability"] as? String == "flushed")
        }
        #expect(line("load", "insert")?["count"] as? Int == 40)
        #expect(line("load", "all")?["count"] as? Int == 40)
        #expect(line("run", "all")?["count"] as? Int == expected.values.map(\.count).reduce(0, +))
        let summary = try #require(lines.first { $0["line"] as? String == "trace" })
        #expect(summary["records"] as? Int == Self.trace.count)
        #expect(summary["ignoredTrailingBytes"] as? Int == 0)
    }

    @Test func ignoresATruncatedLastRecordAndRefusesABadHeader() throws {
        let program = try Self.program.get()
        let folder = try TemporaryFolder()
        let tracePath = folder.child("trace.sovtrace").path
        let writer = try TraceWriter(path: tracePath)
        for record in Self.trace.prefix(5) { try writer.append(record) }
        try writer.close()
        let whole = try Data(contentsOf: URL(fileURLWithPath: tracePath))
        try whole.dropLast(3).write(to: URL(fileURLWithPath: tracePath))
        let (status, output, _) = try Self.run(program, ["sqlite", folder.child("c").path, tracePath])
        #expect(status == 0)
        #expect(output.contains(#""records":4,"#) && output.contains(#""ignoredTrailingBytes":"#))
        #expect(output.contains(#""phase":"load","operation":"insert","count":3,"#))

        try Data("SOVTRAXE".utf8 + [1, 0, 0, 0, 0, 0, 0, 0]).write(to: URL(fileURLWithPath: tracePath))
        let (badStatus, _, errors) = try Self.run(program, ["sqlite", folder.child("d").path, tracePath])
        #expect(badStatus == 1 && errors.contains("bad header at byte 6"))
        try Data("SOVTRACE".utf8 + [1, 0, 0, 0, 0, 0, 0, 0, 42]).write(to: URL(fileURLWithPath: tracePath))
        let (opcodeStatus, _, opcodeErrors) = try Self.run(program, ["sqlite", folder.child("e").path, tracePath])
        #expect(opcodeStatus == 1 && opcodeErrors.contains("unknown opcode 42 at byte 16"))
    }
}
