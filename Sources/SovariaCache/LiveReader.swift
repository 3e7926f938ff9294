/// A reader showing a cached list, from ``QueryCache/startReading(_:)``: while it lives (up to
/// 500 of them, the seed's rule), eviction keeps its list.
public struct LiveReader: Sendable, Hashable {
    let id: String
    let token: UInt64
}
