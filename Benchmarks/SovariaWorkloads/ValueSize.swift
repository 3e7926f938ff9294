/// How many bytes each written value has.
package enum ValueSize: Sendable, Equatable {
    /// Every value `bytes` long; YCSB's record is `fieldcount × fieldlength` (10 × 100 = 1,000).
    case fixed(bytes: Int)
    /// Each value's length drawn uniformly from `min...max`.
    case uniform(min: Int, max: Int)

    /// YCSB's default record: 10 fields of 100 bytes.
    package static let ycsbDefault = ValueSize.fixed(bytes: 1_000)

    /// The longest value.
    package var maxBytes: Int {
        switch self {
        case .fixed(let bytes): bytes
        case .uniform(_, let max): max
        }
    }

    /// The next value's length.
    @inline(__always)
    package func next(using random: inout WorkloadRandom) -> Int {
        switch self {
        case .fixed(let bytes):
            return bytes
        case .uniform(let min, let max):
            return min + Int(random.next(below: UInt64(max - min) + 1))
        }
    }
}
