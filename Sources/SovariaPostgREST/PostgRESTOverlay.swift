import SovariaQueue
import SovariaSync

/// PostgREST's rules for local-first reads: applies a table's pending writes to a cached answer
/// and evaluates the read's own query on the result, as PostgREST and PostgreSQL would.
///
/// - `POST` inserts the body's object or array of objects; with
///   `Prefer: resolution=merge-duplicates` it upserts by primary key, with `ignore-duplicates`
///   it skips rows whose key exists.
/// - `PATCH ?<filters>` merges the body into the rows that match; `DELETE ?<filters>` removes them.
/// - Then the read's filters (`eq neq gt gte lt lte in is like ilike isdistinct`, each with
///   `not.`, `op(any)`/`op(all)` over a list, `cs cd ov` and the order of array columns), its
///   `or=`/`and=` trees (nested, with `not.`), its `order` (several columns, `asc`/`desc`,
///   `nullsfirst`/`nullslast`), `limit`/`offset` and a `Range` header's page, and its `select`
///   (columns, `alias:column`, `::text` and whole-number casts, JSON paths). Numbers compare by
///   value, booleans as PostgreSQL's, text by its bytes under ``TextOrder/bytes``.
/// - For a read that asks for a count (`Prefer: count=exact`), how many rows the writes bring
///   into its filters or take out of them, over every page (`OverlayAnswer.rowCountChange`): known
///   when each row a write touches is held (the cached answer, a related answer, or a new key an
///   insert adds) and the filters decide it, and no write can move a row not held into or out of
///   them: a delete that may reach a row not held (unless the rows held are every row that
///   matches), or an update that sets a filter column on one (unless they are every row of the
///   table), leaves it unknown.
/// - With nothing cached for the read, a related answer that holds every row of the table (no
///   filter, no full page) is the table: the read is evaluated over its rows, pending writes
///   applied (a synced write waiting for a refetch makes it inexact).
/// - A read of one row as an object (`Accept: application/vnd.pgrst.object+json`) is evaluated
///   as its rows, then answered as the one row, or refused as PostgREST refuses it (406,
///   `PGRST116`, in `OverlayAnswer.refusal`) when the rows are not one. A read of any other shape
///   (`text/csv`, `nulls=stripped`) is never evaluated as rows: its cached answer, inexact.
///
/// ```swift
/// var configuration = SovariaOffline.Configuration(api: PostgREST())
/// configuration.overlay = PostgRESTOverlay(
///     tables: ["notes": .init(primaryKey: "id", defaults: ["done": "false"])], textOrder: .bytes)
/// ```
///
/// - Important: An answer is exact only when it is what the server will answer once the writes
///   sync. It is not, and says why, when: a pending `PATCH` could change rows the cache does not
///   hold so that they enter the answer; a row leaves a cached page that has a `limit` (rows past
///   it could come in); a read or write uses what the overlay does not evaluate (embedded
///   resources, RPC, casts it cannot write, full-text search, regular expressions, range
///   operators, computed columns); a row written offline lacks a column the read
///   selects, filters or orders on (a server default); text order under a collation the overlay
///   does not know; a write sends a string to a number or boolean column that PostgreSQL may
///   read otherwise or refuse (`"10"` and `"t"` are read as 10 and `true`); a filter's number
///   has a fraction or an exponent on a column that may be an integer one; nothing is cached.
///   Such an answer still shows what is known.
public struct PostgRESTOverlay: OverlayEvaluator {
    /// What the overlay knows of one table.
    public struct Table: Sendable, Hashable {
        /// The primary key column: upserts and `PATCH`/`DELETE` by key find rows by it.
        public var primaryKey: String
        /// The table's column defaults as JSON text (`["done": "false"]`): what a row inserted
        /// offline holds in the columns it does not set. Defaults the server computes
        /// (`now()`, `current_user`) cannot be known: leave them out.
        public var defaults: [String: String]
        /// Every column of the table, in its order: what `select=*` shows of a row written
        /// offline when no cached row says. `nil`: learnt from the cached rows.
        public var columns: [String]?
        /// Columns that hold the same value (JSON text) in every row the user sees: under
        /// row-level security, `["owner": "\"alice\""]`. A row an upsert may have merged into,
        /// which the overlay has not seen, is known to hold them.
        public var sameInEveryRow: [String: String]
        /// Columns whose JSON value is a string but whose type is not text (`timestamptz`,
        /// `uuid`, an enum): two spellings of one value may differ (`Z` and `+00:00`, letter
        /// case), and their order is not the text's, so the overlay only trusts equal strings
        /// there and calls anything else unknown. Every other string column is taken for text.
        public var nonTextColumns: Set<String>

        /// A table keyed by `primaryKey`, with `defaults`, and if given its `columns` and the
        /// columns that are the same in every row.
        public init(
            primaryKey: String = "id", defaults: [String: String] = [:], columns: [String]? = nil,
            sameInEveryRow: [String: String] = [:], nonTextColumns: Set<String> = []
        ) {
            self.nonTextColumns = nonTextColumns
            self.primaryKey = primaryKey
            self.defaults = defaults
            self.columns = columns
            self.sameInEveryRow = sameInEveryRow
        }
    }

    /// How the database orders text (its collation).
    public enum TextOrder: Sendable, Hashable {
        /// By the UTF-8 bytes: PostgreSQL's `C` collation (and `C.UTF-8`).
        case bytes
        /// A collation the overlay does not know: an answer whose rows or filters depend on text
        /// order (`order=title`, `title=gt.m`) is inexact. Equality is exact under any
        /// deterministic collation.
        case unknown
    }

    /// The tables the overlay knows; any other is keyed by `id`, with no defaults.
    public var tables: [String: Table] { didSet { parsedAnswers = ParsedAnswers() } }
    /// How the database orders text. Default: ``TextOrder/unknown``.
    public var textOrder: TextOrder { didSet { parsedAnswers = ParsedAnswers() } }
    /// The API adapter that names the table of a read and of each write; give the one the
    /// controller has (`SovariaOffline.Configuration.api`). Default: `PostgREST()`.
    public var api: PostgREST { didSet { parsedAnswers = ParsedAnswers() } }
    /// The cached answers the change feed's pages and the live queries' sessions parsed, each
    /// table's answers grouped by what can reach them, kept for the next page
    /// (``changesThatCanAlter(versioned:among:)``), and each read's parsed query, for pages and
    /// local-first answers alike; a new one whenever the configuration above changes.
    private(set) var parsedAnswers = ParsedAnswers()

    /// Whether an answer a change feed's page rewrites is kept parsed for the next page, from
    /// the rows the evaluation wrote. Default: `true`; the bench turns it off to measure what it
    /// saves in the same run.
    @_spi(Benchmarks) public var keepsRewrittenParses = true

    /// Whether the answers a change feed's page must parse (an app just launched meets every
    /// cached answer of the table unparsed) are spread over the device's cores when there are
    /// many. Default: `true`; the bench turns it off to measure a launch's catch-up on one core
    /// in the same run.
    @_spi(Benchmarks) public var parsesOnEveryCore = true

    /// An overlay for the tables in `tables`, with the database's text order, on the API `api`.
    public init(tables: [String: Table] = [:], textOrder: TextOrder = .unknown, api: PostgREST = PostgREST()) {
        self.tables = tables
        self.textOrder = textOrder
        self.api = api
    }

    /// Applies `writes` (oldest first) to `cachedBody` and evaluates `read` on the result; the
    /// rows of `related` answers (the table's other cached answers) tell what the cached body
    /// leaves out.
    public func answer(
        _ read: DataRequest, cachedBody: String?, writes: [OverlayWrite], related: [RelatedAnswer] = []
    ) -> OverlayAnswer {
        switch api.answerShape(of: read) {
        case .rows:
            let isChange = { (write: OverlayWrite) in if case .change = write.effect { true } else { false } }
            // A change feed's page: the body it writes is parsed for the next page from the rows
            // the evaluation wrote (a page rewrites each answer it alters, and the next page
            // would parse it again).
            if keepsRewrittenParses, related.isEmpty, let cachedBody, !writes.isEmpty, writes.allSatisfy(isChange) {
                return parsedAnswers.rewrite(
                    read, body: cachedBody, parse: { cachedAnswer(of: read, cachedBody: cachedBody, related: []) }
                ) { cached in
                    cached.answerAndParse(writes: writes, pageRows: parsedAnswers.pageRows(of: cached.readTable))
                }
            }
            // The parse a change feed's page or a live query's session made of this body, if one did.
            if related.isEmpty, let cachedBody, let kept = parsedAnswers.kept(read, body: cachedBody) {
                // And the rows of its changes, parsed by the same page.
                let rows = writes.contains(where: isChange) ? parsedAnswers.pageRows(of: kept.readTable) : [:]
                return kept.answer(writes: writes, pageRows: rows)
            }
            return cachedAnswer(of: read, cachedBody: cachedBody, related: related).answer(writes: writes)
        case .singleRow:
            let rows = cachedAnswer(of: read, cachedBody: SingleRowAnswer.rows(of: cachedBody), related: related)
            return SingleRowAnswer.answer(from: rows.answer(writes: writes), cachedBody: cachedBody)
        case .other(let shape):
            return OverlayAnswer(body: cachedBody, inexactReasons: [.answerNotRows(shape)])
        }
    }

    /// `read` over `cachedBody` and `related`, parsed: its query, its table's rules, the rows.
    /// `mergesMovedRows: false` sorts every row where a write moved one (tests compare both).
    func cachedAnswer(
        of read: DataRequest, cachedBody: String?, related: [RelatedAnswer], mergesMovedRows: Bool = true
    ) -> OverlayCachedAnswer {
        let readTable = api.table(of: read)
        let table = readTable.flatMap { tables[$0] } ?? Table()
        let query = parsedAnswers.query(of: read)
        return OverlayCachedAnswer(
            query: query, api: api, readTable: readTable, table: table,
            comparison: PostgRESTComparison(
                textOrderIsBytes: textOrder == .bytes, nonTextColumns: table.nonTextColumns),
            cachedBody: cachedBody, related: related, countsRows: api.countsRows(read), mergesMovedRows: mergesMovedRows
        )
    }
}
