/// Why a local-first answer may differ from what the server answers once the pending writes
/// have synced (``LocalRead/inexactReasons``, ``OverlayAnswer/inexactReasons``). Its
/// `description` is a sentence for logs and debugging; match the cases in code.
///
/// ```swift
/// if read.inexactReasons.contains(.nothingCached) { showPlaceholder() }
/// ```
///
/// - Note: New reasons may be added: `switch` over them with a `default`.
public enum InexactReason: Sendable, Hashable, CustomStringConvertible {
    // MARK: The controller

    /// The cached answer was marked stale by a sync of an earlier run: a write synced then may
    /// not show until the answer is fetched again.
    case staleAfterEarlierSync
    /// The change feed marked the cached answer stale: changes on the server could not be
    /// applied to it exactly (<doc:ChangesFromOtherDevices>); it is fetched again at its next
    /// network-policy read.
    case staleAfterServerChanges
    /// Writes wait for the read's table, but no ``OverlayEvaluator`` is configured
    /// (``SovariaOffline/Configuration/overlay``): they are not applied.
    case noOverlayEvaluator

    // MARK: The read

    /// The read uses a feature the evaluator does not evaluate (the feature, as the query
    /// spells it).
    case unsupportedReadFeature(String)
    /// The cached answer is not a JSON array of rows.
    case cachedAnswerNotRows
    /// The read asks for an answer of another shape than rows (the API adapter's name for it,
    /// such as `Accept: text/csv`): pending writes are not applied to it.
    case answerNotRows(String)
    /// The read asks for a count of the rows, and how many rows the writes add to or take from
    /// those it matches is not known (a write may change a row no cached answer holds, or whether
    /// a row matches is not known): the count (``LocalRead/rowCount``) is the server's, before
    /// them.
    case countNotRecomputed
    /// The read filters with full-text search (`fts`, `plfts`, `phfts`, `wfts`) on `column`: only
    /// PostgreSQL's text search (its parsers, dictionaries and stemming) decides which rows match.
    case fullTextSearch(column: String)
    /// The read filters with a regular expression (`match`, `imatch`) on `column`: PostgreSQL's
    /// regular expressions are left to it.
    case regularExpression(column: String)
    /// The read filters `column` with a range type's own operator (`sl`, `sr`, `nxl`, `nxr`,
    /// `adj`): only PostgreSQL knows the range's bounds and canonical form.
    case rangeOperator(column: String)
    /// The read is one PostgREST refuses (a 400 or 416 answer): a malformed `or=`/`and=` (an
    /// empty list, unbalanced parentheses, an unknown operator), a negative `limit`, an unknown
    /// `order` modifier, an empty `select` item, a `Range` whose end is before its start (the
    /// part, as the query spells it).
    case refusedRead(String)
    /// The read asks for a count (`Prefer: count=…`) and its page starts past its rows (or they
    /// are not known): PostgREST then refuses the page (416) with the count.
    case countedPageMayBeRefused
    /// The read selects a column cast to a type whose text the overlay does not write (`::json`,
    /// `::date`…): only `::text` of text, number and boolean values and whole-number casts of
    /// integers are written exactly.
    case castNotEvaluated(String)
    /// The read compares `column`, whose values only PostgreSQL compares (a range, a date, an
    /// enum, a JSON value, an array of those): the table's configuration calls it not text.
    case columnTypeNotEvaluated(column: String)
    /// The read filters, orders or selects `column`, which is not one of the table's columns
    /// (`columns` of its configuration): a computed column, a function of the row only the
    /// server evaluates.
    case computedColumn(String)
    /// Nothing is cached for the read: only rows written offline are shown.
    case nothingCached
    /// The read has an offset: a write before its page moves the page.
    case readHasOffset
    /// The read has a limit without an order: the server picks which rows fill the page.
    case limitWithoutOrder
    /// Rows left a full page of `limit` rows: rows past the cached page could come in.
    case pageMayTakeRowsPastIt(limit: Int)
    /// The read selects every column (`select=*`) and no cached row shows them.
    case columnsUnknown
    /// A row written offline does not set these columns: the server's values are not known.
    case columnsNotSet([String])
    /// Where a row written offline goes among the others is not known (a column the read
    /// orders on is missing, or text order).
    case orderUnknown
    /// Whether a row written offline matches the read's filters is not known.
    case filterOnWrittenRowUnknown

    // MARK: The writes

    /// A pending write (`method`, `path`) calls a function or writes another table, and may
    /// change this one.
    case writeOutsideTable(method: String, path: String)
    /// A pending write with limit, offset or order changes rows the evaluator cannot pick.
    case writeWithLimitOrOrder(method: String)
    /// A pending write uses features the evaluator does not evaluate.
    case unsupportedWriteFeature(method: String, features: [String])
    /// A pending write with this method is not evaluated.
    case methodNotEvaluated(String)
    /// A pending insert's body is not a JSON object or array of objects.
    case insertBodyNotObjects
    /// A pending bulk insert's rows set different columns: the server fills the gaps with nulls.
    case bulkInsertColumnsDiffer
    /// A pending update's body is not a JSON object.
    case updateBodyNotObject
    /// An upsert is pending and the read does not select the primary key: which cached row it
    /// changes is not known.
    case upsertTargetUnknown(primaryKey: String)
    /// A pending insert's primary key (as JSON text) is taken: the server will refuse it.
    case insertKeyTaken(primaryKey: String, key: String)
    /// A pending insert sets no primary key: the server assigns it.
    case insertWithoutKey(primaryKey: String)
    /// A pending write gives a row the key of another: the server will refuse it.
    case keyTakenByAnotherRow
    /// A pending `ignore-duplicates` insert's key may be one the server holds: it would be
    /// skipped.
    case insertMayBeSkipped
    /// A pending update's filter cannot be evaluated on a row the answer holds.
    case updateFilterUnknown
    /// A pending update sets these columns (that the read filters or orders on) on rows the
    /// cache may not hold, which could enter the answer.
    case updateMayBringRowsIn(columns: [String])
    /// A pending delete's filter cannot be evaluated on a row the answer holds.
    case deleteFilterUnknown
    /// A row in the answer may have been removed by a pending delete the evaluator cannot
    /// evaluate.
    case rowMayBeDeleted
    /// A pending write sets this column to a string the server reads as another type, or
    /// refuses.
    case stringInTypedColumn(String)

    /// A reason an evaluator of another API gives, in its own words.
    case other(String)

    /// The reason as a sentence.
    public var description: String {
        switch self {
        case .staleAfterEarlierSync:
            "the cached answer is stale: a write synced before this run may not show until it is fetched again"
        case .staleAfterServerChanges:
            "the cached answer is stale: changes on the server could not be applied to it, it is fetched again next"
        case .noOverlayEvaluator: "pending writes are not applied: no overlay evaluator is configured"
        case .unsupportedReadFeature(let feature): "the read uses \(feature), which the overlay does not evaluate"
        case .cachedAnswerNotRows: "the cached answer is not a JSON array of rows"
        case .answerNotRows(let shape): "the read asks for \(shape), not rows: pending writes are not applied to it"
        case .countNotRecomputed:
            "the count kept with the answer is the server's, before the pending writes: how many rows they add or "
                + "remove is not known"
        case .fullTextSearch(let column): "the read uses full-text search on \(column): only PostgreSQL decides"
        case .regularExpression(let column):
            "the read matches \(column) with a regular expression: only PostgreSQL decides"
        case .rangeOperator(let column):
            "the read uses a range type's operator on \(column): only PostgreSQL decides"
        case .refusedRead(let part): "PostgREST refuses the read (\(part)): only the server answers it"
        case .countedPageMayBeRefused:
            "the read asks for a count and its page may start past its rows: PostgREST refuses such a page"
        case .castNotEvaluated(let cast): "the read casts \(cast), whose text the overlay does not write"
        case .columnTypeNotEvaluated(let column):
            "the read compares \(column), whose values only PostgreSQL compares (a range, a date, an enum…)"
        case .computedColumn(let column): "the read uses \(column), a computed column only the server evaluates"
        case .nothingCached: "nothing is cached for this read: only rows written offline are shown"
        case .readHasOffset:
            "the read has an offset: a write before its page (even to a row it does not show) moves the page"
        case .limitWithoutOrder: "the read has a limit without an order: the server picks which rows fill the page"
        case .pageMayTakeRowsPastIt(let limit):
            "rows left a full page of \(limit): rows past the cached page could come in"
        case .columnsUnknown: "select=* with no cached row: the table's columns are not known"
        case .columnsNotSet(let columns):
            "a row written offline does not set \(columns.joined(separator: ", ")): the server's values are not known"
        case .orderUnknown:
            "the order of a row written offline among the others is not known (a column it orders on is missing, "
                + "or text order)"
        case .filterOnWrittenRowUnknown: "whether a row written offline matches the read's filters is not known"
        case .writeOutsideTable(let method, let path):
            "a pending \(method) \(path) (a function call, or another table) may change this table"
        case .writeWithLimitOrOrder(let method):
            "a pending \(method) with limit, offset or order changes rows the overlay cannot pick"
        case .unsupportedWriteFeature(let method, let features):
            "a pending \(method) uses \(features.joined(separator: ", ")), which the overlay does not evaluate"
        case .methodNotEvaluated(let method): "a pending \(method) is not evaluated"
        case .insertBodyNotObjects: "a pending POST's body is not a JSON object or array of objects"
        case .bulkInsertColumnsDiffer:
            "a pending bulk insert's rows set different columns: the server fills the gaps with nulls"
        case .updateBodyNotObject: "a pending PATCH's body is not a JSON object"
        case .upsertTargetUnknown(let primaryKey):
            "the read does not select \(primaryKey): which cached row an upsert changes is not known"
        case .insertKeyTaken(let primaryKey, let key):
            "a pending insert's \(primaryKey) \(key) is taken: the server will refuse it"
        case .insertWithoutKey(let primaryKey): "a pending insert sets no \(primaryKey): the server assigns it"
        case .keyTakenByAnotherRow: "a pending write gives a row the key of another: the server will refuse it"
        case .insertMayBeSkipped:
            "a pending ignore-duplicates insert's key may be one the server holds: it would be skipped"
        case .updateFilterUnknown: "a pending PATCH's filter cannot be evaluated on a row the answer holds"
        case .updateMayBringRowsIn(let columns):
            "a pending PATCH sets \(columns.joined(separator: ", ")) on rows the cache may not hold, which could "
                + "enter the answer"
        case .deleteFilterUnknown: "a pending DELETE's filter cannot be evaluated on a row the answer holds"
        case .rowMayBeDeleted:
            "a row in the answer may have been removed by a pending DELETE the overlay cannot evaluate"
        case .stringInTypedColumn(let column):
            "a pending write sets \(column) to a string the server reads as another type, or refuses"
        case .other(let text): text
        }
    }
}
