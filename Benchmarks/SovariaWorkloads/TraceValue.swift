/// The bytes a replay writes for a value: the same in Swift and in the C replayer, so every
/// engine stores identical bytes, and different from one write to the next (SQLite may skip a
/// row rewritten with the bytes it holds, which would flatter it).
package enum TraceValue {
    /// `count` bytes of `a`…`z` repeated, starting at letter `index % 26`, where `index` is the
    /// write's position in its trace (its record's, counting from 0; a batch's writes share it).
    package static func bytes(count: Int, index: UInt64) -> [UInt8] {
        let start = Int(index % 26)
        return (0..<count).map { UInt8(ascii: "a") + UInt8((start + $0) % 26) }
    }
}
