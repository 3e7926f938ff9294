import Foundation
import Sovaria
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import SovariaTestServers

/// A live query's answer on device B after device A's write, over the test server
/// (Tests/Server, PostgreSQL with `ChangeFeed.sql`) on loopback: B follows `notes` with a long
/// poll (the server holds the request until the commit's `NOTIFY`) and with a poll every second.
/// Timed from A's write call (sent at once, committed when it returns) to B's answer showing it;
/// beside it, A's write alone.
struct ChangeFeedLatency {
    let options: BenchOptions

    /// Alice's token on the test server.
    struct Alice: AccessTokenProvider {
        func accessToken() async throws -> String? { "token-alice" }
        func refreshAccessToken() async throws {}
    }

    static let list = PostgREST.select("notes", columns: "id,title", order: "id")

    func run() async throws -> [Measurement] {
        let section = BenchSection.changeFeed.rawValue
        let server: RESTServer
        do {
            server = try await RESTServer.start()
        } catch {
            var row = Sample(perItemNanoseconds: [], callLatencies: []).measurement(
                section: section, subject: "test server", variant: "", operation: "live query after a commit")
            row.note = "not measured: the test server did not start (\(error))"
            return [row]
        }
        defer { Task { try? await server.stop() } }
        let calls = options.pick(quick: 4, standard: 12, full: 40)
        let writer = try await device(server, folder: "a", follow: false, poll: .seconds(1))
        _ = try await writer.write(
            PostgREST.insert(into: "notes", json: #"{"id":"n1","title":"v0"}"#, returning: false))
        var rows: [Measurement] = []
        var writes: [Double] = []
        for (mode, poll) in [("long poll", Duration.milliseconds(10)), ("poll every 1 s", Duration.seconds(1))] {
            let reader = try await device(server, folder: mode, follow: true, poll: poll, waits: mode == "long poll")
            var answers = reader.observe(Self.list, policy: .cacheFirstThenNetwork).makeAsyncIterator()
            _ = try await answers.next()
            var version = 0
            let latencies = try await Stopwatch.latenciesAfterWarmUp(calls: calls) { _ in
                version += 1
                let title = "\(mode) \(version)"
                let start = Stopwatch.now()
                _ = try await writer.write(
                    PostgREST.update("notes", where: [.eq("id", "n1")], json: #"{"title":"\#(title)"}"#))
                writes.append(Double(Stopwatch.now() - start))
                while let answer = try await answers.next(), answer.body?.contains(title) != true {}
                return Stopwatch.now() - start
            }
            await reader.close()
            var row = Sample(
                perItemNanoseconds: [latencies.reduce(0, +) / Double(max(1, calls))], callLatencies: latencies
            )
            .measurement(
                section: section, subject: "test server", variant: mode,
                operation: "live query: A's write to B's answer")
            row.note = "p50 goal with a long poll: 50 ms"
            rows.append(row)
        }
        for followsAtOpen in [true, false] {
            rows.append(
                try await firstEditAfterLaunch(
                    server, writer: writer, launches: calls, followsAtOpen: followsAtOpen, later: rows.first))
        }
        await writer.close()
        var write = Sample(
            perItemNanoseconds: [writes.reduce(0, +) / Double(max(1, writes.count))], callLatencies: writes
        )
        .measurement(section: section, subject: "test server", variant: "", operation: "A's write alone")
        write.note = "the floor: the write's own round trip and commit"
        for index in rows.indices where rows[index].baseline == nil {
            rows[index].ratio = rows[index].p50Nanoseconds / max(1, write.p50Nanoseconds)
            rows[index].baseline = "A's write alone"
        }
        return rows + [write]
    }

    /// The first edit a newly opened device sees: B opens with the defaults (poll every second,
    /// long poll of 20 s), shows the list (fetched, as a new device has nothing cached), and A
    /// writes at once; timed from A's write to B's answer, one launch per call. Its ratio is against `later`, the long poll's later edits.
    /// Without `followsAtOpen`, following starts at the timer's first tick (the behaviour before
    /// ``SovariaOffline/Configuration/feedFollowsAtOpen``).
    private func firstEditAfterLaunch(
        _ server: RESTServer, writer: SovariaOffline, launches: Int, followsAtOpen: Bool, later: Measurement?
    ) async throws -> Measurement {
        var latencies: [Double] = []
        for launch in 0..<launches {
            let reader = try await device(
                server, folder: "launch \(launch)", follow: true, poll: .seconds(1), waits: true,
                followsAtOpen: followsAtOpen)
            var answers = reader.observe(Self.list, policy: .cacheFirstThenNetwork).makeAsyncIterator()
            // B shows the list: its first answer with a body (a new device's first is the empty
            // cache's, before the fetch; A writing then would race B's own load, not its feed).
            try await Self.next(&answers) { $0.body != nil }
            let title = "launch \(launch)"
            let start = Stopwatch.now()
            _ = try await writer.write(
                PostgREST.update("notes", where: [.eq("id", "n1")], json: #"{"title":"\#(title)"}"#))
            try await Self.next(&answers) { $0.body?.contains(title) == true }
            latencies.append(Double(Stopwatch.now() - start))
            await reader.close()
        }
        var row = Sample(
            perItemNanoseconds: [latencies.reduce(0, +) / Double(max(1, launches))], callLatencies: latencies
        )
        .measurement(
            section: BenchSection.changeFeed.rawValue, subject: "test server",
            variant: followsAtOpen
                ? "first edit after launch" : "first edit after launch, following from the first tick",
            operation: "live query: A's write to B's answer")
        if let later {
            row.ratio = row.p50Nanoseconds / max(1, later.p50Nanoseconds)
            row.baseline = "a later edit (long poll)"
        }
        row.note = followsAtOpen ? "goal: p50 within 2x a later edit's" : "before feedFollowsAtOpen"
        return row
    }

    /// Waits for the live query's next answer that `shows`; a stream that ends first fails the
    /// row rather than timing nothing.
    private static func next(
        _ answers: inout LiveQuery.Iterator, _ shows: (LocalRead) -> Bool
    ) async throws {
        while let answer = try await answers.next() {
            if shows(answer) { return }
        }
        throw BenchError.failed("the live query ended before its answer")
    }

    /// A controller on a memory store talking HTTP to `server` as alice; following `notes` every
    /// `poll` when `follow`, long-polling when `waits`.
    private func device(
        _ server: RESTServer, folder: String, follow: Bool, poll: Duration, waits: Bool = false,
        followsAtOpen: Bool = true
    ) async throws -> SovariaOffline {
        let transport = URLSessionTransport(baseURL: server.baseURL, apiKey: "test-anon-key", tokens: Alice())
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.memoryPressure = nil
        configuration.overlay = PostgRESTOverlay(
            tables: ["notes": .init(primaryKey: "id", defaults: ["done": "false"])], textOrder: .bytes)
        if follow {
            configuration.changeFeed = PostgRESTChangeFeed(transport: transport)
            configuration.followedTables = ["notes"]
            configuration.feedPollInterval = poll
            configuration.feedWait = waits ? .seconds(20) : .zero
            configuration.feedFollowsAtOpen = followsAtOpen
        }
        return try await SovariaOffline(store: MemoryOfflineStore(), transport: transport, configuration: configuration)
    }
}
