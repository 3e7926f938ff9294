import SovariaPlumbing

/// The UTF-8 check and copy every engine's read makes of the bytes it stored, for the benchmark's
/// scan floor (`sovaria-bench`, in the Benchmarks package). SPI, not API: the check itself stays
/// package in SovariaPlumbing, which the Benchmarks package cannot import.
@_spi(Benchmarks) public enum UTF8BytesFloor {
    /// The text of `bytes`, or `nil` when they are not valid UTF-8, made as an engine's read makes
    /// it (inlined, so the benchmark calls the engines' own function and nothing more).
    @inlinable public static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        String(validatingUTF8Bytes: bytes)
    }
}
