/// Where a native `withValue` keeps `body`'s result between the engine's read, which calls `body`
/// with the borrowed bytes, and the return: raw memory of the result's size, written once and
/// moved out once.
///
/// A captured `Result?`, or a buffer typed `Result`, made the runtime look up the metadata of a
/// type built on `Result` on every read: called through `any OfflineStore`, `withValue` is not
/// specialized, and those lookups were a fifth of an LMDB read. This type is not generic, only its
/// methods, which are inlined: a public type (in a module that is not a product), as Swift does
/// not inline an `@inlinable` member of a `package` type in another module.
///
/// ```swift
/// let slot = ResultSlot(for: Result.self)
/// defer { slot.free() }
/// guard try engine.visitValue(key, { slot.store(try body($0)) }) else { return nil }
/// return slot.take(Result.self)
/// ```
public struct ResultSlot {
    @usableFromInline let memory: UnsafeMutableRawPointer

    /// Room for one `Result`.
    @inlinable @inline(__always)
    package init<Result>(for type: Result.Type) {
        memory = .allocate(byteCount: MemoryLayout<Result>.size, alignment: MemoryLayout<Result>.alignment)
    }

    /// Keeps `value`; call once.
    @inlinable @inline(__always)
    package func store<Result>(_ value: Result) {
        memory.initializeMemory(as: Result.self, to: value)
    }

    /// Moves the value ``store(_:)`` kept out; call once, after it.
    @inlinable @inline(__always)
    package func take<Result>(_ type: Result.Type) -> Result {
        memory.assumingMemoryBound(to: Result.self).move()
    }

    /// Frees the memory (the value must have been taken, or never stored).
    @inlinable @inline(__always)
    package func free() { memory.deallocate() }
}
