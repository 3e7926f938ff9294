/// PostgREST's syntax taken apart at its ASCII delimiters (`&`, `=`, `.`, `,`, `:`, `->`) by
/// their bytes. PostgREST reads code points: a `.` a combining mark follows is still a `.` to it,
/// where Swift's `Character` would make the two one character and walk past the delimiter (or,
/// dropping "four characters", drop the mark with it). An ASCII byte is always a scalar's
/// boundary, so each index found here is a valid `Substring` index.
extension Substring {
    /// The index of the first `byte` (an ASCII byte), or `nil`.
    func firstIndex(ofByte byte: UInt8) -> Index? {
        utf8.firstIndex(of: byte)
    }

    /// Whether its UTF-8 bytes start with `prefix`'s.
    func startsWithBytes(of prefix: String) -> Bool {
        utf8.starts(with: prefix.utf8)
    }

    /// Whether its UTF-8 bytes end with `suffix`'s.
    func endsWithBytes(of suffix: String) -> Bool {
        utf8.count >= suffix.utf8.count && utf8.suffix(suffix.utf8.count).elementsEqual(suffix.utf8)
    }

    /// Without its first `count` UTF-8 bytes (an ASCII prefix's, so the rest starts at a scalar).
    func droppingFirstBytes(_ count: Int) -> Substring {
        Substring(utf8.dropFirst(count))
    }

    /// Without its last `count` UTF-8 bytes (an ASCII suffix's).
    func droppingLastBytes(_ count: Int) -> Substring {
        Substring(utf8.dropLast(count))
    }

    /// What follows the ASCII byte at `index`: the next byte on, not the next `Character`.
    func after(byteAt index: Index) -> Substring {
        self[utf8.index(after: index)...]
    }

    /// The parts between each `byte` (an ASCII byte).
    func split(atByte byte: UInt8, omittingEmptyParts: Bool) -> [Substring] {
        utf8.split(separator: byte, omittingEmptySubsequences: omittingEmptyParts).map(Substring.init)
    }

    /// The range of the first run of `text`'s bytes (ASCII), or `nil`.
    func range(ofBytes text: String) -> Range<Index>? {
        let needle = Array(text.utf8)
        var start = utf8.startIndex
        while start != utf8.endIndex {
            if utf8[start...].starts(with: needle) {
                return start..<utf8.index(start, offsetBy: needle.count)
            }
            start = utf8.index(after: start)
        }
        return nil
    }
}
