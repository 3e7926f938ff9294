import Foundation
import SovariaQueue

/// The API adapter: what a controller needs to know of the data API's dialect to name a
/// request's table and row, check a write against the row's version, and read its answers.
///
/// ``SovariaOffline`` sends requests as they are and knows no path or header of any server; it
/// asks its ``SovariaOffline/Configuration/api`` instead. `PostgREST` (module `SovariaPostgREST`)
/// is the adapter of a PostgREST API.
///
/// - Important: Conforming types must be thread safe: the controller calls them from any task.
///   Every method is a pure function of its arguments.
public protocol DataAPI: Sendable {
    /// The table `request` reads or writes, percent-decoded; `nil` for a path that names none,
    /// including a function call (which may change any table).
    func table(of request: DataRequest) -> String?

    /// The request headers that shape `request`'s answer, as ``ReadIdentity`` keeps them: two
    /// reads of one method and path share a cached answer only when these are equal. Leave out
    /// a header whose value asks for the default answer (so it shares the plain read's), and
    /// those that do not change the answer (`Authorization`, `If-None-Match`).
    ///
    /// By default, none: an API that shapes answers by headers must name them.
    func answerShapingHeaders(of request: DataRequest) -> [ReadIdentity.Header]

    /// The names of the response headers a reader needs beside the body, kept with the cached
    /// answer (`CachedResponse.headers`, in ``LocalRead/response``). By default, none.
    var keptResponseHeaders: [String] { get }

    /// How the answer to `request` is shaped: rows the overlay may evaluate, one row as an
    /// object, or a shape it must leave alone. By default, rows.
    func answerShape(of request: DataRequest) -> AnswerShape

    /// Whether `request`'s answer carries a count of the rows in a kept response header, which
    /// pending writes and the change feed's changes would leave wrong: such an answer is called
    /// inexact when pending writes change it, and fetched again rather than brought up to date
    /// by the feed. By default, `false`.
    func countsRows(_ request: DataRequest) -> Bool

    /// The count of the rows a counted read matches, from its answer's kept response headers
    /// (PostgREST: the total of `Content-Range`); `nil` when they carry none. By default, `nil`.
    func rowCount(in headers: [String: String]) -> Int?

    /// Whether `request`'s answer may be a page of the rows it matches (a limit, an offset, a
    /// requested range), so that its count covers rows it does not show. By default, `true`.
    func pagesRows(_ request: DataRequest) -> Bool

    /// Whether `request` calls a function of the API, which may change any table.
    func callsFunction(_ request: DataRequest) -> Bool

    /// Whether `request` (an insert) merges into the rows whose primary key exists (an upsert).
    func mergesDuplicates(_ request: DataRequest) -> Bool

    /// The value `path`'s query requires `column` to equal, decoded; `nil` when it has no such
    /// filter.
    func equalValue(of column: String, in path: String) -> String?

    /// Whether `path`'s query filters on `column`, with any operator.
    func filters(on column: String, in path: String) -> Bool

    /// `path` without its filters on `column`.
    func removingFilters(on column: String, from path: String) -> String

    /// `path` with its filters on `column` replaced by one requiring `column` to equal `value`.
    func settingFilter(on column: String, equalTo value: String, in path: String) -> String

    /// `request` (an update or delete) asking the server to answer with the rows it changed.
    func askingForRows(_ request: DataRequest) -> DataRequest

    /// The read of the rows `write` targets: its filters less those on `column`, its headers less
    /// those that only a write carries.
    func readingRows(of write: DataRequest, without column: String) -> DataRequest

    /// The number of rows a write's answer says it touched; `nil` when the answer does not say.
    func rowsTouched(by response: DataResponse) -> Int?

    /// A decoder for the API's JSON answers.
    func makeDecoder() -> JSONDecoder
}

extension DataAPI {
    /// None.
    public func answerShapingHeaders(of request: DataRequest) -> [ReadIdentity.Header] { [] }

    /// None.
    public var keptResponseHeaders: [String] { [] }

    /// ``AnswerShape/rows``.
    public func answerShape(of request: DataRequest) -> AnswerShape { .rows }

    /// `false`.
    public func countsRows(_ request: DataRequest) -> Bool { false }

    /// `nil`.
    public func rowCount(in headers: [String: String]) -> Int? { nil }

    /// `true`.
    public func pagesRows(_ request: DataRequest) -> Bool { true }
}

/// How a read's answer is shaped, as the API adapter reads the request
/// (``DataAPI/answerShape(of:)``).
public enum AnswerShape: Sendable, Hashable {
    /// A JSON array of rows: the overlay evaluates it.
    case rows
    /// One row as a JSON object (PostgREST's `Accept: application/vnd.pgrst.object+json`,
    /// supabase's `.single()`): the server refuses the read when the rows are not exactly one.
    case singleRow
    /// Anything else (CSV, stripped nulls, a plan): never evaluated as rows; the name says what.
    case other(String)
}
