/// A reader showing a cached list, from ``QueryCache/startReading(_:)``: while it lives (up to
/// ``QueryCache/maxProtectedLists`` of them), eviction keeps its list.
public struct LiveReader: Sendable, Hashable {
    let id: String
    let token: UInt64
}
