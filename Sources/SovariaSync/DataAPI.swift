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
