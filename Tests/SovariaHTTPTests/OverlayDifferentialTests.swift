import Foundation
import Sovaria
import SovariaQueue
import SovariaSync
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaHTTP
@testable import SovariaPostgREST
@_spi(Diagnostics) @testable import SovariaSync

/// The overlay's specification is PostgreSQL itself: random reads cached online, random writes
/// made offline, each read answered by the overlay; then the flush, and the same reads asked of
/// the real server (Tests/Server over PostgreSQL). Every answer the overlay called exact must
/// be the server's: the same rows, the same values, the same order where `order` decides it. Every
/// count not called unknown (`countNotRecomputed`), in an exact answer or not, must be the
/// server's `Content-Range` total.
///
/// Each argument has a server and a database of its own: the arguments run side by side.
@Suite struct OverlayDifferentialTests {
    /// A store for one run, and which cases it runs (the overlay is the same code on every
    /// engine: most cases run on memory, in three runs, a few on each other one).
    struct Engine: Sendable, CustomStringConvertible {
        let engine: TestEngine
        /// The cases' indexes: each index is one case, the same in every run (its seed).
        let cases: Range<Int>
        /// Whether each case's first read is the list of every row, as most apps have: the other
        /// reads then learn every row from it. Without it, many more answers are inexact (rows
        /// no answer holds), and only their correctness is checked.
        var withListScreen = true
        /// Whether the engine's cases are split over several runs (the name then tells which).
        var isPart = false
        var name: String { engine.name }
        var description: String {
            let store = withListScreen ? name : name + " without a list screen"
            return isPart ? "\(store), cases \(cases.lowerBound)–\(cases.upperBound - 1)" : store
        }

        /// The standard engines and encrypted SQLite: memory runs most cases (300 in three runs
        /// with a list screen, 100 without), each other store 25.
        static let all: [Engine] = TestEngine.standard(durability: .flushed, including: .encrypted).flatMap {
            engine in
            engine.name == TestEngine.memory.name
                ? [0..<100, 100..<200, 200..<300].map { Engine(engine: engine, cases: $0, isPart: true) }
                    + [Engine(engine: engine, cases: 0..<100, withListScreen: false)]
                : [Engine(engine: engine, cases: 0..<25)]
        }
    }

    @Test(arguments: Engine.all)
    func everyAnswerCalledExactIsTheServersAfterTheFlush(engine: Engine) async throws {
        let server = try await RESTServer.start()
        let transport = SwitchableTransport(
            URLSessionTransport(
                baseURL: server.baseURL, apiKey: "test-anon-key", tokens: TestTokens(), configuration: .testServer))
        var tally = Tally()
        for index in engine.cases {
            // A fixed seed per case: a failure names the case, and the case is the same each run.
            var random = SplitMix(seed: UInt64(index) &* 0x9E37_79B9 &+ UInt64(engine.name.utf8.count))
            let generated = DifferentialCase.generate(
                index: index, withListScreen: engine.withListScreen, using: &random)
            try await run(generated, engine: engine, server: server, transport: transport, tally: &tally)
        }
        let answers = tally.exact + tally.inexact
        // One print: the runs go side by side, and their lines would interleave.
        var report =
            "overlay differential on \(engine): \(engine.cases.count) cases, \(answers) answers, \(tally.exact) exact, "
            + "\(tally.inexact) inexact, \(tally.skipped) cases skipped (a write the server refused)\n"
        for (reason, count) in tally.reasons.sorted(by: { $0.value > $1.value }) { report += "  \(count)× \(reason)\n" }
        report += "  counts: \(tally.countedPages) of pages checked, \(tally.countedLists) of lists\n"
        report +=
            "  sessions: \(tally.paths.made) made, \(tally.paths.appended) appended (\(tally.paths.updated) derived "
            + "from the last answer), \(tally.paths.rebuilt) rebuilt"
        print(report)
        #expect(tally.skipped * 10 <= engine.cases.count, "the generator makes writes the server takes")
        if engine.withListScreen {
            #expect(tally.inexact * 10 <= answers, "at most a tenth of the answers inexact")
        }
        #expect(tally.exact > 0)
        #expect(tally.countedPages > 0, "a page's count moved by the writes was checked")
        // Both paths ran: answers that applied only the appended write, and answers that applied
        // every write again (after the flush, the synced writes are no longer pending).
        #expect(tally.paths.appended > 0)
        #expect(tally.paths.updated > 0)
        #expect(tally.paths.rebuilt > 0)
    }

    struct Tally {
        var paths = OverlayPaths()
        var exact = 0
        var inexact = 0
        var skipped = 0
        var reasons: [InexactReason: Int] = [:]
        /// The counts of pages and of lists checked (those not called unknown).
        var countedPages = 0
        var countedLists = 0
    }

    static let overlay = PostgRESTOverlay(
        tables: [
            // `owner` defaults to the current user on the server: the app knows who that is.
            "items": .init(
                primaryKey: "id",
                defaults: ["owner": #""alice""#, "qty": "0", "active": "true", "note": "null", "rank": "null"],
                columns: ["id", "owner", "name", "qty", "active", "note", "rank"],
                // Row-level security: every row Alice sees is hers.
                sameInEveryRow: ["owner": #""alice""#])
        ],
        textOrder: .bytes)

    /// What one case showed: the answers the overlay called exact and those it did not (with
    /// their reasons), whether a write was refused, and every exact answer the server contradicts.
    struct Outcome {
        var exact = 0
        var inexactReasons: [[InexactReason]] = []
        var refused = false
        var paths = OverlayPaths()
        var mismatches: [(read: DataRequest, overlay: String?, server: String)] = []
        var countedPages = 0
        var countedLists = 0
    }

    private func run(
        _ generated: DifferentialCase, engine: Engine, server: RESTServer, transport: SwitchableTransport,
        tally: inout Tally
    ) async throws {
        let outcome = try await check(generated, engine: engine, server: server, transport: transport)
        if outcome.refused {
            tally.skipped += 1
            return
        }
        tally.exact += outcome.exact
        tally.countedPages += outcome.countedPages
        tally.countedLists += outcome.countedLists
        tally.paths.made += outcome.paths.made
        tally.paths.appended += outcome.paths.appended
        tally.paths.rebuilt += outcome.paths.rebuilt
        tally.paths.updated += outcome.paths.updated
        tally.inexact += outcome.inexactReasons.count
        for reasons in outcome.inexactReasons { for reason in reasons { tally.reasons[reason, default: 0] += 1 } }
        guard let first = outcome.mismatches.first else { return }
        // Printed minimally: the writes that do not matter to the failing read are dropped.
        let minimal = try await shrink(
            generated, failing: first.read, engine: engine, server: server, transport: transport)
        let shown =
            try await check(minimal, engine: engine, server: server, transport: transport).mismatches.first {
                $0.read == first.read
            } ?? first
        Issue.record(
            """
            case \(generated.index) on \(engine.name): the overlay called its answer (or its count) exact, the server \
            differs \
            (\(minimal.writes.count) of \(generated.writes.count) writes kept, the others do not matter to it)
              seed rows: \(minimal.seedJSON)
              cached reads: \(minimal.reads.map(\.path))
              writes:\n\(minimal.writes.map { "    \($0.method) \($0.path) \($0.body ?? "")" }.joined(separator: "\n"))
              read: \(shown.read.path)
              overlay: \(shown.overlay ?? "nil")
              server:  \(shown.server)
            """)
    }

    /// `generated` without every write whose removal keeps `failing` wrong, one at a time.
    private func shrink(
        _ generated: DifferentialCase, failing: DataRequest, engine: Engine, server: RESTServer,
        transport: SwitchableTransport
    ) async throws -> DifferentialCase {
        var current = generated
        var index = 0
        while index < current.writes.count {
            var writes = current.writes
            writes.remove(at: index)
            let smaller = DifferentialCase(
                index: current.index, seedJSON: current.seedJSON, reads: current.reads, writes: writes)
            let outcome = try await check(smaller, engine: engine, server: server, transport: transport)
            if !outcome.refused, outcome.mismatches.contains(where: { $0.read == failing }) {
                current = smaller
            } else {
                index += 1
            }
        }
        return current
    }

    private func check(
        _ generated: DifferentialCase, engine: Engine, server: RESTServer, transport: SwitchableTransport
    ) async throws -> Outcome {
        transport.isOffline = false
        let (status, body) = try await server.control("POST", "/_test/reset")
        try #require(status == 200, "reset: \(body)")
        let seeded = try await transport.send(
            PostgREST.insert(into: "items", json: generated.seedJSON, returning: false))
        try #require(seeded.isSuccess, "seed: \(seeded.status) \(seeded.body)")

        let folder = try TemporaryFolder()
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.memoryPressure = nil  // the machine's own pressure must not shed caches mid-test
        configuration.overlay = Self.overlay
        configuration.timer = ManualTimer()
        let offline = try await SovariaOffline(
            store: try await engine.engine.open(folder.url), transport: transport, configuration: configuration)
        for read in generated.reads { _ = try await offline.read(read) }

        transport.isOffline = true
        for write in generated.writes {
            guard case .queued = try await offline.write(write) else {
                Issue.record("an offline write was not queued")
                return Outcome(refused: true)
            }
            // After each write: the session's answer (this write applied alone) is the fresh one.
            for read in generated.reads { try await expectSessionAnswersFresh(read, offline, generated) }
        }
        var local: [LocalRead] = []
        for read in generated.reads { local.append(try await offline.read(read, policy: .cacheOnly)) }

        transport.isOffline = false
        let synced = try await offline.flush()
        // The synced writes stay in the answers until a refetch, no longer pending: every write
        // is applied again.
        for read in generated.reads { try await expectSessionAnswersFresh(read, offline, generated) }
        let paths = offline.sessions.paths
        // An update or delete that matched no row changed nothing, in the overlay as on the
        // server: only a refusal makes the case one the overlay cannot be checked on.
        let unmatched = try await offline.rejectedWrites().filter { $0.reason == .noMatchingRow }.count
        await offline.close()
        guard synced + unmatched == generated.writes.count else { return Outcome(refused: true) }
        var outcome = Outcome(paths: paths)
        for (read, answer) in zip(generated.reads, local) {
            // A count not called unknown is the server's, whatever else the answer is unsure of.
            let countIsKnown =
                PostgREST().countsRows(read) && answer.rowCount != nil
                && !answer.inexactReasons.contains(.countNotRecomputed)
            if answer.isExact { outcome.exact += 1 } else { outcome.inexactReasons.append(answer.inexactReasons) }
            guard answer.isExact || countIsKnown else { continue }
            let truth = try await transport.send(read)
            try #require(truth.isSuccess, "\(read.path): \(truth.status) \(truth.body)")
            let ordered = PostgRESTQuery(path: read.path).order.contains { $0.column == "id" }
            if answer.isExact, !(try Self.same(answer.body, truth.body, ordered: ordered)) {
                outcome.mismatches.append((read, answer.body, truth.body))
            }
            guard countIsKnown else { continue }
            if PostgREST().pagesRows(read) { outcome.countedPages += 1 } else { outcome.countedLists += 1 }
            let count = PostgREST().rowCount(in: truth.headers)
            if answer.rowCount != count {
                let (mine, theirs) = (answer.rowCount.map(String.init) ?? "nil", count.map(String.init) ?? "nil")
                outcome.mismatches.append((read, "count " + mine, "count " + theirs))
            }
        }
        return outcome
    }

    /// The answer to `read` through the overlay's session is the one a fresh evaluation of the
    /// same cached answer and writes gives: body, reasons in order, pending rows, all of it.
    private func expectSessionAnswersFresh(
        _ read: DataRequest, _ offline: SovariaOffline, _ generated: DifferentialCase
    ) async throws {
        let server = try await offline.readThroughCache(read, policy: .cacheOnly, maxAge: nil)
        let session = try await offline.overlaid(read, on: server)
        let fresh = try await offline.overlaid(read, on: server, fresh: true)
        #expect(
            session == fresh,
            """
            case \(generated.index): the session's answer differs from a fresh evaluation
              read: \(read.path)
              session: \(session.body ?? "nil") \(session.inexactReasons)
              fresh:   \(fresh.body ?? "nil") \(fresh.inexactReasons)
            """)
    }

    /// Whether both bodies hold the same rows (in the same order when `ordered`), values
    /// compared as PostgreSQL's JSON (1.0 is 1; key order is free).
    static func same(_ overlay: String?, _ server: String, ordered: Bool) throws -> Bool {
        guard let overlay, case .array(let mine) = try JSONParser.parse(overlay),
            case .array(let theirs) = try JSONParser.parse(server), mine.count == theirs.count
        else { return false }
        if ordered { return zip(mine, theirs).allSatisfy { $0.isEquivalent(to: $1) } }
        var remaining = theirs
        for row in mine {
            guard let match = remaining.firstIndex(where: { $0.isEquivalent(to: row) }) else { return false }
            remaining.remove(at: match)
        }
        return true
    }
}

/// A transport that goes offline on demand, with the server still up: writes queue, reads fall
/// back to the cache.
final class SwitchableTransport: SyncTransport {
    let inner: any SyncTransport
    private let offline = Mutex(false)

    init(_ inner: any SyncTransport) { self.inner = inner }

    var isOffline: Bool {
        get { offline.withLock { $0 } }
        set { offline.withLock { $0 = newValue } }
    }

    func send(_ request: DataRequest) async throws -> DataResponse {
        if isOffline { throw SyncTransportError.offline("switched off by the test") }
        return try await inner.send(request)
    }
}
