#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A string as a dictionary key that is equal and hashed by its UTF-8 bytes (`String` itself
/// merges canonically equivalent forms), without copying the bytes into an array.
struct ExactKey: Hashable {
    let string: String

    static func == (lhs: ExactKey, rhs: ExactKey) -> Bool {
        guard lhs.string.utf8.count == rhs.string.utf8.count else { return false }
        var left = lhs.string
        var right = rhs.string
        return left.withUTF8 { leftBytes in
            right.withUTF8 { rightBytes in
                guard let leftStart = leftBytes.baseAddress, let rightStart = rightBytes.baseAddress else {
                    return leftBytes.isEmpty
                }
                return memcmp(leftStart, rightStart, leftBytes.count) == 0
            }
        }
    }

    func hash(into hasher: inout Hasher) {
        var copy = string
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
