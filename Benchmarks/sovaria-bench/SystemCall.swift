#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The system calls the bench times beside a store, under names no local value shadows (a
/// section's `open` is often its measurement), on Linux and Apple platforms alike.
enum SystemCall {
    /// `open(2)`: a descriptor, or -1.
    static func openFile(_ path: String, _ flags: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.open(path, flags)
        #else
            Darwin.open(path, flags)
        #endif
    }

    /// `read(2)` into `buffer`: the bytes read, or -1.
    static func readFile(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        #if canImport(Glibc)
            Glibc.read(descriptor, buffer.baseAddress, buffer.count)
        #else
            Darwin.read(descriptor, buffer.baseAddress, buffer.count)
        #endif
    }

    /// `close(2)`.
    static func closeFile(_ descriptor: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(descriptor)
        #else
            _ = Darwin.close(descriptor)
        #endif
    }
}
